"""Own data from the command line: `--train/--eval` (protocol `files`, formats told from the files), a
`datasets` copy in the hub's label order, `klue data export --format hf` read back, `classic` in `klue train`,
and `klue benchmark` on one task's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_in_process import Done, klue_in_process
from klue import registry

HUB_NLI_ORDER = ("entailment", "neutral", "contradiction")  # klue/klue's ClassLabel order, not the official one


def klue(*args: str, cwd: Path | None = None) -> Done:
    """In this process (tests/cli_in_process.py): what is tested is the files each command reads and writes,
    and a subprocess would load sklearn and Kiwi again for every command."""
    return klue_in_process(*args, cwd=cwd)


def results_of(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def small_korsts(shared_data_dir: Path, out: Path, n_train: int = 1000, n_dev: int = 300) -> Path:
    """The header and first pairs of the real KorSTS train and dev files, under their own names in `out`: the
    formats and paths of the real files at a fraction of the baseline's CPU."""
    out.mkdir(parents=True)
    for name, n in (("sts-train.tsv", n_train), ("sts-dev.tsv", n_dev)):
        with (shared_data_dir / "korean" / "korsts" / name).open(encoding="utf-8", newline="") as handle:
            lines = [line for _, line in zip(range(n + 1), handle)]
        (out / name).write_text("".join(lines), encoding="utf-8", newline="")
    return out


@pytest.mark.slow
@pytest.mark.realdata
def test_train_classic_on_korsts_files_with_formats_told(shared_data_dir: Path, tmp_path: Path) -> None:
    korsts = small_korsts(shared_data_dir, tmp_path / "korsts")
    run = klue("train", "--task", "sts", "--model", "classic", "--train", "korsts/sts-train.tsv", "--eval",
               "korsts/sts-dev.tsv", "--output", str(tmp_path / "run"), cwd=korsts.parent)
    assert run.returncode == 0, run.stderr[-3000:]
    results = results_of(tmp_path / "run")
    assert results["protocol"] == "files" and results["protocol_official"] is False
    assert "korsts format, told from the file" in results["protocol_description"]
    used = {s["used_as"].split(" ")[0]: s for s in results["data_sources"]}
    assert used["eval"]["path"].endswith("sts-dev.tsv") and used["eval"]["n_examples"] == results["n_eval"]
    assert used["train"]["n_examples"] == results["n_train"] and used["train"]["git_blob"]
    assert results["model"] == "classic" and 0 < results["scores"]["pearsonr"] <= 100


def _hub_order_copy(dev: Path, out: Path) -> Path:
    """The NLI dev file as a `datasets` copy whose label column uses the hub's order (labels by index)."""
    from klue.errors import ProblemLog
    from klue.io import hf

    task = registry.get("nli")
    records = task.read(dev, ProblemLog(str(dev)))
    layout = task.hf_layout()
    spec = {k: hf.Labels(HUB_NLI_ORDER) if isinstance(v, hf.Labels) else v for k, v in layout.features.items()}
    dataset = hf.dataset_from_rows(layout.to_rows(records), spec)
    assert dataset.features["label"].names == list(HUB_NLI_ORDER)
    dataset.save_to_disk(str(out))
    return out


@pytest.mark.slow
@pytest.mark.realdata
def test_nli_from_a_hub_ordered_copy_and_from_an_export_scores_as_the_official_file(
        klue_data_dir: Path, tmp_path: Path) -> None:
    # The first 601 pairs of the real dev file (whole premises), in the official layout: a fifth of the file
    # proves the same label mapping at a fifth of the cost (the export has no train file to copy).
    folder = "klue-nli-v1.1"
    rows = json.loads((klue_data_dir / folder / f"{folder}_dev.json").read_text(encoding="utf-8"))
    assert rows[600]["premise"] != rows[601]["premise"]
    small = tmp_path / "data"
    (small / folder).mkdir(parents=True)
    dev = small / folder / f"{folder}_dev.json"
    dev.write_text(json.dumps(rows[:601], ensure_ascii=False), encoding="utf-8")
    hub_copy = _hub_order_copy(dev, tmp_path / "hub-copy")
    export = tmp_path / "export"
    exported = klue("data", "export", "--task", "nli", "--format", "hf", "--out", str(export), "--data-dir",
                    str(small))
    assert exported.returncode == 0, exported.stderr[-3000:]
    scores = {}
    for name, train in (("official", str(dev)), ("hub-order", str(hub_copy)), ("export", f"{export}:validation")):
        run = klue("train", "--task", "nli", "--model", "classic", "--train", train, "--eval-fraction", "0.2",
                   "--output", str(tmp_path / name))
        assert run.returncode == 0, (name, run.stderr[-3000:])
        results = results_of(tmp_path / name)
        assert results["protocol"] == "files" and 100 <= results["n_eval"] <= 140  # about 20%, whole premises
        scores[name] = (results["n_train"], results["scores"])
    assert scores["hub-order"] == scores["official"]  # labels mapped by name, not by index
    assert scores["export"] == scores["official"]
    predictions = {name: (tmp_path / name / "predictions.jsonl").read_text(encoding="utf-8") for name in scores}
    assert predictions["hub-order"] == predictions["official"] == predictions["export"]


@pytest.mark.slow
@pytest.mark.realdata
def test_benchmark_on_one_tasks_files_resumes_only_for_the_same_files(shared_data_dir: Path, tmp_path: Path) -> None:
    korsts = small_korsts(shared_data_dir, tmp_path / "korsts")
    train = tmp_path / "mine.tsv"  # a name that tells nothing: the content says KorSTS
    train.write_bytes((korsts / "sts-train.tsv").read_bytes())
    args = ["benchmark", "--model", "classic", "--train", str(train), "--eval", str(korsts / "sts-dev.tsv"),
            "--out", str(tmp_path / "bench"), "--jobs", "0"]
    refused = klue(*args)  # --tasks defaults to all: files belong to one task
    assert refused.returncode == 2 and "name one task's files" in refused.stderr
    run = klue(*args, "--tasks", "sts")
    assert run.returncode == 0, run.stderr[-3000:]
    results = results_of(tmp_path / "bench" / "sts" / "classic" / "seed1")
    assert results["protocol"] == "files" and results["n_eval"] == 300
    again = klue(*args, "--tasks", "sts")  # resumes: the cell is done
    assert again.returncode == 0 and "already done" in again.stderr
    with train.open("a", encoding="utf-8") as handle:  # the same path, other content
        handle.write(train.read_text(encoding="utf-8").splitlines()[1] + "\n")
    changed = klue(*args, "--tasks", "sts")
    assert changed.returncode == 2 and "changed since" in changed.stderr


@pytest.mark.slow
def test_own_data_options_need_train(tmp_path: Path) -> None:
    run = klue("train", "--task", "nli", "--model", "classic", "--eval", "x.json", "--output", str(tmp_path / "r"))
    assert run.returncode == 2 and "--eval need --train FILE" in run.stderr
    run = klue("train", "--task", "nli", "--model", "classic", "--train", "x.json", "--output", str(tmp_path / "r"))
    assert run.returncode == 2 and "--eval-fraction" in run.stderr
    run = klue("train", "--task", "nli", "--model", "classic", "--train", "x.json", "--eval", "y.json",
               "--protocol", "official", "--output", str(tmp_path / "r"))
    assert run.returncode == 2 and "drop --protocol" in run.stderr



@pytest.mark.slow
def test_benchmark_report_to_is_checked_before_any_cell(tmp_path: Path) -> None:
    run = klue("benchmark", "--model", "classic", "--tasks", "nli", "--report-to", "comet", "--out",
               str(tmp_path / "bench"))
    assert run.returncode == 2 and "unknown tracker comet" in run.stderr
    assert not (tmp_path / "bench").exists()


def test_a_refused_train_leaves_nothing_and_names_the_format_it_tried(tmp_path: Path) -> None:
    """A `.tsv` whose name tells nothing, with one bad row: read as KorSTS (its extension's reader), refused
    with that format and the option to change it, and the --output folder the run would have made is gone."""
    header = "genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\n"
    rows = [f"main-captions\tMSRvid\t2012test\t{i:04d}\t{i % 5}.000\t문장 {i}번이다.\t문장 {i + 1}번이다.\n"
            for i in range(40)]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "train.tsv").write_text(header + "".join(rows), encoding="utf-8")
    (tmp_path / "mine" / "part2.tsv").write_text(header + "".join(rows[:5]).replace("\t3.000\t", "\thigh\t"),
                                                encoding="utf-8")
    run = klue("train", "--task", "sts", "--model", "classic", "--train", str(tmp_path / "mine" / "train.tsv"),
               "--eval", str(tmp_path / "mine" / "part2.tsv"), "--output", str(tmp_path / "runs" / "sts" / "mine"))
    assert run.returncode == 2, run.stderr[-2000:]
    assert ("part2.tsv: read as the 'korsts' format, told from the file; name another with --eval-format "
            "(official, korsts, datasets, parquet)") in run.stderr
    assert "line 5: score 'high' is not a number" in run.stderr and "invalid JSON" not in run.stderr
    assert not (tmp_path / "runs").exists()  # nothing the refused run made is left
