"""The read use cases over decisions and memory: get, recall, query, list and count."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import networkx as nx

from graph.enums import NodeKind
from graph.export import export_graph
from graph.lifecycle import NodeState, node_state
from graph.model import Node
from graph.timeutil import format_ts
from retrieval.filters import RecallFilters, passes
from retrieval.matrix import Vector
from retrieval.query import QueryResult, RetrievalMode, query_decisions
from retrieval.recall import RecallHit, RecallResult, recall
from retrieval.relevance import relevance

from .context import Decigraph
from .history import NOW, At, GraphView, Historied, viewing
from .inputs import DecisionListing, DecisionQuery, RecallQuery

_STAKES_ORDER = {"low": 0, "medium": 1, "high": 2, "critical": 3}


def get_node(app: Decigraph, node_id: str, at: At = NOW) -> Node | None:
    """The decision or memory item, or ``None`` when there is none with that id."""
    with viewing(app, at) as view:
        return view.get(node_id) if node_id in view.graph else None


@dataclass(frozen=True)
class Read:
    """A stored node and its state as every answer reports it (effective lifecycle, review
    status, supersession links), read in one consistent view."""

    node: Node
    state: NodeState


def _read(view: GraphView, node_id: str) -> Read:
    """Call while holding the view (:func:`~service.usecases.history.viewing`)."""
    return Read(view.get(node_id), node_state(view.graph, node_id))


def read_node(app: Decigraph, node_id: str, at: At = NOW) -> Read | None:
    """The decision or memory item with its reported state, or ``None`` when there is none."""
    with viewing(app, at) as view:
        return _read(view, node_id) if node_id in view.graph else None


@dataclass(frozen=True)
class Recalled:
    """A recall answer with the stored node of every hit (read in the same consistent view)."""

    answer: RecallResult
    nodes: list[tuple[RecallHit, Node]]
    states: dict[str, NodeState]
    #: Each hit's absolute relevance to the query (:func:`relevance_of`).
    relevance: dict[str, float] = field(default_factory=dict)


def recall_items(app: Decigraph, q: RecallQuery, at: At = NOW) -> Recalled:
    """Recall over the indexes as they are now; with ``at``, only the hits that existed then
    (and were valid then, with ``valid_at``), each read as it stood then (see the README:
    the vector side ranks today's text)."""
    limit = q.limit if at.now else q.limit * 4
    answer = recall(app.index, q.query, limit, intent=q.intent, filters=q.filters)
    rel, _ = relevance_of(app, q.query, [h.id for h in answer.hits])
    floor = app.settings.recall_floor if q.min_relevance is None else q.min_relevance
    kept = _above_floor(answer.hits, rel, floor)
    with viewing(app, at) as view:
        reads = [(h, _read(view, h.id)) for h in kept if h.id in view.graph][: q.limit]
    states = {r.node.id: r.state for _, r in reads}
    return Recalled(answer, [(h, r.node) for h, r in reads], states, rel)


def _above_floor(hits: list[RecallHit], rel: dict[str, float], floor: float) -> list[RecallHit]:
    """Hits at least ``floor`` relevant, and hits the graph walk reached from one of those
    (a cause or a dependency of a relevant node is worth its place whatever its words)."""
    kept = {h.id for h in hits if rel.get(h.id, 0.0) >= floor}
    return [h for h in hits if h.id in kept or (h.path and h.path[0].walked_from in kept)]


def relevance_of(
    app: Decigraph, text: str, ids: Collection[str], vector: Vector | None = None
) -> tuple[dict[str, float], dict[str, float]]:
    """The absolute relevance (:mod:`retrieval.relevance`) of each node in ``ids`` to ``text``,
    and its cosine: comparable across queries, unlike a rank score (``vector`` is ``text``'s
    embedding when already computed)."""
    if not ids:
        return {}, {}
    if vector is None:
        vector = app.index.embed([text])[0]
    cosines = app.index.matrix.similarities(vector, ids)
    best = app.index.vector_search(vector, 1)
    top = max([c for _, c in best] + list(cosines.values()))
    with app.store.lock:
        return relevance(cosines, app.index.keyword, text, best=top), cosines


@dataclass(frozen=True)
class Queried:
    result: QueryResult
    nodes: dict[str, Node]
    states: dict[str, NodeState]
    #: Each hit's absolute relevance and cosine (absent in keyword mode: no embedding).
    relevance: dict[str, float] = field(default_factory=dict)
    cosine: dict[str, float] = field(default_factory=dict)


def query(app: Decigraph, q: DecisionQuery, vector: Vector | None = None, at: At = NOW) -> Queried:
    """Ranked decisions for ``q``; ``vector`` is the query's embedding when already computed.
    With ``at``, as :func:`recall_items`: hits that existed (and were valid) then, as then."""
    if vector is None and q.retrieval_mode is not RetrievalMode.KEYWORD:
        vector = app.index.embed([q.query])[0]
    result = query_decisions(
        app.index,
        q.query,
        q.retrieval_mode,
        q.limit if at.now else q.limit * 4,
        filters=q.filters,
        hybrid_weight=q.hybrid_weight,
        decision_id=q.decision_id,
        hops=q.hops,
        vector=vector,
    )
    with viewing(app, at) as view:
        reads = {h.id: _read(view, h.id) for h in result.hits if h.id in view.graph}
    if not at.now:
        hits = [h for h in result.hits if h.id in reads][: q.limit]
        result = replace(result, hits=hits)
        reads = {h.id: reads[h.id] for h in hits}
    nodes = {node_id: r.node for node_id, r in reads.items()}
    states = {node_id: r.state for node_id, r in reads.items()}
    if vector is None:
        return Queried(result, nodes, states)
    rel, cosines = relevance_of(app, q.query, list(nodes), vector)
    return Queried(result, nodes, states, rel, cosines)


def list_decisions(
    app: Decigraph, q: DecisionListing, also: RecallFilters | None = None, at: At = NOW
) -> tuple[list[Read], int]:
    """One page of decisions passing the filters (and ``also``, when given), and how many pass
    in all.

    ``status`` and ``lifecycle`` filter exactly as in ``queryDecisions`` and ``recall``
    (:class:`retrieval.filters.RecallFilters`); a listing shows superseded decisions unless
    ``include_superseded`` is off.
    """
    filters = RecallFilters(
        kind=[NodeKind.DECISION],
        category=None if q.category is None else [q.category],
        stakes=None if q.stakes is None else [q.stakes],
        status=None if q.status is None else [q.status],
        lifecycle=q.lifecycle,
        tags=q.tags,
        project=q.project,
        date_after=q.date_from,
        date_before=q.date_to,
        include_superseded=q.include_superseded,
    )
    words = _search_words(q.search)
    with viewing(app, at) as view:
        G = view.graph
        rows = [
            (node_id, attrs)
            for node_id, attrs in G.nodes(data=True)
            if passes(G, filters, node_id)
            and (also is None or passes(G, also, node_id))
            and (q.agent is None or attrs.get("recorded_by") == q.agent)
            and (not words or _has_words(attrs, words))
        ]

        def key(row: tuple[str, dict[str, Any]]) -> tuple[Any, str]:
            node_id, attrs = row
            if q.sort == "confidence":
                return (attrs.get("confidence", -1.0), node_id)
            if q.sort == "stakes":
                return (_STAKES_ORDER.get(attrs.get("stakes", ""), -1), node_id)
            if q.sort in ("category", "status"):
                return (str(attrs.get(q.sort, "")), node_id)
            return (attrs["created_at"], node_id)

        rows.sort(key=key, reverse=q.order == "desc")
        page = [_read(view, node_id) for node_id, _ in rows[q.offset : q.offset + q.limit]]
        return page, len(rows)


_WORD = re.compile(r"\w+")


def _search_words(search: str | None) -> list[str]:
    """CSTP's listDecisions ``search``: every word must occur (operators are just words)."""
    return [w.casefold() for w in _WORD.findall(search or "")]


def _has_words(attrs: dict[str, Any], words: list[str]) -> bool:
    """Whether every word occurs in the statement, the context or the pattern (as CSTP's
    full-text search over decision, context and pattern, by word prefix)."""
    text = " ".join(str(attrs.get(k) or "") for k in ("text", "context", "pattern")).casefold()
    present = set(_WORD.findall(text))
    return all(any(token.startswith(word) for token in present) for word in words)


@dataclass(frozen=True)
class DecisionCounts:
    total: int
    by: dict[str, dict[str, int]]
    top_tags: list[tuple[str, int]]
    #: Decisions created in the last 24 hours, 7 days and 30 days (with the same filters).
    recent: dict[str, int]


def count_decisions(
    app: Decigraph,
    project: str | None = None,
    date_from: datetime | None = None,
    date_to: datetime | None = None,
) -> DecisionCounts:
    """Decisions by category, stakes, review status, effective lifecycle, agent and day; the 20
    most used tags; how many were made recently. ``date_from``/``date_to`` bound ``created_at``
    (inclusive)."""
    counts: dict[str, Counter[str]] = {
        name: Counter() for name in ("category", "stakes", "status", "lifecycle", "agent", "day")
    }
    tags: Counter[str] = Counter()
    total = 0
    low = format_ts(date_from) if date_from is not None else None
    high = format_ts(date_to) if date_to is not None else None
    with app.store.lock:
        now = app.store.now()
        since = {
            "last24h": format_ts(now - timedelta(days=1)),
            "last7d": format_ts(now - timedelta(days=7)),
            "last30d": format_ts(now - timedelta(days=30)),
        }
        recent = dict.fromkeys(since, 0)
        G = app.store.graph
        for node_id, attrs in G.nodes(data=True):
            if attrs.get("kind", "decision") != "decision":
                continue
            if project is not None and attrs.get("project") != project:
                continue
            created = str(attrs["created_at"])
            if (low is not None and created < low) or (high is not None and created > high):
                continue
            for window, start in since.items():
                if created >= start:
                    recent[window] += 1
            total += 1
            counts["category"][str(attrs.get("category", "none"))] += 1
            counts["stakes"][str(attrs.get("stakes", "none"))] += 1
            state = node_state(G, node_id)
            counts["status"][state.status.value] += 1
            counts["lifecycle"][state.lifecycle.value] += 1
            counts["agent"][str(attrs.get("recorded_by"))] += 1
            counts["day"][str(attrs["created_at"])[:10]] += 1
            tags.update(attrs.get("tags", ()))
    top = sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
    by = {k: dict(sorted(v.items())) for k, v in counts.items()}
    return DecisionCounts(total, by, top, recent)


@dataclass(frozen=True)
class StoreStatus:
    events: int
    nodes: int
    edges: int


def store_status(app: Decigraph) -> StoreStatus:
    """How far the log goes and how big the graph is."""
    with app.store.lock:
        G = app.store.graph
        return StoreStatus(app.store.seq, G.number_of_nodes(), G.number_of_edges())


def export_document(
    app: Historied, format: str, at: At = NOW, as_of: dict[str, Any] | None = None
) -> dict[str, str]:
    """The whole graph in an export format (:func:`graph.export.export_graph`): file -> text,
    with every node's salience; as it stood at ``at`` (``as_of`` is recorded in JSON)."""
    with viewing(app, at) as view:
        return export_graph(view.graph, format, view.salience(), as_of)


def graph_copy(app: Decigraph, at: At = NOW) -> nx.MultiDiGraph[str]:
    """A copy of the graph as it is now (or at ``at``), for analyses that run outside the
    lock."""
    with viewing(app, at) as view:
        return view.graph.copy()


def refresh(app: Decigraph) -> int:
    """Read-only views: apply the writer's new events (indexes follow); how many."""
    if not app.read_only:
        return 0
    with app.store.lock:
        count = app.store.refresh()
        app.index.flush()
        return count
