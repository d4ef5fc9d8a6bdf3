"""Shared fixtures: stores in temporary directories with a deterministic clock and ids."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graph.drafts import DecisionDraft
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions

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
