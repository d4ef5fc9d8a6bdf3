"""The log: hash chain, tamper detection, torn tails, failed writes."""

from __future__ import annotations

import errno
import itertools
import os
from pathlib import Path

import orjson
import pytest

from graph.errors import LogCorruptedError, StorageError
from graph.eventlog import LogEntry, TornTail, read_events
from graph.events import GENESIS_HASH, Event, Operation
from graph.store import DecisionStore
from tests.conftest import StoreFactory, decision


def filled(open_store: StoreFactory, count: int = 5) -> DecisionStore:
    store = open_store()
    for index in range(count):
        store.record(decision(f"decision {index}"), "agent")
    return store


def test_events_chain_and_carry_the_documented_fields(open_store: StoreFactory) -> None:
    store = filled(open_store, 3)
    events = [item.event for item in read_events(store.log_path) if isinstance(item, LogEntry)]
    assert [e.seq for e in events] == [1, 2, 3]
    assert events[0].prev == GENESIS_HASH
    assert all(later.prev == earlier.hash for earlier, later in itertools.pairwise(events))
    line = orjson.loads(store.log_path.read_bytes().splitlines()[0])
    assert set(line) == {"seq", "id", "ts", "actor", "op", "payload", "prev", "hash"}


def test_expected_version_is_logged(open_store: StoreFactory) -> None:
    store = filled(open_store, 1)
    node_id = next(iter(store.graph))
    store.update(node_id, {"confidence": 0.5}, "agent", expected_version=1)
    last = orjson.loads(store.log_path.read_bytes().splitlines()[-1])
    assert last["expectedVersion"] == 1
    assert last["op"] == "update"


def _rewrite_line(path: Path, index: int, change: dict[str, object]) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    data = orjson.loads(lines[index])
    data["payload"]["node"].update(change)
    lines[index] = orjson.dumps(data) + b"\n"
    path.write_bytes(b"".join(lines))


def test_tampering_in_the_middle_is_detected(open_store: StoreFactory, tmp_path: Path) -> None:
    store = filled(open_store, 5)
    store.close()
    (tmp_path / "data" / "snapshot.json").unlink()
    _rewrite_line(store.log_path, 2, {"text": "forged"})
    with pytest.raises(LogCorruptedError) as info:
        DecisionStore.open(tmp_path / "data")
    assert info.value.line == 3
    assert "hash" in info.value.reason


def test_tampering_is_reported_by_verify(open_store: StoreFactory) -> None:
    store = filled(open_store, 4)
    _rewrite_line(store.log_path, 1, {"text": "forged"})
    report = store.verify()
    assert not report.ok
    assert "verification" in report.problems[0]


@pytest.mark.parametrize("keep", [1, 17, -2])
def test_torn_last_line_is_skipped_and_cut(
    open_store: StoreFactory, tmp_path: Path, keep: int
) -> None:
    store = filled(open_store, 4)
    store.close()
    (tmp_path / "data" / "snapshot.json").unlink()
    log = store.log_path
    good = log.read_bytes()
    torn = Event.create(
        seq=5,
        event_id="f" * 16,
        ts="2026-01-01T00:00:00.000000Z",
        actor="a",
        op=Operation.UNLINK,
        payload={},
        prev="0" * 64,
    ).to_line()[:keep]
    log.write_bytes(good + torn)

    items = list(read_events(log))
    assert isinstance(items[-1], TornTail)
    assert sum(isinstance(i, LogEntry) for i in items) == 4

    reopened = open_store()
    assert reopened.seq == 4
    assert reopened.open_report.torn_tail is not None
    assert log.read_bytes() == good
    assert reopened.open_report.torn_saved_to is not None
    assert reopened.open_report.torn_saved_to.read_bytes() == torn
    reopened.record(decision("after the crash"), "agent")
    assert reopened.verify().ok


def test_failed_append_leaves_no_partial_line(
    open_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = filled(open_store, 2)
    size, before, seq = store.log_path.stat().st_size, store.graph_hash(), store.seq
    real_write = os.write

    def half_then_enospc(fd: int, data: bytes | memoryview) -> int:
        real_write(fd, bytes(data[:10]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_enospc)
    with pytest.raises(StorageError, match="disk full"):
        store.record(decision("will not fit"), "agent")
    monkeypatch.undo()
    assert store.log_path.stat().st_size == size
    assert (store.graph_hash(), store.seq) == (before, seq)
    store.record(decision("fits now"), "agent")
    assert store.verify().ok


def test_fsync_always_syncs_each_append(
    open_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(os, "fdatasync", calls.append)
    store = open_store(fsync="always")
    store.record(decision("a"), "x")
    store.record(decision("b"), "x")
    assert len(calls) == 2
