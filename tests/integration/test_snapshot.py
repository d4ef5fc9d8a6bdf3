"""Snapshots plus tail replay equal a full replay; restarts never duplicate anything."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from graph.errors import LogCorruptedError
from graph.store import DecisionStore
from tests.conftest import StoreFactory, decision


def build(store: DecisionStore, count: int) -> list[str]:
    ids = [
        store.record(decision(f"decision {i}", tags=[f"t{i % 3}"]), "a").id for i in range(count)
    ]
    for left, right in itertools.pairwise(ids):
        store.link(right, left, "depends_on", "a")
        store.link(left, right, "relates_to", "a")
    store.review(ids[0], "success", "b")
    return ids


def test_snapshot_plus_tail_equals_full_replay(open_store: StoreFactory, tmp_path: Path) -> None:
    store = open_store(snapshot_every=7)
    ids = build(store, 12)
    store.update(ids[3], {"confidence": 0.4}, "c")
    assert store.snapshot_seq > 0
    assert store.snapshot_seq < store.seq  # a tail remains after the last automatic snapshot
    expected_hash, seq = store.graph_hash(), store.seq
    store._writable = False  # simulate a crash: no final snapshot
    store._dir_lock.release()

    with_snapshot = open_store()
    assert with_snapshot.open_report.snapshot_seq is not None
    assert with_snapshot.open_report.replayed == seq - with_snapshot.open_report.snapshot_seq
    assert with_snapshot.graph_hash() == expected_hash
    with_snapshot.close()

    (tmp_path / "data" / "snapshot.json").unlink()
    full = open_store()
    assert full.open_report.snapshot_seq is None
    assert full.open_report.replayed == seq
    assert full.graph_hash() == expected_hash


def test_restarts_never_duplicate(open_store: StoreFactory, tmp_path: Path) -> None:
    store = open_store()
    build(store, 5)
    expected = (store.graph_hash(), store.seq, store.graph.number_of_edges())
    size = store.log_path.stat().st_size
    store.close()
    for _ in range(4):
        again = open_store()
        assert (again.graph_hash(), again.seq, again.graph.number_of_edges()) == expected
        again.close()
    assert (tmp_path / "data" / "events.jsonl").stat().st_size == size


def test_damaged_snapshot_is_ignored(open_store: StoreFactory, tmp_path: Path) -> None:
    store = open_store()
    build(store, 4)
    expected = store.graph_hash()
    store.close()
    snap = tmp_path / "data" / "snapshot.json"
    snap.write_bytes(snap.read_bytes()[:-40] + b"garbage\n")
    again = open_store()
    assert again.open_report.snapshot_seq is None
    assert again.graph_hash() == expected


def test_snapshot_from_another_history_is_refused_until_rebuilt(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    store = open_store()
    build(store, 4)
    store.close()
    other_dir = tmp_path / "other"
    other = open_store(other_dir, seed=99)
    build(other, 2)  # a shorter log: its snapshot offset lands mid-line in ours
    other.close()
    (tmp_path / "data" / "snapshot.json").write_bytes((other_dir / "snapshot.json").read_bytes())
    with pytest.raises(LogCorruptedError) as info:
        open_store()
    assert info.value.line == 5  # other's snapshot ends after event 5; ours differs there
    assert "rebuild" in info.value.reason
    rebuilt = open_store(use_snapshot=False)  # `decigraph rebuild`: the log as it is
    assert rebuilt.seq == 11
    assert rebuilt.verify().ok


def test_snapshot_ahead_of_log_is_refused_until_rebuilt(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """Acknowledged events the snapshot saw are gone from the log: never served silently."""
    store = open_store()
    build(store, 6)
    store.close()
    log = tmp_path / "data" / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:3]))  # log restored from an older backup
    with pytest.raises(LogCorruptedError) as info:
        open_store()
    assert info.value.line == 4
    assert "missing" in info.value.reason
    rebuilt = open_store(use_snapshot=False)
    assert rebuilt.seq == 3
    assert rebuilt.verify().ok
    rebuilt.write_snapshot()
    rebuilt.close()
    assert open_store().seq == 3  # the rebuilt snapshot covers the log as it now is
