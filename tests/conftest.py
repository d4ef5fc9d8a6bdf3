"""Shared fixtures (stores in temporary directories with a deterministic clock and ids) and the
suite markers: every test gets the marker named by its directory, so ``pytest -m unit`` runs
tests/unit (plus the doctests of graph/), ``-m integration`` tests/integration, and so on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from graph.drafts import DecisionDraft
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions

if TYPE_CHECKING:
    from tests.support.loadgen import Served

# PostgreSQL servers for the tests: the pg_server and pg_cluster fixtures
# (tests/support/pgcluster.py), and their log tails in failure reports.
pytest_plugins = ["tests.support.pgfixtures"]

TESTS = Path(__file__).resolve().parent
# tests/<suite>/... -> the marker <suite> (registered in pyproject.toml).
SUITES = ("unit", "integration", "e2e", "fuzz", "soak")
# Doctests elsewhere (graph/) are pure and fast: they count as unit tests.
DOCTEST_SUITE = "unit"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.resolve()
        if path.is_relative_to(TESTS):
            parts = path.relative_to(TESTS).parts
            suite = parts[0] if len(parts) > 1 and parts[0] in SUITES else None
        else:
            suite = DOCTEST_SUITE if isinstance(item, pytest.DoctestItem) else None
        if suite is not None:
            item.add_marker(getattr(pytest.mark, suite))


START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class TickingClock:
    """Advances one second per reading, so every event has a distinct, reproducible time."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


StoreFactory = Callable[..., DecisionStore]


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[StoreFactory]:
    """Open stores on ``tmp_path / "data"`` (same seed and clock every time); closes them all."""
    opened: list[DecisionStore] = []

    def factory(data_dir: Path | None = None, seed: int = 7, **options: object) -> DecisionStore:
        opts = StoreOptions(**{"fsync": "never", **options})  # type: ignore[arg-type]
        store = DecisionStore.open(
            data_dir or tmp_path / "data", opts, clock=TickingClock(), ids=IdSource(seed)
        )
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: StoreFactory) -> DecisionStore:
    return open_store()


def decision(text: str = "Use PostgreSQL for the ledger", **fields: object) -> DecisionDraft:
    return DecisionDraft.model_validate({"text": text, **fields})


@pytest.fixture
def reaper() -> Iterator[list[Served]]:
    """Servers a test started; any still running when it ends (e.g. it failed) are killed."""
    started: list[Served] = []
    yield started
    for served in started:
        served.kill()
