"""The issue's "done when" on the official dev sets (skipped without them), with a real browser: `klue
leaderboard init --demo` over NLI, STS, NER and DP, `serve`, one team submitting with `klue submit` (and the
API for its other tasks), the admin through chromium (Selenium: log in, upload); the board ranks them with
intervals, says how they stand, gives a KLUE score to the team with every task, and shows nothing private
before `reveal` and the private ranking after it. (The browser on a synthetic site, which runs without the
dev sets: test_service.py.)
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import browser, log_in, upload, wait_text  # noqa: F401  # browser: the fixture, by name
from live_site import LiveServer, LiveSite, klue

from cli_in_process import klue_in_process

pytestmark = [pytest.mark.slow, pytest.mark.longest, pytest.mark.realdata]

TASKS = ("nli", "sts", "ner", "dp")


def _scoring_case_jsonl(klue_dir: Path, shared_dir: Path, out: Path) -> list[Path]:
    """The scoring cases' NLI predictions for the official dev set (JSON lists in gold order) as JSON Lines
    by guid, the shape every prediction writer of klue writes."""
    from klue import registry
    from klue.predictions import read_predictions
    from klue.tasks.reading import read

    task = registry.get("nli")
    gold = read(task, klue_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json", None, purpose="score").records
    guids = [task.guid(r) for r in gold]
    files = []
    for source in sorted((shared_dir / "scoring-cases" / "nli").glob("pred_*.json.gz"))[:2]:
        by_guid, _, _ = read_predictions(task, source, guids, None)
        target = out / source.name.replace(".json.gz", ".jsonl")
        target.write_text("".join(json.dumps(task.prediction_to_json(by_guid[g])) + "\n" for g in guids),
                          encoding="utf-8")
        files.append(target)
    return files


def _near_gold(task_name: str, gold: Path, out: Path, seed: int) -> Path:
    """The gold answers as predictions, STS scores moved a little (so its interval has a width); NER, DP exact."""
    from klue import registry
    from klue.tasks.reading import read

    task = registry.get(task_name)
    rng = random.Random(seed)
    with out.open("w", encoding="utf-8") as handle:
        for record in read(task, gold, None, purpose="score").records:
            obj = {"guid": task.guid(record), **task.prediction_to_json(task.gold_prediction(record))}
            if task_name == "sts":
                obj["score"] = min(5.0, max(0.0, obj["score"] + rng.gauss(0, 0.5)))
            handle.write(json.dumps(obj, ensure_ascii=False) + "\n")
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path,
         shared_data_dir: Path) -> Iterator[tuple[LiveServer, str, list[Path], dict[str, Path]]]:
    from klue import registry

    golds = {name: klue_data_dir / registry.get(name).file("dev").path for name in TASKS}  # type: ignore[union-attr]
    missing = [name for name, path in golds.items() if not path.is_file()]
    if missing:
        pytest.skip(f"the {', '.join(missing)} dev set(s) are not under {klue_data_dir}")
    base = tmp_path_factory.mktemp("demo-site")
    done = klue("leaderboard", "init", str(base / "site"), "--demo", "--data-dir", str(klue_data_dir))
    password = re.search(r"user admin, password (\S+)", done.stdout)
    assert password, done.stdout
    for task in TASKS:  # every task whose official dev set is on hand
        assert f"  {task}: gold " in done.stdout, done.stdout
    site = LiveSite(base / "site")
    site.add_user("jiwoo", "서울대 NLP")
    files = _scoring_case_jsonl(klue_data_dir, shared_data_dir, base)
    # Two web processes: chromium keeps idle preconnected sockets, and gunicorn's one sync process would wait
    # on one of them (the pages' next request then times out).
    server = LiveServer(site, workers=2, scorers=1).start()
    try:
        yield server, password[1], files, golds
    finally:
        server.stop()


def test_demo_site_on_the_official_dev_sets(demo: tuple[LiveServer, str, list[Path], dict[str, Path]],
                                            browser: Any, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    server, password, (cli_file, browser_file), golds = demo
    token = server.site.tokens["jiwoo"]
    # In this process (tests/cli_in_process.py): what is tested is the command's answer, not its process.
    sent = klue_in_process("submit", "--server", server.url, "--task", "nli", "--predictions", str(cli_file), "--name",
                           "cli-model", "--wait", environ={**os.environ, "KLUE_TOKEN": token})
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert re.search(r"public nli score \d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\] \(95% interval", sent.stdout), sent.stdout
    ids = {}
    for task in ("sts", "ner", "dp"):  # the team's other tasks through the API: a KLUE score needs every task
        answer = server.submit(token, _near_gold(task, golds[task], tmp_path / f"{task}.jsonl", 1), task=task)
        assert answer.status_code == 201, answer.text
        ids[task] = answer.json()["id"]

    log_in(browser, server.url, "admin", password)
    upload(browser, server.url, "nli", "browser-model", browser_file)
    assert wait_text(browser, "#status", "scored") == "scored"
    done = server.wait_scored(token, ids.values(), timeout=600)
    assert all(answer["status"] == "scored" for answer in done.values()), done
    ner = done[ids["ner"]]["scores"]
    assert ner["task_score"] == pytest.approx(100.0) and ner["n_examples"] > 2000  # half of the 5,000 dev sentences

    board = server.get("/api/leaderboard").json()
    assert set(board["public"]["tasks"]) == set(TASKS)
    rows = board["public"]["tasks"]["nli"]
    assert sorted(r["name"] for r in rows) == ["browser-model", "cli-model"]
    assert rows[0]["rank"] == 1 and all(r["interval"][0] <= r["score"] <= r["interval"][1] for r in rows)
    assert rows[1]["relation"] and rows[1]["p_value"] is not None
    (entry,) = board["public"]["klue"]  # only jiwoo's team has every task
    assert entry["team"] == "서울대 NLP" and entry["interval"][0] <= entry["score"] <= entry["interval"][1]
    task_page = server.get("/api/tasks/nli").json()
    assert {"accuracy", "macro_f1"} <= set(task_page["public"][0]["scores"])
    assert "private" not in board and "private" not in task_page
    browser.get(server.url + "/")
    assert "Private ranking" not in browser.find_element(By.TAG_NAME, "body").text
    browser.save_screenshot(str(tmp_path / "demo-board.png"))  # for a person to look at

    klue("leaderboard", "reveal", str(server.site.root))
    revealed = server.get("/api/leaderboard").json()
    assert revealed["revealed"] is True and len(revealed["private"]["tasks"]["nli"]) == 2
    browser.get(server.url + "/")
    assert "Private ranking (revealed)" in browser.find_element(By.TAG_NAME, "body").text
