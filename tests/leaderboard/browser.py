"""A real headless browser for the leaderboard's tests: Debian's chromium driven by Selenium through
chromium-driver (.ci/run installs both, with fonts-nanum so a screenshot shows Hangul).

`browser` (module-scoped) gives a `selenium.webdriver.Chrome`; it skips with the reason when chromium, its
driver or selenium is absent. Tests import it by name: `from browser import browser  # noqa: F401`.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

INTERVAL = re.compile(r"^\[(\d+\.\d\d), (\d+\.\d\d)\]$")  # "[low, high]" as the pages write an interval
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def make_driver(profile_dir: Path) -> Any:
    """A headless Chrome on Debian's chromium, sized so a whole leaderboard row fits in a screenshot."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace for chromium's sandbox
        "--disable-dev-shm-usage",  # a small /dev/shm crashes tabs; /tmp instead
        "--disable-gpu",
        "--window-size=1280,1000",
        "--lang=ko-KR",
        f"--user-data-dir={profile_dir}",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Selenium Chrome; its profile lives in a temp dir removed after the module."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (path.is_file() and os.access(path, os.X_OK)):
            pytest.skip(f"{path} absent: apt-get install {package} (.ci/run does)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("selenium absent: pip install 'klue[leaderboard]'")
    profile = Path(tempfile.mkdtemp(prefix="klue-chromium-"))
    driver = make_driver(profile)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_text(driver: Any, css: str, want: str, timeout: float = 120) -> str:
    """Reload until the element's text is `want` (the page shows the status the server had when it rendered)."""
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + timeout
    while True:
        text = str(driver.find_element(By.CSS_SELECTOR, css).text)
        if text == want or time.monotonic() > deadline:
            return text
        time.sleep(0.3)
        driver.refresh()


def log_in(driver: Any, url: str, user: str, password: str) -> None:
    """Through the login form; the browser's cookies first cleared (cookies ignore the port: another test's
    session on 127.0.0.1 would be sent to this server too)."""
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/login")
    driver.delete_all_cookies()
    driver.get(f"{url}/login")
    driver.find_element(By.ID, "username").send_keys(user)
    driver.find_element(By.ID, "password").send_keys(password)
    driver.find_element(By.ID, "login").click()
    assert wait_url(driver, r"/team$"), driver.page_source[:2000]


def wait_url(driver: Any, pattern: str, timeout: float = 60) -> re.Match[str] | None:
    """The browser's address matched against `pattern` once it does (None after `timeout`): a click returns
    before the form's answer has loaded on a loaded machine."""
    deadline = time.monotonic() + timeout
    while (match := re.search(pattern, driver.current_url)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    return match


def upload(driver: Any, url: str, task: str, name: str, predictions: Path) -> int:
    """Through the upload form; the new submission's id (its page is where the form leads)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver.get(f"{url}/submit")
    assert driver.find_elements(By.ID, "name"), driver.page_source[:3000]
    Select(driver.find_element(By.ID, "task")).select_by_value(task)
    driver.find_element(By.ID, "name").send_keys(name)
    driver.find_element(By.ID, "predictions").send_keys(str(predictions))
    driver.find_element(By.ID, "send").click()
    match = wait_url(driver, r"/submissions/(\d+)$")
    assert match, driver.current_url
    return int(match[1])
