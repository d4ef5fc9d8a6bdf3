"""The log read as history: when each event happened and which events touched each node.

:class:`HistoryIndex` is what "as of a time" and "the history of a decision" need without
re-reading the whole log for every question: the time of every event (so a time resolves to a
seq by bisection) and, for every node id, the seqs of the events that named it (records,
updates, reviews, lifecycle changes, links and unlinks from either end, supersession, forget).

It is built lazily, the first time a history question is asked (one pass over the log, in
batches, outside the store lock), and then kept up to date by a store listener, so a store that
never answers such a question pays nothing, at start-up or per write.

Times resolve by *log order*: ``seq_at(t)`` is the longest prefix of the log whose events were
all stamped at or before ``t``. Stamps are non-decreasing in practice (one clock per log); if a
clock ever stepped back, the prefix rule still gives one answer, the same on every replica.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from .errors import LogCorruptedError
from .events import Event, Operation, touched_ids
from .timeutil import parse_ts

if TYPE_CHECKING:
    from .persistence import LoggedGraph

_BATCH = 5000  # events read per range read while building


def _micros(ts: datetime) -> int:
    """Microseconds since the epoch, exactly (a float timestamp would round)."""
    return int(ts.replace(microsecond=0).timestamp()) * 1_000_000 + ts.microsecond


def node_ids_in(event: Event) -> list[str]:
    """Every node an event names: the nodes it creates or changes, and both ends of every edge
    it adds or removes (so a link shows in the history of the decision at either end)."""
    return _ids(event.op.value, event.payload)


def _ids(op: str, payload: dict[str, Any]) -> list[str]:
    ids = list(touched_ids(payload))
    edges = payload.get("edges")
    if isinstance(edges, list):
        for edge in edges:
            if isinstance(edge, dict):
                ids.extend(edge[k] for k in ("source", "target") if isinstance(edge.get(k), str))
    if op == Operation.UNLINK.value:
        ids.extend(payload[k] for k in ("source", "target") if isinstance(payload.get(k), str))
    return list(dict.fromkeys(ids))  # once each, in the order named


class HistoryIndex:
    """Event times and the events of each node, for one store (see the module docstring)."""

    def __init__(self, store: LoggedGraph) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._reset()
        store.listeners.append(self._heard)
        store.reset_listeners.append(self._reset)

    def _reset(self) -> None:
        with getattr(self, "_lock", threading.Lock()):
            #: ``_stamps[s - 1]``: event ``s``'s time in microseconds; ``_envelope`` is the
            #: running maximum of the same (what :meth:`seq_at` bisects).
            self._stamps = array("q")
            self._envelope = array("q")
            self._by_node: dict[str, array[int]] = {}
            self._ready = False

    @property
    def built_to(self) -> int:
        """The last seq indexed (0 before the first history question)."""
        return len(self._stamps)

    # -- building --------------------------------------------------------------------------
    def ensure(self) -> None:
        """Index every applied event (one pass over the log the first time, then nothing)."""
        if self._ready and self.built_to == self._store.seq:
            return
        with self._lock:
            while not self._ready:
                target = self._store.seq
                if self.built_to >= target:
                    break
                self._read(self.built_to + 1, min(target, self.built_to + _BATCH))
            # The tail written while we read: finish under the store lock, so the listener
            # takes over exactly at the next event.
            with self._store.lock:
                target = self._store.seq
                while self.built_to < target:
                    self._read(self.built_to + 1, min(target, self.built_to + _BATCH))
                self._ready = True

    def _read(self, first: int, last: int) -> None:
        """Index events ``first..last`` from their stored lines. Only the time, op and payload
        are read (no event objects, no hash check): these lines were verified when the store
        applied them or checked the prefix its snapshot covers, and nothing here feeds the
        graph (a history answer reads its events back through the checked range read)."""
        lines = self._store.log.lines(first, min(last, self._store.seq))
        if not lines:
            raise LogCorruptedError(self._store.log.location, first, "missing from the log")
        for seq, line in lines:
            data = orjson.loads(line)
            if data.get("seq") != seq or seq != self.built_to + 1:
                raise LogCorruptedError(self._store.log.location, seq, "out of sequence")
            self._append(seq, data["ts"], data["op"], data["payload"])

    def _heard(self, event: Event) -> None:
        """A store listener: runs under the store lock as each event is applied."""
        if self._ready and event.seq == self.built_to + 1:
            self._add(event)
        elif self._ready:  # a gap: never guess, rebuild from the log on the next question
            self._ready = False

    def _add(self, event: Event) -> None:
        self._append(event.seq, event.ts, event.op.value, event.payload)

    def _append(self, seq: int, ts: str, op: str, payload: dict[str, Any]) -> None:
        stamp = _micros(parse_ts(ts))
        self._stamps.append(stamp)
        self._envelope.append(max(stamp, self._envelope[-1]) if self._envelope else stamp)
        for node_id in _ids(op, payload):
            seqs = self._by_node.get(node_id)
            if seqs is None:
                seqs = self._by_node[node_id] = array("l")
            seqs.append(seq)

    # -- questions -------------------------------------------------------------------------
    def seq_at(self, when: datetime) -> int:
        """The last seq of the longest log prefix stamped at or before ``when`` (0: none)."""
        self.ensure()
        return bisect.bisect_right(self._envelope, _micros(when))

    def stamp(self, seq: int) -> int | None:
        """Event ``seq``'s time in microseconds since the epoch (``None`` outside the log)."""
        self.ensure()
        return self._stamps[seq - 1] if 1 <= seq <= len(self._stamps) else None

    def seqs_of(self, node_id: str) -> list[int]:
        """The seqs of every event that named ``node_id``, in log order."""
        self.ensure()
        return list(self._by_node.get(node_id, ()))

    def events_of(self, node_id: str) -> Iterator[Event]:
        """The events that named ``node_id``, read back from the log, in log order."""
        for seq in self.seqs_of(node_id):
            yield from self._store.read_events(seq, seq)

    def node_ids(self) -> list[str]:
        """Every node id the log ever named (forgotten ones included), sorted."""
        self.ensure()
        return sorted(self._by_node)

    def stats(self) -> dict[str, Any]:
        return {"events": self.built_to, "nodes": len(self._by_node), "ready": self._ready}
