"""Consistency across replicas of a shared log: read-your-writes and resolving a write whose
commit outcome was unknown.

Every write answers the ``seq`` of the event it committed; a read given ``minSeq`` is answered
only once this replica has applied that event (waiting up to ``min_seq_timeout`` seconds, then
:class:`~graph.errors.NotCaughtUpError`, retryable). With the file log one process writes
everything, so a ``minSeq`` it has not reached never comes: it is refused at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from graph.errors import NotCaughtUpError
from graph.events import touched_ids

from .context import Decigraph

_POLL = 0.005  # seconds between looks at the applied seq
_PULL = 0.1  # seconds between pulls from the shared log while waiting (besides the follower)


def await_seq(app: Decigraph, min_seq: int, timeout: float | None = None) -> int:
    """Wait until the store has applied event ``min_seq``; return the applied seq."""
    store = app.store
    if store.seq >= min_seq:
        return store.seq
    timeout = app.settings.min_seq_timeout if timeout is None else timeout
    if not store.log.shared:
        raise NotCaughtUpError(min_seq, store.seq, 0)
    started = time.monotonic()
    pulled = 0.0
    while store.seq < min_seq:
        now = time.monotonic()
        if now - started >= timeout:
            raise NotCaughtUpError(min_seq, store.seq, timeout)
        if now - pulled >= _PULL:
            store.refresh()  # do not wait for the follower's next wake-up
            pulled = now
            continue
        time.sleep(_POLL)
    return store.seq


@dataclass
class ReplicaConsistency:
    """The registry's consistency hooks (:class:`service.rpc.protocol.Consistency`) for one
    app: the dispatcher calls them around every method."""

    app: Decigraph

    def await_seq(self, min_seq: int) -> None:
        await_seq(self.app, min_seq)

    def start_write(self) -> None:
        self.app.store.forget_last_commit()

    def written_seq(self) -> int:
        """The seq of the event this call committed; a write that changed nothing answers
        the seq it read (waiting for it is waiting for everything the answer rests on)."""
        seq = self.app.store.last_committed_seq
        return self.app.store.seq if seq is None else seq


@dataclass(frozen=True)
class EventLookup:
    """Whether an event is in the log: where, what it did and to which node."""

    event_id: str
    found: bool
    seq: int | None = None
    op: str | None = None
    ts: str | None = None
    actor: str | None = None
    node_ids: tuple[str, ...] = ()
    applied: bool = False
    #: Not found while a write holds the log's head: it may still be committing (waiting
    #: for its standby). Ask again; an event not found when nothing is pending never commits.
    pending: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "eventId": self.event_id,
            "found": self.found,
            "seq": self.seq,
            "op": self.op,
            "ts": self.ts,
            "actor": self.actor,
            "nodeIds": list(self.node_ids),
            "applied": self.applied,
            "pending": self.pending,
        }


def find_event(app: Decigraph, event_id: str) -> EventLookup:
    """Look an event up by id in the log itself (the database, for a shared log): how a
    client resolves a write whose outcome was unknown. ``found`` false and ``pending`` false
    means it never committed (retrying is safe); ``pending`` means a write holds the log's head
    and this one may still be committing: ask again."""
    log = app.store.log
    entry = log.find(event_id)
    if entry is None:
        pending = log.shared and log.head_locked()
        if pending and (entry := log.find(event_id)) is None:  # committed in between?
            return EventLookup(event_id, False, pending=True)
        if entry is None:
            return EventLookup(event_id, False)
    event = entry.event
    return EventLookup(
        event_id,
        True,
        event.seq,
        event.op.value,
        event.ts,
        event.actor,
        tuple(touched_ids(event.payload)),
        applied=app.store.seq >= event.seq,
    )


@dataclass(frozen=True)
class ReplicaStatus:
    """Where this replica stands in the log (``graph_hash`` proves its graph is the replay)."""

    seq: int
    last_hash: str
    graph_hash: str
    shared: bool
    location: str
    log_head: int | None

    def to_dict(self) -> dict[str, Any]:
        lag = None if self.log_head is None else max(0, self.log_head - self.seq)
        return {
            "seq": self.seq,
            "lastHash": self.last_hash,
            "graphHash": self.graph_hash,
            "sharedLog": self.shared,
            "eventStore": self.location,
            "logHead": self.log_head,
            "lag": lag,
        }


def replica_status(app: Decigraph) -> ReplicaStatus:
    """This replica's position and graph hash (computed once per log position)."""
    with app.store.lock:
        seq, last = app.store.seq, app.store.state.last_hash
        graph_hash = app.at_seq("graph_hash", app.store.graph_hash)
    head = app.store.log_head() if app.store.log.shared else None
    return ReplicaStatus(seq, last, graph_hash, app.store.log.shared, app.store.log.location, head)
