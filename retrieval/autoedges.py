"""Edges derived on write: temporal, entity, semantic and causal; contradiction suggestions.

Everything here is deterministic (no model but the embedder, no randomness) and reads only the
in-memory indexes, so deriving the edges of one new item takes milliseconds. The edges are
written in the same log event as the item, so replay never re-derives them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from graph.drafts import EdgeDraft
from graph.enums import EdgeType, NodeKind
from graph.model import MetaValue

from .contradiction.tiers import Conflict, suspected_edge
from .index import DualIndex
from .matrix import Vector
from .structures import TimeKey
from .text import terms


class AutoEdgeConfig(BaseModel):
    """Caps and thresholds of automatic edge derivation (defaults from the four-graph model)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temporal_window_hours: float = Field(default=24.0, gt=0)
    #: Proximity edges per item: to the items just before it in its stream (see
    #: :func:`temporal_edges`); 1 makes a session a chain, not a clique.
    temporal_fanout: int = Field(default=1, ge=0, le=100)
    entity_links_per_entity: int = Field(default=5, ge=0, le=100)
    entity_links_per_insert: int = Field(default=50, ge=0, le=500)
    semantic_link_threshold: float = Field(default=0.80, ge=-1, le=1)
    semantic_links: int = Field(default=3, ge=0, le=50)
    semantic_candidate_floor: float = Field(default=0.40, ge=-1, le=1)
    semantic_candidates: int = Field(default=5, ge=0, le=50)
    #: How many stored items (closest by sign sketch) the neighbour scan rescores exactly;
    #: 0 scans every vector exactly (see :meth:`EmbeddingMatrix.nearest_sketched`).
    semantic_scan_pool: int = Field(default=512, ge=0, le=1_000_000)
    causal_recent: int = Field(default=10, ge=0, le=100)
    causal_min_overlap: float = Field(default=0.15, ge=0, le=1)


@dataclass(frozen=True, slots=True)
class Suggestion:
    """An edge the caller may confirm (``relates_to`` candidates, suspected contradictions)."""

    target: str
    type: EdgeType
    score: float
    reason: str


@dataclass
class EdgePlan:
    edges: list[EdgeDraft] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Incoming:
    """The parts of a not-yet-written node that edge derivation reads."""

    id: str
    kind: NodeKind
    text: str
    when: TimeKey
    source: str | None
    entities: tuple[str, ...]
    category: str | None
    searchable: str  # keyword text: statement, context, reasons...
    vector: Vector
    stream: str | None = None  # :func:`stream_of` the item; None: every item is one stream


_CAUSAL_CUE = re.compile(
    r"\b(because|due to|caused|causes|cause of|led to|leads to|as a result|result(?:ed|s)? in|"
    r"therefore|so that|thanks to|owing to|triggered|consequently|hence|in response to)\b",
    re.IGNORECASE,
)
_NODE_ID = re.compile(r"\b[0-9a-f]{8}\b")

Signal = Literal["backbone", "proximity", "entity", "semantic", "causal", "cites"]


def _edge(
    new_id: str, target: str, edge_type: EdgeType, weight: float, signal: Signal, **meta: MetaValue
) -> EdgeDraft:
    return EdgeDraft(
        new_id,
        target,
        edge_type,
        weight=round(max(weight, 1e-6), 6),
        origin="auto",
        meta={"signal": signal, **meta},
    )


def semantic_neighbours(
    index: DualIndex, vector: Vector, config: AutoEdgeConfig
) -> list[tuple[str, float]]:
    """The nearest stored items :func:`semantic_edges` reads: the ``semantic_scan_pool`` items
    whose sign sketches are closest, rescored by exact cosine (every item when the pool is 0).

    The pool replaces an exact scan of the whole matrix (~15 ms at 100k x 384, memory-bound)
    by a sketch scan of 1/32 of its bytes (~1 ms); ``bench/bench_neighbours.py`` measures how
    often the derived links and suggestions differ from the exact scan's.
    """
    k = config.semantic_links + config.semantic_candidates + 8
    return index.matrix.nearest_sketched(vector, k, config.semantic_scan_pool)


def plan_edges(
    index: DualIndex,
    item: Incoming,
    config: AutoEdgeConfig,
    conflicts: Sequence[Conflict] = (),
    neighbours: list[tuple[str, float]] | None = None,
) -> EdgePlan:
    """Derive the edges (and suggestions) for ``item`` against what the indexes hold now.

    ``conflicts``: the pairs the guardrail raised for this decision and let through (review
    tier, or a block overridden): each becomes a ``contradicts`` edge marked ``suspected``.
    ``neighbours``: :func:`semantic_neighbours` of
    ``item.vector``, when the caller scanned the matrix already (under the same lock).
    """
    plan = EdgePlan()
    linked: set[tuple[str, EdgeType]] = set()

    def add(draft: EdgeDraft) -> None:
        key = (draft.target, EdgeType(draft.type))
        if draft.target != item.id and key not in linked and draft.target in index.store.graph:
            linked.add(key)
            plan.edges.append(draft)

    for draft in temporal_edges(index, item, config):
        add(draft)
    for draft in entity_edges(index, item, config):
        add(draft)
    if neighbours is None:
        neighbours = semantic_neighbours(index, item.vector, config)
    for maybe_edge, suggestion in semantic_edges(neighbours, item, config):
        if maybe_edge is not None:
            add(maybe_edge)
        if suggestion is not None:
            plan.suggestions.append(suggestion)
    for draft in causal_edges(index, item, config):
        add(draft)
    for c in conflicts:  # the guardrail's raised pairs, kept until someone resolves them
        add(suspected_edge(item.id, c))
    # A suspected contradiction is the more specific reading of a mid-band similarity.
    disputed = {e.target for e in plan.edges if EdgeType(e.type) is EdgeType.CONTRADICTS}
    plan.suggestions = [
        s for s in plan.suggestions if s.type is not EdgeType.RELATES_TO or s.target not in disputed
    ]
    return plan


def stream_of(project: object, recorded_by: object) -> str:
    """The stream an item belongs to for proximity edges: its project and who recorded it
    (an agent's session in one project is one stream)."""
    return f"{project or ''}\x1f{recorded_by or ''}"


def temporal_edges(index: DualIndex, item: Incoming, config: AutoEdgeConfig) -> list[EdgeDraft]:
    """Backbone to the previous item from the same source, and proximity edges in the stream.

    Proximity links only to the ``temporal_fanout`` items just before this one (timeline
    order) in its stream (:func:`stream_of`) within ``temporal_window_hours``, so a session of
    decisions is a chain, not a clique, and other agents' or projects' concurrent work is not
    linked for sharing the hour. Weight ``1 / (1 + hours)`` divided by the neighbour's rank.
    """
    out: list[EdgeDraft] = []
    if item.source is not None:
        previous = index.timeline.previous_from_source(item.source, item.when)
        if previous is not None:
            out.append(_edge(item.id, previous, EdgeType.TEMPORAL, 1.0, "backbone"))
    G = index.store.graph

    def same_stream(node_id: str) -> bool:
        if item.stream is None:
            return True
        attrs = G.nodes[node_id] if node_id in G else None
        return attrs is not None and (
            stream_of(attrs.get("project"), attrs.get("recorded_by")) == item.stream
        )

    near = index.timeline.previous(
        item.when, config.temporal_window_hours, config.temporal_fanout, same_stream
    )
    for rank, neighbour in enumerate(near, start=1):
        weight = 1.0 / ((1.0 + neighbour.hours) * rank)
        out.append(
            _edge(
                item.id,
                neighbour.id,
                EdgeType.TEMPORAL,
                weight,
                "proximity",
                hours=round(neighbour.hours, 3),
            )
        )
    return out


def entity_edges(index: DualIndex, item: Incoming, config: AutoEdgeConfig) -> list[EdgeDraft]:
    """Links to recent items sharing an entity, rarer entities first, weight from summed IDF."""
    weights: dict[str, float] = {}
    shared: dict[str, str] = {}
    ranked = sorted(item.entities, key=lambda key: (-index.entities.idf(key), key))
    for key in ranked:
        idf = index.entities.idf(key)
        if idf <= 0:
            continue
        for target in index.entities.latest(key, config.entity_links_per_entity, before=item.when):
            if target not in weights and len(weights) >= config.entity_links_per_insert:
                continue
            weights[target] = weights.get(target, 0.0) + idf
            shared.setdefault(target, key)
    return [
        _edge(
            item.id, target, EdgeType.ENTITY, total / (1.0 + total), "entity", entity=shared[target]
        )
        for target, total in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def semantic_edges(
    neighbours: list[tuple[str, float]], item: Incoming, config: AutoEdgeConfig
) -> list[tuple[EdgeDraft | None, Suggestion | None]]:
    """``semantic`` links at high cosine (top few); mid-band neighbours become suggestions."""
    out: list[tuple[EdgeDraft | None, Suggestion | None]] = []
    links = candidates = 0
    for target, cosine in neighbours:
        if cosine >= config.semantic_link_threshold and links < config.semantic_links:
            links += 1
            out.append(
                (
                    _edge(
                        item.id,
                        target,
                        EdgeType.SEMANTIC,
                        cosine,
                        "semantic",
                        cosine=round(cosine, 4),
                    ),
                    None,
                )
            )
        elif (
            config.semantic_candidate_floor <= cosine < config.semantic_link_threshold
            and candidates < config.semantic_candidates
        ):
            candidates += 1
            reason = f"cosine {cosine:.2f}"
            out.append((None, Suggestion(target, EdgeType.RELATES_TO, round(cosine, 4), reason)))
    return out


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def causal_edges(index: DualIndex, item: Incoming, config: AutoEdgeConfig) -> list[EdgeDraft]:
    """``caused_by`` to cited decision ids; ``causal`` to recent items a causal cue overlaps."""
    out: list[EdgeDraft] = []
    for cited in sorted(set(_NODE_ID.findall(item.searchable))):
        if cited != item.id and cited in index.store.graph:
            out.append(_edge(item.id, cited, EdgeType.CAUSED_BY, 1.0, "cites"))
    if not _CAUSAL_CUE.search(item.text):
        return out
    mine = set(terms(item.text))
    recent = [i for i in index.timeline.latest(config.causal_recent + 1) if i != item.id]
    for target in recent[: config.causal_recent]:
        theirs = set(index.keyword.terms_of(target)) if target in index.keyword else set()
        overlap = _overlap(mine, theirs)
        if overlap >= config.causal_min_overlap:
            out.append(
                _edge(
                    item.id, target, EdgeType.CAUSAL, overlap, "causal", overlap=round(overlap, 4)
                )
            )
    return out
