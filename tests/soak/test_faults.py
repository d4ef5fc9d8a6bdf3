"""The long fault-injection runs against the real server (``make soak``).

Twelve kill -9 lives instead of two, and every kind of torn tail; the scenarios and their short
runs, which ``make test`` includes, are in ``tests/e2e/test_faults.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_faults import (
    TEARS,
    kill_9_during_concurrent_writes,
    torn_last_line_is_moved_aside,
)
from tests.support.loadgen import Served


@pytest.mark.soak
@pytest.mark.parametrize("kills", [pytest.param(12, id="12-kills")])
def test_kill_9_during_concurrent_writes(tmp_path: Path, kills: int, reaper: list[Served]) -> None:
    kill_9_during_concurrent_writes(tmp_path, kills, reaper)


@pytest.mark.soak
@pytest.mark.parametrize("names", [pytest.param(list(TEARS), id="3-tears")])
def test_torn_last_line_is_moved_aside(tmp_path: Path, names: list[str]) -> None:
    torn_last_line_is_moved_aside(tmp_path, names)
