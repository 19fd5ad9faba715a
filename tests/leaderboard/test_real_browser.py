"""A real browser on the leaderboard (issue 38, "Real parts in tests"): Debian's chromium through Selenium logs
in, uploads a prediction file through the form, and reads the score, the interval and the rank back from the
pages. A screenshot of the board is kept in the test's tmp dir (leaderboard-board.png) for a person to look at.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import browser  # noqa: F401  # the fixture, by name
from live_site import LiveServer, LiveSite, klue, write_config, write_nli_gold, write_nli_predictions

pytestmark = [pytest.mark.slow, pytest.mark.longest]

PASSWORD = "correct horse 배터리 staple"  # a test account's password
TEAM = "<script>alert('팀')</script>"  # names are escaped everywhere: a script tag is just text
INTERVAL = re.compile(r"^\[(\d+\.\d\d), (\d+\.\d\d)\]$")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Path]]:
    base = tmp_path_factory.mktemp("browser-site")
    gold = write_nli_gold(base / "nli_dev.json", 200)
    site = LiveSite.create(base / "site", write_config(base, base / "nli_dev.json", per_day=5))
    site.add_user("minji", TEAM, password=PASSWORD)
    site.add_user("rival", "경쟁팀")
    predictions = write_nli_predictions(gold, base / "browser_upload.jsonl", accuracy=0.9, seed=7)
    write_nli_predictions(gold, base / "rival.jsonl", accuracy=0.5, seed=8)
    server = LiveServer(site, workers=2, scorers=1).start()
    try:
        assert server.submit(site.tokens["rival"], base / "rival.jsonl", name="rival-model").status_code == 201
        yield server, predictions
    finally:
        server.stop()


def _wait_text(driver: Any, css: str, want: str, timeout: float = 120) -> str:
    """Reload until the element's text is `want` (the page shows the status the server had when it rendered)."""
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + timeout
    while True:
        text = str(driver.find_element(By.CSS_SELECTOR, css).text)
        if text == want or time.monotonic() > deadline:
            return text
        time.sleep(0.5)
        driver.refresh()


def test_log_in_upload_and_read_rank(served: tuple[LiveServer, Path], browser: Any,  # noqa: F811
                                     tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    server, predictions = served
    browser.get(f"{server.url}/login")
    browser.find_element(By.ID, "username").send_keys("minji")
    browser.find_element(By.ID, "password").send_keys(PASSWORD)
    browser.find_element(By.ID, "login").click()
    assert browser.current_url.endswith("/team"), browser.page_source[:2000]

    browser.get(f"{server.url}/submit")
    assert "resets at" in browser.find_element(By.TAG_NAME, "body").text  # the page says when the quota resets
    Select(browser.find_element(By.ID, "task")).select_by_value("nli")
    browser.find_element(By.ID, "name").send_keys("브라우저 모델")
    browser.find_element(By.ID, "predictions").send_keys(str(predictions))
    browser.find_element(By.ID, "send").click()
    match = re.search(r"/submissions/(\d+)$", browser.current_url)
    assert match, browser.current_url
    assert _wait_text(browser, "#status", "scored") == "scored"
    score = float(browser.find_element(By.ID, "task-score").text)
    interval = INTERVAL.match(browser.find_element(By.ID, "task-interval").text)
    assert interval and float(interval[1]) <= score <= float(interval[2])

    browser.get(server.url + "/")
    table = browser.find_element(By.CSS_SELECTOR, "h2 a[href='/tasks/nli']").find_element(
        By.XPATH, "../following-sibling::table[1]")
    rows = [[cell.text for cell in tr.find_elements(By.TAG_NAME, "td")]
            for tr in table.find_elements(By.TAG_NAME, "tr")[1:]]
    ours = next(row for row in rows if row[1] == TEAM)  # the script tag shows as text: it was escaped
    rank, shown_score, shown_interval, relation = ours[0], ours[3], ours[4], ours[5]
    assert rank == "1" and float(shown_score) == pytest.approx(score, abs=0.006)
    assert INTERVAL.match(shown_interval) and shown_interval == f"[{interval[1]}, {interval[2]}]"
    assert relation  # the row says in words how it stands against the one above
    rival = next(row for row in rows if row[1] == "경쟁팀")
    assert rival[0] == "2", rows  # 0.9 against 0.5 accuracy: separated by the paired test
    # No alert opened: the team name never ran as a script.
    assert browser.execute_script("return document.querySelectorAll('td.team script').length") == 0
    browser.save_screenshot(str(tmp_path / "leaderboard-board.png"))
    assert (tmp_path / "leaderboard-board.png").stat().st_size > 10_000


# ------------------------------------------------------------------------- the "done when", real data


def _real_nli_jsonl(klue_dir: Path, shared_dir: Path, out: Path) -> list[Path]:
    """The scoring cases' NLI predictions for the official dev set (JSON lists in gold order) as JSON Lines
    by guid, the shape every prediction writer of klue writes."""
    import json

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


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path,
         shared_data_dir: Path) -> Iterator[tuple[LiveServer, str, list[Path]]]:
    base = tmp_path_factory.mktemp("demo-site")
    done = klue("leaderboard", "init", str(base / "site"), "--demo", "--data-dir", str(klue_data_dir))
    password = re.search(r"user admin, password (\S+)", done.stdout)
    assert password, done.stdout
    for task in ("nli", "sts", "ner", "dp"):  # every task whose official dev set is on hand
        assert f"  {task}: gold " in done.stdout, done.stdout
    site = LiveSite(base / "site")
    site.add_user("jiwoo", "서울대 NLP")
    files = _real_nli_jsonl(klue_data_dir, shared_data_dir, base)
    server = LiveServer(site, workers=2, scorers=1).start()
    try:
        yield server, password[1], files
    finally:
        server.stop()


@pytest.mark.realdata
def test_demo_site_on_the_official_dev_sets(demo: tuple[LiveServer, str, list[Path]], browser: Any,  # noqa: F811
                                            tmp_path: Path) -> None:
    """`init --demo` and `serve`: one team submits with `klue submit`, the admin through the browser; the
    board ranks them with intervals and says how they stand; nothing private shows before `reveal`."""
    from selenium.webdriver.common.by import By

    server, password, (cli_file, browser_file) = demo
    sent = klue("submit", "--server", server.url, "--task", "nli", "--predictions", str(cli_file), "--name",
                "cli-model", "--wait", env={"KLUE_TOKEN": server.site.tokens["jiwoo"]})
    assert re.search(r"public nli score \d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\] \(95% interval", sent.stdout), sent.stdout

    browser.get(f"{server.url}/login")
    # Cookies ignore the port: the other test's session on 127.0.0.1 would be sent to this server too.
    browser.delete_all_cookies()
    browser.get(f"{server.url}/login")
    browser.find_element(By.ID, "username").send_keys("admin")
    browser.find_element(By.ID, "password").send_keys(password)
    browser.find_element(By.ID, "login").click()
    assert browser.current_url.endswith("/team"), browser.page_source[:2000]
    browser.get(f"{server.url}/submit")
    assert browser.find_elements(By.ID, "name"), browser.page_source[:3000]
    browser.find_element(By.ID, "name").send_keys("browser-model")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "task")).select_by_value("nli")
    browser.find_element(By.ID, "predictions").send_keys(str(browser_file))
    browser.find_element(By.ID, "send").click()
    assert _wait_text(browser, "#status", "scored") == "scored"

    board = server.get("/api/leaderboard").json()
    assert set(board["public"]["tasks"]) == {"nli", "sts", "ner", "dp"}
    rows = board["public"]["tasks"]["nli"]
    assert sorted(r["name"] for r in rows) == ["browser-model", "cli-model"]
    assert rows[0]["rank"] == 1 and all(r["interval"][0] <= r["score"] <= r["interval"][1] for r in rows)
    assert rows[1]["relation"] and rows[1]["p_value"] is not None
    task_page = server.get("/api/tasks/nli").json()
    assert {"accuracy", "macro_f1"} <= set(task_page["public"][0]["scores"])
    assert "private" not in board and "private" not in task_page
    browser.get(server.url + "/")
    assert "Private ranking" not in browser.find_element(By.TAG_NAME, "body").text
    browser.save_screenshot(str(tmp_path / "demo-board.png"))

    klue("leaderboard", "reveal", str(server.site.root))
    revealed = server.get("/api/leaderboard").json()
    assert revealed["revealed"] is True and len(revealed["private"]["tasks"]["nli"]) == 2
    browser.get(server.url + "/")
    assert "Private ranking (revealed)" in browser.find_element(By.TAG_NAME, "body").text
