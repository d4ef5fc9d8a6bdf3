"""Copying a log between event stores (a file log into PostgreSQL and back), line for line.

The lines are copied byte for byte, so every hash, the chain and the replayed graph are the
same on both sides. The target must be empty or hold a prefix of the source (a copy that
stopped half-way resumes); anything else is refused before a byte is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from graph.errors import ValidationError
from graph.eventlog import LogEntry, TornTail
from graph.events import GENESIS_HASH, Event

from .base import EventStore, Head
from .filelog import FileEventStore
from .postgres import PostgresEventStore

BATCH = 2_000


@dataclass(frozen=True)
class CopyReport:
    """How many events the source holds, how many the target already had, and the last
    event's hash (the same on both sides afterwards)."""

    events: int
    already: int
    copied: int
    last_hash: str


def copy_log(
    source: EventStore,
    target: EventStore,
    *,
    batch: int = BATCH,
    progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Append to ``target`` every event of ``source`` it lacks (both opened by the caller,
    ``target`` for writing). Raises :class:`ValidationError` naming ``target`` when the target
    holds events the source does not; the chain of both is verified while reading."""
    have = _head(target)
    pending: list[tuple[Event, bytes]] = []
    count, last = 0, GENESIS_HASH
    for item in source.entries(0, GENESIS_HASH):
        if isinstance(item, TornTail):
            break  # a torn write was never acknowledged: not part of the log
        event = item.event
        count, last = event.seq, event.hash
        if event.seq < have.seq:
            continue
        if event.seq == have.seq:
            if event.hash != have.hash:
                raise ValidationError("target", _diverged(have))
            continue
        pending.append((event, event.to_line()))
        if len(pending) >= batch:
            _append(target, pending)
            pending = []
            if progress is not None:
                progress(event.seq)
    if count < have.seq:
        raise ValidationError("target", _diverged(have))
    if pending:
        _append(target, pending)
    if progress is not None:
        progress(count)
    return CopyReport(count, have.seq, count - have.seq, last)


def _diverged(have: Head) -> str:
    return (
        f"already holds {have.seq} events that are not the source's first {have.seq}: copy "
        "into an empty log"
    )


def _head(store: EventStore) -> Head:
    """The target's last event, after verifying its whole chain."""
    if isinstance(store, PostgresEventStore):
        head = store.head()
        _drain(store.entries(0, GENESIS_HASH, upto=head.seq))
        return head
    last = Head(0, GENESIS_HASH)
    for item in store.entries(0, GENESIS_HASH):
        if isinstance(item, TornTail):
            raise ValidationError("target", f"ends in a torn write ({item.reason})")
        last = Head(item.event.seq, item.event.hash)
    return last


def _drain(items: Iterator[LogEntry | TornTail]) -> None:
    for _ in items:
        pass


def _append(target: EventStore, events: list[tuple[Event, bytes]]) -> None:
    if isinstance(target, PostgresEventStore):
        target.append_batch(events)
    elif isinstance(target, FileEventStore):
        target.append_lines(events)
    else:  # pragma: no cover - the two stores above are all there is
        raise TypeError(f"cannot copy into {type(target).__name__}")
