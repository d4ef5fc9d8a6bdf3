"""History use cases: reads as of a point in the log, valid time, and a decision's history.

Two clocks (bitemporal, as the issue and the peers call it):

* **transaction time** (``asOf``): what the store held after a given event. An integer is a
  seq; a time resolves to the last event of the longest log prefix stamped at or before it.
  The answer is computed on the graph replayed to that point (:mod:`graph.timetravel`), so it
  is what the live store answered then.
* **valid time** (``validAt``): when a decision was in force. A decision is valid from when it
  happened (``occurred_at``, else when it was recorded) until it was superseded (the
  superseding edge's time) or rejected (the lifecycle change's time); forgotten decisions are
  gone from the graph from the forget on. ``validAt`` filters any view by that interval.

Current, valid decisions remain the default everywhere; both are opt-in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import networkx as nx

from graph.builders import raw_adjacency
from graph.enums import EdgeType, Lifecycle
from graph.errors import ValidationError
from graph.events import Operation
from graph.history import HistoryIndex
from graph.model import Node
from graph.store import DecisionStore
from graph.timetravel import PastStates
from graph.timeutil import format_ts, parse_ts, to_utc

#: ``asOf`` on the wire: a seq, or a time.
AsOf = int | datetime


class Historied(Protocol):
    """A store with its history index and past states: the application
    (:class:`~service.usecases.context.Decigraph`), or :class:`StoreHistory` for commands
    that open a store alone."""

    @property
    def store(self) -> DecisionStore: ...
    @property
    def history(self) -> HistoryIndex: ...
    @property
    def past(self) -> PastStates: ...


@dataclass
class StoreHistory:
    """History over a store opened without indexes (``decigraph history``, ``export``)."""

    store: DecisionStore
    history: HistoryIndex
    past: PastStates

    @classmethod
    def of(cls, store: DecisionStore, every: int = 5000) -> StoreHistory:
        return cls(store, HistoryIndex(store), PastStates(store, every, cache_size=1))


class GraphView(Protocol):
    """What a read needs of a store: the live :class:`~graph.store.DecisionStore` or a
    :class:`~graph.timetravel.PastGraph`."""

    @property
    def graph(self) -> nx.MultiDiGraph[str]: ...
    @property
    def seq(self) -> int: ...
    def get(self, node_id: str) -> Node: ...
    def salience(self) -> dict[str, float]: ...


@dataclass(frozen=True)
class Point:
    """A resolved position in the log: after event ``seq`` (stamped ``ts``; none for 0)."""

    seq: int
    ts: str | None

    def wire(self) -> dict[str, Any]:
        return {"seq": self.seq, "ts": self.ts}


@dataclass(frozen=True)
class At:
    """Where a read looks: ``seq`` (``None``: now) and ``valid_at`` (``None``: no filter)."""

    seq: int | None = None
    valid_at: datetime | None = None

    @property
    def now(self) -> bool:
        return self.seq is None and self.valid_at is None


NOW = At()


def resolve_point(app: Historied, as_of: AsOf, field: str = "asOf") -> Point:
    """The log position ``as_of`` names; a seq past the head is refused, naming ``field``."""
    head = app.store.seq
    if isinstance(as_of, bool):
        raise ValidationError(field, "must be a seq (integer) or an ISO-8601 time")
    if isinstance(as_of, int):
        if as_of < 0 or as_of > head:
            raise ValidationError(field, f"seq {as_of} is outside the log (0..{head})")
        seq = as_of
    else:
        seq = min(app.history.seq_at(to_utc(as_of)), head)
    return Point(seq, event_time(app, seq))


def event_time(app: Historied, seq: int) -> str | None:
    events = app.store.read_events(seq, seq) if seq else []
    return events[0].ts if events else None


def resolve(
    app: Historied, as_of: AsOf | None, valid_at: datetime | None
) -> tuple[At, Point | None]:
    """The :class:`At` a read uses, and the point to report (``None`` without ``asOf``)."""
    if as_of is None:
        return At(None, valid_at), None
    point = resolve_point(app, as_of)
    return At(point.seq, valid_at), point


@contextmanager
def viewing(app: Historied, at: At = NOW) -> Iterator[GraphView]:
    """The graph a read works on: live (under the store lock), or as it stood at ``at.seq``;
    restricted to the decisions valid at ``at.valid_at`` when given. Hold it for the read."""
    if at.seq is None:
        with app.store.lock:
            yield _valid(app, app.store, at.valid_at)
        return
    with app.store.lock:
        if at.seq == app.store.seq:
            yield _valid(app, app.store, at.valid_at)
            return
    yield _valid(app, app.past.at(at.seq), at.valid_at)


# -- valid time ------------------------------------------------------------------------------
def valid_interval(app: Historied, view: GraphView, node_id: str) -> tuple[str, str | None]:
    """When ``node_id`` became valid and when it stopped (``None``: still valid), as stamps."""
    G = view.graph
    attrs = G.nodes[node_id]
    start = str(attrs.get("occurred_at") or attrs["created_at"])
    ends = [
        str(keyed[EdgeType.SUPERSEDES.value].get("created_at"))
        for keyed in raw_adjacency(G).pred[node_id].values()
        if EdgeType.SUPERSEDES.value in keyed
    ]
    if attrs.get("lifecycle") == Lifecycle.REJECTED.value:
        rejected = _rejected_at(app, node_id, view.seq)
        if rejected is not None:
            ends.append(rejected)
    return start, min(ends) if ends else None


def _rejected_at(app: Historied, node_id: str, upto: int) -> str | None:
    """When the node was last set to rejected, at or before event ``upto``."""
    when = None
    for seq in app.history.seqs_of(node_id):
        if seq > upto:
            break
        for event in app.store.read_events(seq, seq):
            if event.op is Operation.SET_LIFECYCLE:
                lifecycle = event.payload.get("lifecycle")
                when = event.ts if lifecycle == Lifecycle.REJECTED.value else None
    return when


def valid_test(app: Historied, view: GraphView, valid_at: datetime) -> Callable[[str], bool]:
    """A predicate: was this node valid at ``valid_at``?"""
    stamp = format_ts(to_utc(valid_at))

    def test(node_id: str) -> bool:
        start, end = valid_interval(app, view, node_id)
        return start <= stamp and (end is None or stamp < end)

    return test


@dataclass
class ValidView:
    """A view restricted to the nodes valid at a time (and the edges between them)."""

    base: GraphView
    graph: nx.MultiDiGraph[str]

    @property
    def seq(self) -> int:
        return self.base.seq

    def get(self, node_id: str) -> Node:
        return self.base.get(node_id)

    def salience(self) -> dict[str, float]:
        return self.base.salience()  # as the store computed it (validity filters, not re-ranks)


def _valid(app: Historied, view: GraphView, valid_at: datetime | None) -> GraphView:
    if valid_at is None:
        return view
    test = valid_test(app, view, valid_at)
    keep = [n for n in view.graph.nodes if test(n)]
    return ValidView(view, _induced(view.graph, keep))


def _induced(G: nx.MultiDiGraph[str], keep: list[str]) -> nx.MultiDiGraph[str]:
    """The subgraph on ``keep``, sharing the attribute dicts (read-only use), built on the raw
    adjacency dicts (NetworkX's ``subgraph().copy()`` is ~10x slower)."""
    out: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    nodes, succ, pred = raw_adjacency(out)
    src_nodes, src_succ, _ = raw_adjacency(G)
    kept = set(keep)
    for node_id in keep:
        nodes[node_id] = src_nodes[node_id]
        succ[node_id] = {}
        pred[node_id] = {}
    for u in keep:
        for v, keyed in src_succ[u].items():
            if v in kept:
                succ[u][v] = keyed
                pred[v][u] = keyed
    out.graph.update(G.graph)
    return out


def parse_point(raw: str) -> AsOf:
    """A CLI's ``--as-of``: digits are a seq, anything else an ISO-8601 time."""
    text = raw.strip()
    if text.isdigit():
        return int(text)
    try:
        return parse_ts(text)
    except ValueError:
        raise ValidationError("asOf", f"{raw!r} is neither a seq nor an ISO-8601 time") from None
