"""Shared test set-up.

Where the tests run as root (as CI does), every bot runs as an unprivileged uid of its own
(docs/security.md), which may not enter pytest's private (0700) temporary directories: a test
that puts a bot there opens its directory to others, as a bot author's directory is.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _bots_may_enter_tmp_path(request: pytest.FixtureRequest) -> None:
    if os.geteuid() == 0 and "tmp_path" in request.fixturenames:
        request.getfixturevalue("tmp_path").chmod(0o755)
