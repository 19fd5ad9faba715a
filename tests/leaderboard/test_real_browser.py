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
from live_site import LiveServer, LiveSite, write_config, write_nli_gold, write_nli_predictions

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
