"""Writing through the indexes: embed, derive edges, append one event, index.

The order matters: the embedding is computed before the store lock is taken (it is the slow
part), edges are derived and the event appended under the lock (so the edges see exactly the
graph they are written into), and the listener then indexes the node with the vector handed
over here instead of embedding it a second time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graph.drafts import DecisionDraft, EdgeDraft, MemoryDraft
from graph.enums import EdgeType, NodeKind
from graph.model import Edge, Node
from graph.timeutil import format_ts

from .autoedges import (
    AutoEdgeConfig,
    EdgePlan,
    Incoming,
    Suggestion,
    plan_edges,
    stream_of,
)
from .contradiction.tiers import Conflict, compatible_edge
from .entities import entity_keys
from .index import DualIndex
from .matrix import Vector
from .nodekeys import content_key
from .text import compose_embedding_text, keyword_text_parts

_EMBED_BATCH = 64
_LATE = "\uffff"  # sorts after any timestamp: a new node is recorded after everything stored


@dataclass
class WriteResult:
    """The stored node, the edges written with it, and suggestions left for the caller."""

    node: Node
    edges: list[Edge] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    created: bool = True


def _existing_memory(index: DualIndex, draft: MemoryDraft) -> str | None:
    if draft.external_id is not None:
        # The caller names its items: another name is another item, even with the same words.
        return index.store.find_external(draft.external_id)
    if draft.occurred_at is None:
        return None  # "now" differs on every call, so content alone cannot identify it
    key = content_key(str(draft.kind), draft.text, draft.source, format_ts(draft.occurred_at))
    return index.contents.get(key)


def remember(
    index: DualIndex,
    draft: MemoryDraft,
    actor: str,
    config: AutoEdgeConfig | None = None,
    vector: Vector | None = None,
) -> WriteResult:
    """Store a memory item with its derived edges; an item already stored is returned as is.

    "Already stored" means the same external id or, for items without one, the same text from
    the same source at the same time.
    """
    config = config or AutoEdgeConfig()
    if (found := _existing_memory(index, draft)) is not None:
        return WriteResult(index.store.get(found), created=False)
    if vector is None:
        vector = index.embed([draft.text])[0]
    store = index.store
    with store.writing():
        if (found := _existing_memory(index, draft)) is not None:
            return WriteResult(index.store.get(found), created=False)
        node_id = draft.id or store.allocate_id()
        occurred = draft.occurred_at or store.now()
        draft = draft.model_copy(update={"id": node_id, "occurred_at": occurred})
        explicit = [*draft.entities, *([draft.source] if draft.source else [])]
        item = Incoming(
            id=node_id,
            kind=NodeKind(draft.kind),
            text=draft.text,
            when=(format_ts(occurred), _LATE, node_id),
            source=draft.source,
            entities=tuple(entity_keys(draft.text, explicit)),
            category=None,
            searchable=draft.text,
            vector=vector,
            stream=stream_of(draft.project, actor),
        )
        plan = plan_edges(index, item, config)
        with index.prepared(draft.text, vector):
            node = store.remember(draft, actor, plan.edges)
        return _result(index, node, plan)


def remember_many(
    index: DualIndex,
    drafts: Sequence[MemoryDraft],
    actor: str,
    config: AutoEdgeConfig | None = None,
) -> list[WriteResult]:
    """:func:`remember` each draft in order, embedding them in batches first."""
    results: list[WriteResult] = []
    for start in range(0, len(drafts), _EMBED_BATCH):
        chunk = drafts[start : start + _EMBED_BATCH]
        vectors = index.embed([d.text for d in chunk])
        for draft, vector in zip(chunk, vectors, strict=True):
            results.append(remember(index, draft, actor, config, vector))
    return results


def record(
    index: DualIndex,
    draft: DecisionDraft,
    actor: str,
    config: AutoEdgeConfig | None = None,
    *,
    edges: Sequence[EdgeDraft] = (),
    confirm: Sequence[str] = (),
    vector: Vector | None = None,
    note: Mapping[str, Any] | None = None,
    links: Sequence[tuple[str, EdgeType]] = (),
    conflicts: Sequence[Conflict] = (),
    compatible: Sequence[str] = (),
    neighbours: list[tuple[str, float]] | None = None,
) -> WriteResult:
    """Record a decision with its derived edges (plus caller ``edges``).

    ``confirm`` lists ids of suggested edges (``relates_to`` candidates) the caller accepts up
    front; they are written with the decision instead of being suggested.
    ``links`` are ``(target, type)`` edges from the new decision, written in the same event.
    ``conflicts`` are the pairs the guardrail raised and let through (kept as suspected
    ``contradicts`` edges); ``compatible`` the decisions the caller declared compatible (a
    ``relates_to`` edge marked ``compatible``); ``neighbours`` the semantic neighbours of
    ``vector``, scanned under the caller's lock.
    """
    config = config or AutoEdgeConfig()
    text = compose_embedding_text(draft.text, draft.context, draft.pattern)
    if vector is None:
        vector = index.embed([text])[0]
    store = index.store
    with store.writing():
        node_id = draft.id or store.allocate_id()
        created = draft.created_at or store.now()
        draft = draft.model_copy(update={"id": node_id, "created_at": created})
        searchable = keyword_text_parts(
            draft.text,
            draft.context,
            [r.text for r in draft.reasons],
            draft.tags,
            draft.pattern,
            draft.entities,
        )
        item = Incoming(
            id=node_id,
            kind=NodeKind.DECISION,
            text=draft.text,
            when=(format_ts(created), _LATE, node_id),
            source=None,
            entities=tuple(entity_keys(draft.text, draft.entities)),
            category=None if draft.category is None else str(draft.category),
            searchable=searchable,
            vector=vector,
            stream=stream_of(draft.project, actor),
        )
        plan = plan_edges(index, item, config, conflicts, neighbours)
        wanted = set(confirm)
        kept: list[Suggestion] = []
        for suggestion in plan.suggestions:
            if suggestion.target in wanted:
                plan.edges.append(
                    EdgeDraft(
                        node_id,
                        suggestion.target,
                        suggestion.type,
                        max(suggestion.score, 1e-6),
                        context=suggestion.reason,
                        origin="auto",
                        meta={"signal": "confirmed"},
                    )
                )
            else:
                kept.append(suggestion)
        plan.suggestions = kept
        plan.edges.extend(edges)
        plan.edges.extend(EdgeDraft(node_id, target, kind) for target, kind in links)
        # First, so that the declaration wins over a derived edge of the same type.
        plan.edges[:0] = [compatible_edge(node_id, target) for target in compatible]
        declared = set(compatible)
        plan.suggestions = [s for s in plan.suggestions if s.target not in declared]
        with index.prepared(text, vector):
            node = store.record(draft, actor, _dedupe(plan.edges), note)
        return _result(index, node, plan)


def _dedupe(edges: Sequence[EdgeDraft]) -> list[EdgeDraft]:
    seen: set[tuple[str, str, str]] = set()
    out: list[EdgeDraft] = []
    for edge in edges:
        key = (edge.source, edge.target, str(EdgeType(edge.type)))
        if key not in seen:
            seen.add(key)
            out.append(edge)
    return out


def _result(index: DualIndex, node: Node, plan: EdgePlan) -> WriteResult:
    G = index.store.graph
    edges: list[Edge] = []
    for draft in plan.edges:
        key = str(EdgeType(draft.type))
        attrs = G.get_edge_data(draft.source, draft.target, key=key)
        if attrs is not None:
            edges.append(Edge.from_attrs(draft.source, draft.target, key, attrs))
    return WriteResult(node, edges, plan.suggestions)
