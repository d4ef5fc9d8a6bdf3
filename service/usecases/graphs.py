"""The graph read use cases (F045): neighbourhoods, paths, lineage, contradictions, blocked
work and salience. Each reads one consistent view under the store lock and returns the
algorithm's result with a :class:`NodeInfo` for every node it names."""

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
from graph.enums import Direction, EdgeType
from graph.errors import NodeNotFoundError
from graph.lifecycle import effective_lifecycle

from .context import Decigraph


@dataclass(frozen=True)
class NodeInfo:
    """What a graph answer shows of a node: its attributes, effective lifecycle and degrees."""

    id: str
    attrs: dict[str, Any]
    lifecycle: str
    in_degree: int
    out_degree: int
    salience: float | None = None


Infos = dict[str, NodeInfo]


def _infos(app: Decigraph, ids: Iterable[str], salience: dict[str, float] | None = None) -> Infos:
    G = app.store.graph
    out: Infos = {}
    for node_id in ids:
        if node_id in out or node_id not in G:
            continue
        out[node_id] = NodeInfo(
            node_id,
            dict(G.nodes[node_id]),
            effective_lifecycle(G, node_id).value,
            G.in_degree(node_id),
            G.out_degree(node_id),
            None if salience is None else salience.get(node_id, 0.0),
        )
    return out


def _need(app: Decigraph, node_id: str, field: str) -> None:
    if node_id not in app.store.graph:
        raise NodeNotFoundError(node_id, field)


def neighbourhood(
    app: Decigraph,
    node_id: str,
    depth: int,
    edge_types: Sequence[EdgeType] | None,
    direction: Direction,
) -> tuple[Subgraph, Infos]:
    """The subgraph within ``depth`` hops, its nodes with their salience."""
    with app.store.lock:
        _need(app, node_id, "node_id")
        sub = get_graph(app.store.graph, node_id, depth, edge_types, direction)
        salience = app.store.salience()  # cached per log position; sizes the explorer
        return sub, _infos(app, (n.id for n in sub.nodes), salience)


def neighbours(
    app: Decigraph,
    node_id: str,
    direction: Direction,
    edge_type: EdgeType | None,
    limit: int,
) -> tuple[list[Neighbor], int, Infos]:
    with app.store.lock:
        _need(app, node_id, "node_id")
        page, total = get_neighbors(app.store.graph, node_id, direction, edge_type, limit)
        return page, total, _infos(app, (n.node_id for n in page))


def paths(
    app: Decigraph,
    source: str,
    target: str,
    edge_types: Sequence[EdgeType] | None,
    *,
    directed: bool,
    max_paths: int,
    max_length: int,
) -> list[Path]:
    with app.store.lock:
        _need(app, source, "source")
        _need(app, target, "target")
        return find_path(
            app.store.graph,
            source,
            target,
            edge_types,
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
) -> tuple[list[Reached], Infos]:
    """What ``node_id`` builds on (``ancestors``) or what builds on it (``descendants``)."""
    with app.store.lock:
        _need(app, node_id, "node_id")
        types = edge_types or [EdgeType.DEPENDS_ON]
        reached = LINEAGE[direction](app.store.graph, node_id, types, max_depth)
        return reached, _infos(app, (r.node_id for r in reached))


def contradictions(
    app: Decigraph, include_inactive: bool, limit: int
) -> tuple[list[Contradiction], Infos]:
    with app.store.lock:
        found = find_contradictions(
            app.store.graph, app.store.salience(), include_inactive=include_inactive, limit=limit
        )
        return found, _infos(app, (n for c in found for n in (c.a, c.b)))


def blocked_chains(app: Decigraph) -> tuple[list[BlockedChain], Infos]:
    """Every blocked decision with what blocks it."""
    with app.store.lock:
        chains = get_blocked_chain(app.store.graph)
        ids = (b.node_id for c in chains for b in c.blockers)
        return chains, _infos(app, ids)


def blocked_chain(app: Decigraph, node_id: str) -> tuple[BlockedChain, Infos]:
    with app.store.lock:
        _need(app, node_id, "node_id")
        chain = get_blocked_chain(app.store.graph, node_id)
        ids = [b.node_id for b in (*chain.blockers, *chain.chain)]
        return chain, _infos(app, ids)


def compute_salience(app: Decigraph) -> tuple[int, float]:
    """Salience of every node (cached per log position): how many, and the time it took (ms)."""
    started = time.perf_counter()
    scores = app.store.salience()
    return len(scores), (time.perf_counter() - started) * 1e3


def high_salience(
    app: Decigraph, limit: int, active_only: bool
) -> tuple[list[tuple[str, float]], Infos]:
    with app.store.lock:
        top = get_high_salience(
            app.store.graph, app.store.salience(), limit, active_only=active_only
        )
        return top, _infos(app, (i for i, _ in top))
