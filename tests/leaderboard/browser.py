"""A real headless browser for the leaderboard's tests: Debian's chromium driven by Selenium through
chromium-driver (.ci/run installs both, with fonts-nanum so a screenshot shows Hangul).

`browser` (module-scoped) gives a `selenium.webdriver.Chrome`; it skips with the reason when chromium, its
driver or selenium is absent. Tests import it by name: `from browser import browser  # noqa: F401`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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
