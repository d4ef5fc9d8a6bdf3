"""Queries around decisions: subgraphs, neighbours, paths, ancestors and descendants.

Free functions over the store's ``MultiDiGraph`` (see :mod:`graph.builders` for the storage
convention); :func:`find_path` lives in :mod:`graph.algorithms.paths` and is re-exported here.
Shared rules:

* **Walking.** A stored edge ``u -> v`` is walked *outgoing* from ``u`` and *incoming* from
  ``v``. Symmetric types are stored both ways, so they can always be walked either way.
* **Type filters.** ``edge_types`` takes one type, several (as :class:`~graph.enums.EdgeType`
  or strings) or ``None`` for every type; an unknown type raises
  :class:`~graph.errors.ValidationError` naming ``edge_types``.
* **Symmetric edges are reported once**, as one :class:`~graph.algorithms.walk.EdgeRef` in
  canonical orientation (smaller id as ``source``).
* **Determinism.** Neighbours are sorted before they are walked and every tie has an explicit
  break, so answers depend on the graph's content only, never on the order nodes and edges were
  inserted: nodes come by (distance, id), edges by (source, target, type).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from graph.algorithms.paths import DEFAULT_VISIT_BUDGET, Path, find_path
from graph.algorithms.walk import (
    EdgeRef,
    EdgeTypesArg,
    check_direction,
    check_edge_types,
    check_int,
    check_node,
    distances,
    edge_ref,
    steps,
)
from graph.builders import raw_adjacency
from graph.enums import Direction, EdgeType

__all__ = [
    "DEFAULT_VISIT_BUDGET",
    "EdgeRef",
    "Neighbor",
    "Path",
    "Reached",
    "Subgraph",
    "SubgraphNode",
    "ancestors",
    "descendants",
    "find_path",
    "get_graph",
    "get_neighbors",
]

MAX_DEPTH = 5
#: The largest page of nodes :func:`get_graph` returns (``limit``).
MAX_PAGE = 5_000
MAX_NEIGHBORS = 100
MAX_REACH_DEPTH = 100


@dataclass(frozen=True)
class SubgraphNode:
    """A node of a :class:`Subgraph` and its walking distance from the centre."""

    id: str
    distance: int


@dataclass(frozen=True)
class Subgraph:
    """The neighbourhood :func:`get_graph` returns: nodes by (distance, id), edges sorted.

    A page (``limit`` given) also says how many nodes the whole neighbourhood has (``total``)
    and where the next page starts (``next_offset``, ``None`` on the last page).
    """

    center_id: str
    depth: int
    nodes: list[SubgraphNode]
    edges: list[EdgeRef]
    total: int | None = None
    next_offset: int | None = None


@dataclass(frozen=True)
class Neighbor:
    """One edge at a node: ``direction`` is ``outgoing``/``incoming``, ``both`` if symmetric."""

    node_id: str
    direction: Direction
    edge: EdgeRef


@dataclass(frozen=True)
class Reached:
    """A node found by :func:`ancestors`/:func:`descendants`, ``depth`` hops away.

    ``via`` is the edge that first reached it: from its smallest-id parent at ``depth - 1``
    (ties between parallel edges go to the smaller type).
    """

    node_id: str
    depth: int
    via: EdgeRef


def get_graph(
    G: nx.MultiDiGraph[str],
    node_id: str,
    depth: int = 1,
    edge_types: EdgeTypesArg = None,
    direction: Direction | str = Direction.BOTH,
    *,
    limit: int | None = None,
    offset: int = 0,
) -> Subgraph:
    """The neighbourhood of ``node_id``: every node within ``depth`` hops, and the edges among them.

    Parameters
    ----------
    G : networkx.MultiDiGraph
        A graph following :mod:`graph.builders`' storage convention.
    node_id : str
        The centre.
    depth : int, default 1
        Hops to walk, 1 to 5.
    edge_types : EdgeType, str, iterable of those, or None
        Walk and report only these types (``None``: all).
    direction : {"both", "outgoing", "incoming"}
        Which way edges may be walked from a node.
    limit, offset : int, optional
        One page: the nodes at positions ``offset`` to ``offset + limit - 1`` (``limit`` 1 to
        5000) of the (distance, id) order, and the edges whose later-ranked end is on the page
        (the other end is on it or on an earlier page). Pages in turn give every node and every
        edge of the neighbourhood exactly once. The cost is one breadth-first walk plus the
        page's own edges, not every edge among thousands of nodes around a hub.

    Returns
    -------
    Subgraph
        ``nodes`` ordered by (distance, id), centre first. ``edges`` are every stored edge of the
        selected types between two returned nodes (each is walkable in ``direction`` from one
        returned node to another, as in :func:`networkx.ego_graph`), symmetric ones once,
        ordered by (source, target, type). A page adds ``total`` and ``next_offset``.

    Raises
    ------
    NodeNotFoundError
        ``node_id`` is not in the graph.
    ValidationError
        ``depth``, ``edge_types`` or ``direction`` is out of range or unknown.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> a, b, c = "aaaaaaaa", "bbbbbbbb", "cccccccc"
    >>> G = build_graph([a, b, c], [(b, a, "depends_on"), (c, b, "contradicts")])
    >>> sub = get_graph(G, a, depth=2)
    >>> [(n.id, n.distance) for n in sub.nodes]
    [('aaaaaaaa', 0), ('bbbbbbbb', 1), ('cccccccc', 2)]
    >>> [(e.source, e.target, e.type.value) for e in sub.edges]
    [('bbbbbbbb', 'aaaaaaaa', 'depends_on'), ('bbbbbbbb', 'cccccccc', 'contradicts')]
    >>> [n.id for n in get_graph(G, a, depth=2, direction="outgoing").nodes]
    ['aaaaaaaa']
    """
    check_node(G, node_id)
    check_int(depth, "depth", 1, MAX_DEPTH)
    types = check_edge_types(edge_types)
    if limit is not None:
        check_int(limit, "limit", 1, MAX_PAGE)
        check_int(offset, "cursor", 0, 2**62)
    distance = distances(G, node_id, check_direction(direction), types, depth)
    if limit is not None:
        return _page(G, node_id, depth, types, distance, limit, offset)
    nodes = [SubgraphNode(n, d) for n, d in sorted(distance.items(), key=lambda x: (x[1], x[0]))]
    edges: dict[tuple[str, str, str], EdgeRef] = {}
    for u in distance:
        for _, v, key in G.out_edges(u, keys=True):
            if v in distance and (types is None or key in types):
                ref = edge_ref(G, u, v, key)
                edges[ref.sort_key] = ref  # both halves of a symmetric edge share one key
    return Subgraph(node_id, depth, nodes, [edges[k] for k in sorted(edges)])


def _page(
    G: nx.MultiDiGraph[str],
    node_id: str,
    depth: int,
    types: frozenset[str] | None,
    distance: dict[str, int],
    limit: int,
    offset: int,
) -> Subgraph:
    levels: list[list[str]] = [[] for _ in range(depth + 1)]
    for n, d in distance.items():
        levels[d].append(n)
    ordered = [n for level in levels for n in sorted(level)]  # (distance, id), cheaply
    _, succ, pred = raw_adjacency(G)
    edges: dict[tuple[str, str, str], EdgeRef] = {}
    page = ordered[offset : offset + limit]
    for position, u in enumerate(page, offset):
        # Edges to earlier-ranked nodes only (a later one's page reports the edge): a hub on
        # the page looks its few predecessors in the order up instead of scanning its edges.
        for side, outgoing in ((succ[u], True), (pred[u], False)):
            if len(side) > position:
                found = ((w, side[w]) for w in ordered[:position] if w in side)
            else:
                here = distance[u]
                found = (
                    (w, keyed)
                    for w, keyed in side.items()
                    if (there := distance.get(w)) is not None
                    and (there < here or (there == here and w < u))
                )
            for other, keyed in found:
                for key in keyed:
                    if types is None or key in types:
                        ref = edge_ref(G, u, other, key) if outgoing else edge_ref(G, other, u, key)
                        edges[ref.sort_key] = ref
    end = offset + len(page)
    return Subgraph(
        node_id,
        depth,
        [SubgraphNode(n, distance[n]) for n in page],
        [edges[k] for k in sorted(edges)],
        total=len(ordered),
        next_offset=end if end < len(ordered) else None,
    )


def get_neighbors(
    G: nx.MultiDiGraph[str],
    node_id: str,
    direction: Direction | str = Direction.BOTH,
    edge_type: EdgeTypesArg = None,
    limit: int = 20,
) -> tuple[list[Neighbor], int]:
    """The edges at ``node_id`` and the nodes at their other ends, one page.

    Parameters
    ----------
    G : networkx.MultiDiGraph
    node_id : str
    direction : {"both", "outgoing", "incoming"}
        ``outgoing``: edges ``node_id -> x``; ``incoming``: ``x -> node_id``. Symmetric edges
        belong to both and come back once per neighbour with direction ``both``.
    edge_type : EdgeType, str or iterable of those, optional
        Only this type (or these types); ``None``: all.
    limit : int, default 20
        Page size, 1 to 100.

    Returns
    -------
    (list of Neighbor, int)
        The first ``limit`` neighbours ordered by (edge type, neighbour id, direction), and how
        many there are in all. Two nodes joined by several edges give one entry per edge.

    Raises
    ------
    NodeNotFoundError
        ``node_id`` is not in the graph.
    ValidationError
        ``direction``, ``edge_type`` or ``limit`` is unknown or out of range.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> a, b, c = "aaaaaaaa", "bbbbbbbb", "cccccccc"
    >>> G = build_graph([a, b, c], [(a, b, "depends_on"), (c, a, "contradicts")])
    >>> page, total = get_neighbors(G, a)
    >>> [(n.node_id, n.direction.value, n.edge.type.value) for n in page], total
    ([('cccccccc', 'both', 'contradicts'), ('bbbbbbbb', 'outgoing', 'depends_on')], 2)
    >>> get_neighbors(G, a, direction="incoming", edge_type="depends_on")
    ([], 0)
    """
    check_node(G, node_id)
    way = check_direction(direction)
    types = check_edge_types(edge_type, "edge_type")
    check_int(limit, "limit", 1, MAX_NEIGHBORS)
    found: dict[tuple[str, str, str, str, str], Neighbor] = {}
    for other, key, u, v, walked in steps(G, node_id, way, types):
        ref = edge_ref(G, u, v, key)
        side = Direction.BOTH if ref.type.symmetric else walked
        found[(key, other, side.value, ref.source, ref.target)] = Neighbor(other, side, ref)
    ordered = [found[k] for k in sorted(found)]
    return ordered[:limit], len(ordered)


def _reach(
    G: nx.MultiDiGraph[str],
    node_id: str,
    edge_types: EdgeTypesArg,
    max_depth: int | None,
    direction: Direction,
) -> list[Reached]:
    check_node(G, node_id)
    types = check_edge_types(edge_types)
    if max_depth is not None:
        check_int(max_depth, "max_depth", 1, MAX_REACH_DEPTH)
    seen = {node_id}
    frontier = [node_id]
    reached: list[Reached] = []
    depth = 0
    while frontier and (max_depth is None or depth < max_depth):
        depth += 1
        level: dict[str, Reached] = {}
        for node in frontier:  # sorted, so a node's first parent is its smallest-id one
            for other, key, u, v, _ in steps(G, node, direction, types):
                if other not in seen and other not in level:
                    level[other] = Reached(other, depth, edge_ref(G, u, v, key))
        seen.update(level)
        frontier = sorted(level)
        reached.extend(level[n] for n in frontier)
    return reached


def ancestors(
    G: nx.MultiDiGraph[str],
    node_id: str,
    edge_types: EdgeTypesArg = (EdgeType.DEPENDS_ON,),
    max_depth: int | None = None,
) -> list[Reached]:
    """Everything ``node_id`` depends on, transitively: nodes reached along outgoing edges.

    Parameters
    ----------
    G : networkx.MultiDiGraph
    node_id : str
    edge_types : EdgeType, str or iterable of those, default ``depends_on``
        Types to follow (``None``: all).
    max_depth : int, optional
        Stop after this many hops, 1 to 100 (default: no limit).

    Returns
    -------
    list of Reached
        Ordered by (depth, id); ``depth`` is the fewest hops from ``node_id``; ``node_id``
        itself is never included, even on a cycle.

    Raises
    ------
    NodeNotFoundError
        ``node_id`` is not in the graph.
    ValidationError
        ``edge_types`` or ``max_depth`` is unknown or out of range.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> a, b, c = "aaaaaaaa", "bbbbbbbb", "cccccccc"
    >>> G = build_graph([a, b, c], [(c, b, "depends_on"), (b, a, "depends_on")])
    >>> [(r.node_id, r.depth, r.via.source) for r in ancestors(G, c)]
    [('bbbbbbbb', 1, 'cccccccc'), ('aaaaaaaa', 2, 'bbbbbbbb')]
    >>> [r.node_id for r in ancestors(G, c, max_depth=1)]
    ['bbbbbbbb']
    """
    return _reach(G, node_id, edge_types, max_depth, Direction.OUTGOING)


def descendants(
    G: nx.MultiDiGraph[str],
    node_id: str,
    edge_types: EdgeTypesArg = (EdgeType.DEPENDS_ON,),
    max_depth: int | None = None,
) -> list[Reached]:
    """Everything that depends on ``node_id``, transitively: nodes reached along incoming edges.

    Parameters, results and errors are as for :func:`ancestors`, walking the other way.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> a, b, c = "aaaaaaaa", "bbbbbbbb", "cccccccc"
    >>> G = build_graph([a, b, c], [(c, b, "depends_on"), (b, a, "depends_on")])
    >>> [(r.node_id, r.depth) for r in descendants(G, a)]
    [('bbbbbbbb', 1), ('cccccccc', 2)]
    """
    return _reach(G, node_id, edge_types, max_depth, Direction.INCOMING)
