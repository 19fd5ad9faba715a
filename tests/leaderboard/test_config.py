"""The configuration file: every key checked, each problem with its line, unknown keys refused; `init`
refuses a bad file or a bad gold file with exit 2 and creates nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from live_site import klue, write_nli_gold

from cli_in_process import klue_in_process
from klue.errors import DataError
from klue.leaderboard.config import ModelLimits, ModelsConfig, Service, load_config
from klue.leaderboard.service import read_config


def known(name: str) -> str | None:  # stands for the registry lookup
    return {"nli": "nli", "klue-nli": "nli", "ner": "ner"}.get(name)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "leaderboard.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_full_configuration_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, "title: 수업 리더보드\ntasks:\n  NLI: {gold: dev.json, private_fraction: 0.3}\n"
                           "quota: {per_day: 3}\npublic_ranking: ladder\nfinal_submissions: 1\n"
                           "limits: {upload_mib: 8, cpu_seconds: 60}\n"
                           "service: {heartbeat_s: 0.5, lost_after_s: 3, sqlite_timeout_s: 10}\n")
    config = load_config(path, known)
    assert config.title == "수업 리더보드"
    assert [(t.name, t.gold, t.private_fraction) for t in config.tasks] == [("nli", tmp_path / "dev.json", 0.3)]
    assert (config.per_day, config.public_ranking, config.final_submissions) == (3, "ladder", 1)
    assert (config.limits.upload_mib, config.limits.cpu_seconds, config.limits.decompressed_mib) == (8, 60, 256)
    assert config.service == Service(0.5, 3.0, 10.0)
    assert Service.of(config.to_json()) == config.service  # as site.json keeps it, for the worker and /status


def test_the_model_submission_keys_are_read(tmp_path: Path) -> None:
    path = write(tmp_path, "title: t\ntasks:\n  nli: {gold: dev.json, train: tr.tsv, train_format: kornli}\n"
                           "models:\n  families: [embedding, llm]\n  executor: ray\n  ray_address: 10.0.0.1:6379\n"
                           "  limits: {wall_s: 600, cpus: 4, gpus: 0.5, memory_gb: 12}\n  seed: 3\n  shots: 2\n"
                           "model_quota: {per_week: 5}\nallow_endpoints: true\n")
    config = load_config(path, known)
    assert (config.tasks[0].train, config.tasks[0].train_format) == (tmp_path / "tr.tsv", "kornli")
    assert config.models == ModelsConfig(("embedding", "llm"), "ray", "10.0.0.1:6379", ModelLimits(600.0, 4, 0.5, 12.0), 3, 2)
    assert (config.per_week, config.allow_endpoints) == (5, True)
    assert ModelsConfig.of(config.to_json()) == config.models  # as site.json keeps it, for the worker
    plain = load_config(write(tmp_path, "title: t\ntasks:\n  nli: {gold: a.json}\n"), known)
    assert (plain.tasks[0].train, plain.models, plain.per_week, plain.allow_endpoints) == (
        None, ModelsConfig(), None, False)
    assert ModelsConfig.of({}) == ModelsConfig()  # a site made before model submissions


def test_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "title: t\ntasks:\n  nli: {gold: a.json}\n"), known)
    assert (config.per_day, config.public_ranking, config.final_submissions, config.limits.upload_mib) == (
        5, "plain", 2, 64)
    assert config.tasks[0].private_fraction == 0.5
    assert config.service == Service(heartbeat_s=2.0, lost_after_s=15.0, sqlite_timeout_s=30.0)
    assert Service.of({}) == config.service  # a site made before `service` existed


@pytest.mark.parametrize(("text", "line", "words"), [
    ("title: t\ntasks:\n  nli: {gold: a.json, privat_fraction: 0.5}\n", 3, "unknown key 'privat_fraction'"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nquota:\n  per_dya: 3\n", 5, "unknown key 'per_dya'"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nranking: ladder\n", 4, "unknown key 'ranking'"),
    ("title: t\ntasks:\n  nli: {gold: a.json, private_fraction: 1.5}\n", 3, "between 0 and 1"),
    ("title: t\ntasks:\n  nil: {gold: a.json}\n", 3, "unknown task 'nil'"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\npublic_ranking: best\n", 4, "one of plain, ladder"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nquota: {per_day: 0}\n", 4, "at least 1"),
    ("title: t\ntasks:\n  nli: {private_fraction: 0.5}\n", 3, "needs `gold`"),
    ("title: t\ntasks: [1, 2\n", 3, "not YAML"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nservice: {sqlite_timeout_s: -1}\n", 4, "positive number"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nservice: {heartbeat_s: 2, lost_after_s: 3}\n", 4, "two heartbeats"),
    ("title: t\ntasks:\n  nli: {gold: a.json, trian: b.json}\n", 3, "unknown key 'trian'"),
    ("title: t\ntasks:\n  nli: {gold: a.json, train_format: json}\n", 3, "goes with tasks.nli.train"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nmodels:\n  familes: [llm]\n", 5, "unknown key 'familes'"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nmodels: {families: [llm, gpt]}\n", 4, "some of classic, encoder"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nmodels: {executor: slurm}\n", 4, "one of local, ray"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nmodels: {ray_address: 'h:1'}\n", 4, "goes with `executor: ray`"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nmodels:\n  limits: {wall_s: 0}\n", 5, "positive number of seconds"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nmodels:\n  limits: {gpu: 1}\n", 5, "unknown key 'gpu'"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nmodels:\n  limits: {memory_gb: -2}\n", 5, "number of GB"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nmodel_quota: {per_week: 0}\n", 4, "at least 1"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nmodel_quota: {per_day: 3}\n", 4, "unknown key 'per_day'"),
    ("title: t\ntasks:\n  nli: {gold: a.json}\nallow_endpoints: sometimes\n", 4, "true or false"),
])
def test_problems_name_their_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    with pytest.raises(DataError) as caught:
        load_config(write(tmp_path, text), known)
    messages = [str(p) for p in caught.value.problems]
    assert any(f"leaderboard.yaml:line {line}:" in m and words in m for m in messages), messages


def test_every_problem_at_once(tmp_path: Path) -> None:
    with pytest.raises(DataError) as caught:
        load_config(write(tmp_path, "titel: t\ntasks:\n  nli: {gold: a.json, x: 1}\nquota: {per_day: -1}\n"), known)
    assert len(caught.value.problems) >= 4  # titel unknown, title missing, x unknown, per_day


def test_the_registry_names_the_tasks(tmp_path: Path) -> None:
    config = read_config(write(tmp_path, "title: t\ntasks:\n  klue-nli: {gold: a.json}\n"))
    assert config.tasks[0].name == "nli"  # an alias: the registry knows it


def test_init_refuses_a_bad_config_and_creates_nothing(tmp_path: Path) -> None:
    gold = tmp_path / "dev.json"
    write_nli_gold(gold, 20)
    config = write(tmp_path, f"title: t\ntasks:\n  nli: {{gold: {gold}}}\nquota: {{per_dai: 5}}\n")
    # In this process (tests/cli_in_process.py): the configuration is refused before Django is started, and the
    # subject is the exit code, the message and the directory left uncreated, not the process.
    done = klue_in_process("leaderboard", "init", str(tmp_path / "site"), "--config", str(config))
    assert done.returncode == 2
    assert "leaderboard.yaml:line 4" in done.stderr and "per_dai" in done.stderr
    assert not (tmp_path / "site").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.slow  # `klue leaderboard init` in a process of its own
def test_init_refuses_a_bad_gold_file_with_its_line(tmp_path: Path) -> None:
    gold = tmp_path / "dev.json"
    records = write_nli_gold(gold, 20)
    records[3]["gold_label"] = "maybe"
    gold.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    config = write(tmp_path, f"title: t\ntasks:\n  nli: {{gold: {gold}}}\n")
    done = klue("leaderboard", "init", str(tmp_path / "site"), "--config", str(config), check=False)
    assert done.returncode == 2, done.stderr
    assert "dev.json" in done.stderr and "maybe" in done.stderr
    assert not (tmp_path / "site").exists()


@pytest.mark.slow  # `klue leaderboard init` in a process of its own
def test_init_makes_gold_private_and_hashed(tmp_path: Path) -> None:
    gold = tmp_path / "dev.json"
    write_nli_gold(gold, 60)
    config = write(tmp_path, f"title: t\ntasks:\n  nli: {{gold: {gold}}}\n")
    klue("leaderboard", "init", str(tmp_path / "site"), "--config", str(config))
    copied = tmp_path / "site" / "gold" / "nli" / "dev.json"
    assert copied.read_bytes() == gold.read_bytes()
    assert copied.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "site" / "site.json").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "site" / "db.sqlite3").stat().st_mode & 0o777 == 0o600
    again = klue("leaderboard", "init", str(tmp_path / "site"), "--config", str(config), check=False)
    assert again.returncode == 2 and "not empty" in again.stderr
