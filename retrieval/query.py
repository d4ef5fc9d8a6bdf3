"""CSTP ``queryDecisions``: semantic, keyword and hybrid modes, plus the graph (dual) mode.

Hybrid scores follow CSTP (``hybridWeight`` x semantic + (1 - hybridWeight) x keyword) but each
side is divided by its best score instead of min-max normalised, so the weakest hit of a list
keeps a score proportional to its strength instead of dropping to zero.

Graph mode (``decision_id`` given) merges the decision's neighbours within ``hops`` with the
hybrid results; a decision found both ways ranks above one found one way only (as
``dual_query`` ranks them), then by score, then by id.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum

from graph.builders import raw_adjacency
from graph.enums import NodeKind
from graph.errors import NodeNotFoundError, ValidationError

from .filters import NO_FILTERS, RecallFilters, accepting
from .index import DualIndex
from .keyword import KeywordScores
from .matrix import Vector
from .planner import search_keywords


class RetrievalMode(StrEnum):
    SEMANTIC = "semantic"
    KEYWORD = "keyword"
    HYBRID = "hybrid"
    GRAPH = "graph"


@dataclass
class QueryHit:
    id: str
    score: float
    semantic: float | None = None
    keyword: float | None = None
    hops: int | None = None
    found_by: list[str] = field(default_factory=list)

    @property
    def found_by_both(self) -> bool:
        """Reached through the graph *and* matched by text (dual retrieval's best tier)."""
        return "graph" in self.found_by and len(self.found_by) > 1

    @property
    def distance(self) -> float | None:
        """CSTP's cosine distance (1 - cosine) when the vector side saw this hit."""
        return None if self.semantic is None else round(1.0 - self.semantic, 6)


@dataclass
class QueryResult:
    hits: list[QueryHit]
    total: int
    mode: RetrievalMode
    query_time_ms: float


def _decisions_only(filters: RecallFilters) -> RecallFilters:
    if filters.kind is not None:
        return filters
    return filters.model_copy(update={"kind": [NodeKind.DECISION]})


def query_decisions(
    index: DualIndex,
    query: str,
    mode: RetrievalMode | str = RetrievalMode.HYBRID,
    limit: int = 10,
    *,
    filters: RecallFilters | None = None,
    hybrid_weight: float = 0.7,
    decision_id: str | None = None,
    hops: int = 2,
    vector: Vector | None = None,
) -> QueryResult:
    """Rank decisions for ``query``; every filter applies in every mode.

    ``vector``: the query's embedding when the caller already has it (it is not embedded again).
    """
    started = time.perf_counter()
    try:
        mode = RetrievalMode(mode)
    except ValueError:
        allowed = ", ".join(m.value for m in RetrievalMode)
        raise ValidationError("mode", f"{mode!r} is not one of: {allowed}") from None
    if not 0.0 <= hybrid_weight <= 1.0:
        raise ValidationError("hybrid_weight", f"must be between 0 and 1, got {hybrid_weight!r}")
    if not 1 <= limit <= 500:
        raise ValidationError("limit", f"must be between 1 and 500, got {limit!r}")
    if mode is RetrievalMode.GRAPH and decision_id is None:
        raise ValidationError("decision_id", "is required in graph mode")
    if not 1 <= hops <= 5:
        raise ValidationError("hops", f"must be between 1 and 5, got {hops!r}")
    active = _decisions_only(filters or NO_FILTERS)
    if mode is RetrievalMode.KEYWORD:
        vector = None
    elif vector is None:
        vector = index.embed([query])[0]
    with index.store.lock:
        if decision_id is not None and decision_id not in index.store.graph:
            raise NodeNotFoundError(decision_id, "decision_id")
        hits = _rank(index, query, vector, mode, limit, active, hybrid_weight, decision_id, hops)
    return QueryResult(
        hits=hits[:limit],
        total=len(hits),
        mode=mode,
        query_time_ms=(time.perf_counter() - started) * 1000.0,
    )


def _rank(
    index: DualIndex,
    query: str,
    vector: Vector | None,
    mode: RetrievalMode,
    limit: int,
    filters: RecallFilters,
    weight: float,
    decision_id: str | None,
    hops: int,
) -> list[QueryHit]:
    depth = max(limit * 3, 30)
    hits: dict[str, QueryHit] = {}

    accept = accepting(index.store.graph, filters)

    if vector is not None:
        found = index.vector_search(vector, depth, filters, accept)
        for node_id, cosine in found[:depth]:
            if cosine <= 0:
                break  # orthogonal or opposite: no semantic evidence at all
            hits[node_id] = QueryHit(node_id, 0.0, semantic=cosine, found_by=["semantic"])
    scores = None if mode is RetrievalMode.SEMANTIC else index.keyword.query(query)
    if scores is not None:
        for node_id, value in search_keywords(index, scores, depth, filters, accept):
            hit = hits.setdefault(node_id, QueryHit(node_id, 0.0))
            hit.keyword = value
            hit.found_by.append("keyword")
    _combine(index, hits, mode, weight, scores, vector)
    if decision_id is not None:
        for node_id, distance in _within(index, decision_id, hops).items():
            if not accept(node_id):
                continue
            hit = hits.setdefault(node_id, QueryHit(node_id, 0.0))
            hit.hops = distance
            hit.found_by.append("graph")
            hit.score = round(hit.score + 1.0 / distance, 6)
    if decision_id is not None:
        return sorted(hits.values(), key=lambda h: (not h.found_by_both, -h.score, h.id))
    return sorted(hits.values(), key=lambda h: (-h.score, h.id))


def _combine(
    index: DualIndex,
    hits: dict[str, QueryHit],
    mode: RetrievalMode,
    weight: float,
    scores: KeywordScores | None,
    vector: Vector | None,
) -> None:
    if not hits:
        return
    if mode in (RetrievalMode.HYBRID, RetrievalMode.GRAPH):
        # Fill in the side a hit was not found by, so both halves are real scores.
        missing = [h.id for h in hits.values() if h.semantic is None]
        if missing and vector is not None:
            for node_id, cosine in index.matrix.similarities(vector, missing).items():
                hits[node_id].semantic = cosine
        for hit in hits.values():
            if hit.keyword is None and scores is not None:
                hit.keyword = scores.of(hit.id)
    best_semantic = max([max(h.semantic or 0.0, 0.0) for h in hits.values()]) or 1.0
    best_keyword = max([h.keyword or 0.0 for h in hits.values()]) or 1.0
    for hit in hits.values():
        semantic = max(hit.semantic or 0.0, 0.0) / best_semantic
        keyword = (hit.keyword or 0.0) / best_keyword
        if mode is RetrievalMode.SEMANTIC:
            score = semantic
        elif mode is RetrievalMode.KEYWORD:
            score = keyword
        else:
            score = weight * semantic + (1.0 - weight) * keyword
        hit.score = round(score, 6)


def _within(index: DualIndex, start: str, hops: int) -> dict[str, int]:
    """Nodes within ``hops`` of ``start`` ignoring direction, with their distance."""
    raw = raw_adjacency(index.store.graph)
    distance = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if distance[node] == hops:
            continue
        for nxt in sorted({*raw.succ[node], *raw.pred[node]}):
            if nxt not in distance:
                distance[nxt] = distance[node] + 1
                queue.append(nxt)
    del distance[start]
    return distance
