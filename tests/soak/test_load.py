"""The 60 s run of the mixed load against the real server (``make soak``).

The scenario and the 12 s run that ``make test`` includes are in ``tests/e2e/test_load.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.test_load import Target, mixed_load, serve_target


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with serve_target(tmp_path_factory) as started:
        yield started


@pytest.mark.soak
@pytest.mark.parametrize(("seconds", "clients"), [pytest.param(60, 16, id="16-clients-60s")])
def test_mixed_load(target: Target, seconds: int, clients: int) -> None:
    mixed_load(target, seconds, clients)
