"""The graph read use cases: neighbourhoods, paths, lineage, contradictions, blocked
work and salience. Each reads one consistent view under the store lock and returns the
algorithm's result with a :class:`NodeInfo` for every node it names.

Explicit by default: neighbourhoods, neighbours, paths and the degrees in every
:class:`NodeInfo` count only the decision relations (:data:`graph.enums.DECISION_EDGE_TYPES`);
the derived families (temporal, entity, semantic, causal) come in with ``include_derived``,
or by naming their types in ``edge_types``, which always wins. Lineage follows ``depends_on``
unless told otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from graph.algorithms.contradictions import (
    BlockedChain,
    Contradiction,
    find_contradictions,
    get_blocked_chain,
)
from graph.algorithms.paths import Path, find_path
from graph.algorithms.salience import get_high_salience
from graph.algorithms.traversal import (
    Neighbor,
    Reached,
    Subgraph,
    ancestors,
    descendants,
    get_graph,
    get_neighbors,
)
from graph.builders import raw_adjacency
from graph.enums import DECISION_EDGE_TYPES, DERIVED_EDGE_TYPES, Direction, EdgeType
from graph.errors import NodeNotFoundError
from graph.lifecycle import effective_lifecycle

from .context import Decigraph
from .history import NOW, At, GraphView, viewing


@dataclass(frozen=True)
class NodeInfo:
    """What a graph answer shows of a node: its attributes, effective lifecycle and degrees
    (stored edges in and out; decision relations only unless derived edges were asked for)."""

    id: str
    attrs: dict[str, Any]
    lifecycle: str
    in_degree: int
    out_degree: int
    salience: float | None = None


Infos = dict[str, NodeInfo]


_DERIVED = frozenset(t.value for t in DERIVED_EDGE_TYPES)


def edge_types_for(
    edge_types: Sequence[EdgeType] | None, include_derived: bool
) -> Sequence[EdgeType] | None:
    """The types a query walks: those named, else the decision relations, else (with
    ``include_derived``) every type (``None``)."""
    if edge_types:
        return edge_types
    return None if include_derived else DECISION_EDGE_TYPES


def _degree(keyed: dict[str, dict[str, Any]], include_derived: bool) -> int:
    if include_derived:
        return sum(len(keys) for keys in keyed.values())
    return sum(1 for keys in keyed.values() for key in keys if key not in _DERIVED)


def _infos(
    view: GraphView,
    ids: Iterable[str],
    salience: dict[str, float] | None = None,
    include_derived: bool = False,
) -> Infos:
    G = view.graph
    _, succ, pred = raw_adjacency(G)
    out: Infos = {}
    for node_id in ids:
        if node_id in out or node_id not in G:
            continue
        out[node_id] = NodeInfo(
            node_id,
            dict(G.nodes[node_id]),
            effective_lifecycle(G, node_id).value,
            _degree(pred[node_id], include_derived),
            _degree(succ[node_id], include_derived),
            None if salience is None else salience.get(node_id, 0.0),
        )
    return out


def _need(view: GraphView, node_id: str, field: str) -> None:
    if node_id not in view.graph:
        raise NodeNotFoundError(node_id, field)


def neighbourhood(
    app: Decigraph,
    node_id: str,
    depth: int,
    edge_types: Sequence[EdgeType] | None,
    direction: Direction,
    include_derived: bool = False,
    at: At = NOW,
    *,
    limit: int | None = None,
    offset: int = 0,
) -> tuple[Subgraph, Infos]:
    """The subgraph within ``depth`` hops, its nodes with their salience; with ``limit``, one
    page of it (:func:`graph.algorithms.traversal.get_graph`: a hub's thousands of neighbours
    come a page at a time)."""
    types = edge_types_for(edge_types, include_derived)
    with viewing(app, at) as view:
        _need(view, node_id, "node_id")
        sub = get_graph(view.graph, node_id, depth, types, direction, limit=limit, offset=offset)
        salience = view.salience()  # cached per log position; sizes the explorer
        return sub, _infos(view, (n.id for n in sub.nodes), salience, include_derived)


def neighbours(
    app: Decigraph,
    node_id: str,
    direction: Direction,
    edge_type: EdgeType | None,
    limit: int,
    include_derived: bool = False,
    at: At = NOW,
) -> tuple[list[Neighbor], int, Infos]:
    types = edge_types_for(None if edge_type is None else [edge_type], include_derived)
    with viewing(app, at) as view:
        _need(view, node_id, "node_id")
        page, total = get_neighbors(view.graph, node_id, direction, types, limit)
        return page, total, _infos(view, (n.node_id for n in page), None, include_derived)


def paths(
    app: Decigraph,
    source: str,
    target: str,
    edge_types: Sequence[EdgeType] | None,
    *,
    directed: bool,
    max_paths: int,
    max_length: int,
    include_derived: bool = False,
    at: At = NOW,
) -> list[Path]:
    types = edge_types_for(edge_types, include_derived)
    with viewing(app, at) as view:
        _need(view, source, "source")
        _need(view, target, "target")
        return find_path(
            view.graph,
            source,
            target,
            types,
            directed=directed,
            max_paths=max_paths,
            max_length=max_length,
        )


Walk = Callable[..., list[Reached]]
LINEAGE: dict[str, Walk] = {"ancestors": ancestors, "descendants": descendants}


def lineage(
    app: Decigraph,
    node_id: str,
    direction: str,
    edge_types: Sequence[EdgeType] | None,
    max_depth: int | None,
    at: At = NOW,
) -> tuple[list[Reached], Infos]:
    """What ``node_id`` builds on (``ancestors``) or what builds on it (``descendants``)."""
    with viewing(app, at) as view:
        _need(view, node_id, "node_id")
        types = edge_types or [EdgeType.DEPENDS_ON]
        reached = LINEAGE[direction](view.graph, node_id, types, max_depth)
        return reached, _infos(view, (r.node_id for r in reached))


def contradictions(
    app: Decigraph, include_inactive: bool, limit: int, at: At = NOW
) -> tuple[list[Contradiction], Infos]:
    """Live: from the pairs the store maintains (:mod:`graph.riskindex`); in the past: the
    from-scratch scan. Both give the same answer."""
    with viewing(app, at) as view:
        if view is app.store:
            found = app.store.risk.contradictions(
                view.graph, view.salience(), include_inactive=include_inactive, limit=limit
            )
        else:
            found = find_contradictions(
                view.graph, view.salience(), include_inactive=include_inactive, limit=limit
            )
        return found, _infos(view, (n for c in found for n in (c.a, c.b)))


def every_blocked_chain(app: Decigraph) -> list[BlockedChain]:
    """Every blocked active decision's chain, once per log position (a shared list:
    ``getBlockedChain``, the ``ready`` queue and the session context read the same one), from
    the chains the store maintains (:mod:`graph.riskindex`: only those a change touched are
    recomputed)."""

    def maintained() -> list[BlockedChain]:
        with app.store.lock:
            return app.store.risk.blocked(app.store.graph)

    return app.at_seq("blocked_chains", maintained)


def blocked_chains(app: Decigraph, at: At = NOW) -> tuple[list[BlockedChain], Infos]:
    """Every blocked decision with what blocks it."""
    with viewing(app, at) as view:
        chains = every_blocked_chain(app) if at.now else get_blocked_chain(view.graph)
        ids = (b.node_id for c in chains for b in c.blockers)
        return chains, _infos(view, ids)


def blocked_chain(app: Decigraph, node_id: str, at: At = NOW) -> tuple[BlockedChain, Infos]:
    with viewing(app, at) as view:
        _need(view, node_id, "node_id")
        chain = get_blocked_chain(view.graph, node_id)
        ids = [b.node_id for b in (*chain.blockers, *chain.chain)]
        return chain, _infos(view, ids)


def compute_salience(app: Decigraph) -> tuple[int, float]:
    """Salience of every node (cached per log position): how many, and the time it took (ms)."""
    started = time.perf_counter()
    scores = app.store.salience()
    return len(scores), (time.perf_counter() - started) * 1e3


def high_salience(
    app: Decigraph, limit: int, active_only: bool, at: At = NOW
) -> tuple[list[tuple[str, float]], Infos]:
    with viewing(app, at) as view:
        top = get_high_salience(view.graph, view.salience(), limit, active_only=active_only)
        return top, _infos(view, (i for i, _ in top))
