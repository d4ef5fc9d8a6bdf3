"""The store's files shared by a writer and readers: the writer's lock and read-only followers.

The commands and the graph rules they enforce are unit-tested in ``tests/unit/test_store.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.errors import ReadOnlyStoreError, StoreLockedError
from graph.store import DecisionStore, StoreOptions
from tests.conftest import StoreFactory, decision


def test_second_writer_gets_a_clear_lock_error(open_store: StoreFactory, tmp_path: Path) -> None:
    open_store()
    with pytest.raises(StoreLockedError, match="locked for writing"):
        DecisionStore.open(tmp_path / "data")


def test_read_only_store_follows_the_writer(open_store: StoreFactory, tmp_path: Path) -> None:
    writer = open_store()
    writer.record(decision("a"), "x")
    reader = DecisionStore.open(tmp_path / "data", StoreOptions(read_only=True))
    assert reader.graph.number_of_nodes() == 1
    with pytest.raises(ReadOnlyStoreError):
        reader.record(decision("b"), "x")
    writer.record(decision("c"), "x")
    assert reader.refresh() == 1
    assert reader.graph_hash() == writer.graph_hash()
    reader.close()


def test_verify_beside_a_live_writer_checks_the_applied_prefix(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    writer = open_store()
    writer.record(decision("a"), "x")
    reader = DecisionStore.open(tmp_path / "data", StoreOptions(read_only=True))
    writer.record(decision("b"), "x")  # appended after the reader opened
    with writer.log_path.open("ab") as log:
        log.write(b'{"seq": 3, "half a line')  # an append in flight
    report = reader.verify()
    assert report.ok, report.problems
    assert report.events == 1
    reader.close()
