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


# -- a changed acknowledged line is corruption, not a torn tail ---------------------------------
def _forge(line: bytes, rehash: bool = False, prev: str | None = None) -> bytes:
    """The event on ``line`` with another text of the same length (so the file keeps its size),
    re-hashed and re-chained onto ``prev`` if asked."""
    event = Event.from_line(line)
    payload = dict(event.payload)
    if "node" in payload:
        text = str(payload["node"]["text"])
        payload["node"] = {**payload["node"], "text": ("forged" + "!" * len(text))[: len(text)]}
    else:
        payload["reason"] = "forged"
    if not rehash:
        data = orjson.loads(line)
        data["payload"] = payload
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n"
    return Event.create(
        seq=event.seq,
        event_id=event.id,
        ts=event.ts,
        actor=event.actor,
        op=event.op,
        payload=payload,
        prev=prev if prev is not None else event.prev,
        expected_version=event.expected_version,
    ).to_line()


@pytest.mark.parametrize("snapshot", [True, False], ids=["with-snapshot", "log-only"])
def test_a_changed_complete_last_line_is_corruption_not_a_torn_tail(
    open_store: StoreFactory, tmp_path: Path, snapshot: bool
) -> None:
    store = filled(open_store, 4)
    store.close()  # the snapshot covers all four events
    if not snapshot:
        (tmp_path / "data" / "snapshot.json").unlink()
    log = store.log_path
    lines = log.read_bytes().splitlines(keepends=True)
    lines[-1] = _forge(lines[-1])  # acknowledged, newline-terminated, hash no longer matches
    log.write_bytes(b"".join(lines))
    changed = log.read_bytes()

    with pytest.raises(LogCorruptedError) as info:
        open_store()
    assert info.value.line == 4
    assert "hash" in info.value.reason
    assert log.read_bytes() == changed  # nothing cut, nothing moved aside
    assert not list(log.parent.glob("events.jsonl.torn-*"))
    with pytest.raises(LogCorruptedError):  # readers refuse it too
        list(read_events(log))


def test_a_complete_unreadable_last_line_is_corruption(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    store = filled(open_store, 3)
    store.close()
    log = store.log_path
    good = log.read_bytes()
    last = good.splitlines()[-1]
    log.write_bytes(good + last[: len(last) // 2] + b"\n")  # half an event, then a newline
    with pytest.raises(LogCorruptedError) as info:
        open_store()
    assert info.value.line == 4
    assert "unreadable" in info.value.reason
    assert not list(log.parent.glob("events.jsonl.torn-*"))


def test_a_tampered_line_inside_the_snapshot_is_named(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    store = filled(open_store, 6)
    store.close()
    log = store.log_path
    size = log.stat().st_size
    lines = log.read_bytes().splitlines(keepends=True)
    lines[2] = _forge(lines[2])
    log.write_bytes(b"".join(lines))
    assert log.stat().st_size == size  # the snapshot's offset still lands on a line boundary
    with pytest.raises(LogCorruptedError) as info:
        open_store()
    assert info.value.line == 3
    assert "hash" in info.value.reason
    with pytest.raises(LogCorruptedError):  # read-only opens (verify, export) refuse it too
        open_store(read_only=True)


def test_a_rewritten_history_under_the_snapshot_is_refused(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """Line 2 edited and every later hash recomputed: the chain holds, the snapshot does not."""
    store = filled(open_store, 5)
    store.close()
    log = store.log_path
    lines = log.read_bytes().splitlines(keepends=True)
    prev = Event.from_line(lines[0]).hash
    for index in range(1, len(lines)):
        forged = _forge(lines[index], rehash=True, prev=prev) if index == 1 else None
        if forged is None:
            event = Event.from_line(lines[index])
            forged = Event.create(
                seq=event.seq,
                event_id=event.id,
                ts=event.ts,
                actor=event.actor,
                op=event.op,
                payload=event.payload,
                prev=prev,
                expected_version=event.expected_version,
            ).to_line()
        lines[index] = forged
        prev = Event.from_line(forged).hash
    log.write_bytes(b"".join(lines))
    assert all(isinstance(i, LogEntry) for i in read_events(log))  # a self-consistent chain

    with pytest.raises(LogCorruptedError) as info:
        open_store()
    assert info.value.line == 5
    assert "rewritten" in info.value.reason
    # The operator's way to accept the log as it is: replay it without the snapshot.
    rebuilt = open_store(use_snapshot=False)
    assert rebuilt.seq == 5
    assert "forged!!!!" in {a["text"] for _, a in rebuilt.graph.nodes(data=True)}


def test_acknowledged_events_cut_off_under_the_snapshot_are_refused(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    store = filled(open_store, 5)
    store.close()
    log = store.log_path
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:3]))  # two acknowledged events gone, at a line boundary
    with pytest.raises(LogCorruptedError) as info:
        open_store()
    assert info.value.line == 4
    assert "missing" in info.value.reason


def test_same_events_in_other_bytes_replay_the_log(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """Bytes no event hash covers (key order) changed: every event is intact, so it serves."""
    store = filled(open_store, 3)
    expected = store.graph_hash()
    store.close()
    log = store.log_path
    lines = log.read_bytes().splitlines(keepends=True)
    data = orjson.loads(lines[1])
    lines[1] = orjson.dumps(dict(reversed(list(data.items())))) + b"\n"
    log.write_bytes(b"".join(lines))
    again = open_store()
    assert again.open_report.snapshot_seq is None  # the whole log was replayed
    assert again.graph_hash() == expected
    assert again.verify().ok


def test_the_snapshot_records_the_digest_of_the_log_it_covers(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    import hashlib

    from graph.snapshot import read_snapshot

    store = open_store(snapshot_every=3)
    for index in range(7):
        store.record(decision(f"decision {index}"), "agent")
    loaded = read_snapshot(tmp_path / "data" / "snapshot.json")
    assert loaded is not None
    header = loaded[0]
    assert header.seq == 6
    prefix = store.log_path.read_bytes()[: header.log_offset]
    assert header.prefix_sha256 == hashlib.sha256(prefix).hexdigest()
    store.close()
    again = open_store()
    assert again.open_report.snapshot_seq == 7
    assert again.seq == 7


def test_no_line_follows_a_failed_write_that_could_not_be_undone(
    open_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = filled(open_store, 1)
    real_write, real_truncate = os.write, os.ftruncate

    def half_then_eio(fd: int, data: bytes | memoryview) -> int:
        real_write(fd, bytes(data[:10]))
        raise OSError(errno.EIO, "I/O error")

    def refuse(fd: int, size: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "write", half_then_eio)
    monkeypatch.setattr(os, "ftruncate", refuse)
    with pytest.raises(StorageError):
        store.record(decision("half written"), "agent")
    monkeypatch.setattr(os, "write", real_write)
    with pytest.raises(StorageError, match="could not be undone"):
        store.record(decision("would glue onto the partial line"), "agent")
    monkeypatch.setattr(os, "ftruncate", real_truncate)
    store.record(decision("after the cut"), "agent")  # the next append cuts first, then writes
    assert store.verify().ok
    assert store.seq == 2
