"""Shared test set-up.

Where the tests run as root (as CI does), every bot runs as an unprivileged uid of its own
(docs/security.md), which may not enter pytest's private (0700) temporary directories: a test
that puts a bot there opens its directory to others, as a bot author's directory is.

The browser tests share one `browser` fixture: headless Debian Chromium with the flags this
machine needs and a fresh profile per test module.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _bots_may_enter_tmp_path(request: pytest.FixtureRequest) -> None:
    if os.geteuid() == 0 and "tmp_path" in request.fixturenames:
        request.getfixturevalue("tmp_path").chmod(0o755)


# The flags this machine's Chromium needs to run headless as root in a container, and to stay
# off the network (tests touch only 127.0.0.1): no QUIC, no background fetches, no component
# updates, no sync, no first-run page. Each browser gets a fresh profile of its own, so tests
# never share cookies, caches or downloads with another run.
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")


@pytest.fixture(scope="module")
def browser_window() -> str:
    """The browser's window size; a test module overrides this fixture to change it."""
    return "1400,1000"


@pytest.fixture(scope="module")
def browser_prefs() -> dict[str, object]:
    """Chromium preferences (e.g. a download folder); a test module overrides this fixture."""
    return {}


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, browser_window: str,
            browser_prefs: dict[str, object]) -> Iterator[Any]:
    """Headless Debian Chromium driven by Selenium, one per test module."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "Debian's chromium and chromium-driver are needed (.ci/run installs them)"
    opts = Options()
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--window-size={browser_window}")
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    if browser_prefs:
        opts.add_experimental_option("prefs", browser_prefs)
    opts.binary_location = chromium
    d = webdriver.Chrome(service=Service(driver), options=opts)
    yield d
    d.quit()
