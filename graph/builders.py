"""Primitive graph mutations and a small builder for examples and tests.

Storage convention (everything in ``graph/`` relies on it):

* node key = node id; node attributes = ``Node.to_attrs()`` (JSON-compatible);
* edge key = edge type value (so ``(source, target, type)`` is unique and linking twice is a
  no-op); edge attributes = ``Edge.to_attrs()``;
* a symmetric type (``contradicts``, ``relates_to``, ``temporal``, ``entity``, ``semantic``) is
  stored as two directed edges with equal attributes (one shared dict), so it answers from both
  ends;
* attribute dicts are compact key-sharing dicts (:mod:`graph.compact`; edges read back from a
  snapshot excepted): plain ``dict`` objects to every reader, about half the memory. Treat them
  as read-only: a change goes through :func:`put_node` (which puts a new dict in place) or the
  events that call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

import networkx as nx

from .compact import compact
from .enums import EdgeType
from .model import Edge, Node

EXAMPLE_TIME = datetime(2026, 1, 1, tzinfo=UTC)

Keyed = dict[str, dict[str, dict[str, Any]]]
"""Neighbour -> edge type -> edge attributes: one node's row of a ``MultiDiGraph`` adjacency."""


class RawAdjacency(NamedTuple):
    nodes: dict[str, dict[str, Any]]
    succ: dict[str, Keyed]
    pred: dict[str, Keyed]


def raw_adjacency(G: nx.MultiDiGraph[str]) -> RawAdjacency:
    """NetworkX's own node, successor and predecessor dicts (``G._node``, ``G._succ``, ``G._pred``).

    The one place that reaches past NetworkX's public API. Whole-graph passes (snapshots, the
    salience adjacency, compaction) touch every edge, and the public views wrap every inner dict
    in a view object, which costs several times more per edge at 500k edges. The layout is
    NetworkX's documented data structure; treat the dicts as read-only unless you are building
    a new graph, and then keep ``succ[u][v]`` and ``pred[v][u]`` the same dict object.
    """
    return RawAdjacency(G._node, G._succ, G._pred)  # type: ignore[attr-defined]


def put_node(G: nx.MultiDiGraph[str], node: Node) -> None:
    """Insert or replace ``node``'s attributes (replacing keeps the node's edges).

    The attributes are a compact dict (:func:`graph.compact.compact`); replacing puts a new
    dict in place of the old one (a reader still holding the old one sees the node as it was).
    """
    attrs = compact(node.to_attrs())
    if node.id not in G:
        G.add_node(node.id)
    raw_adjacency(G).nodes[node.id] = attrs


def put_edge(G: nx.MultiDiGraph[str], edge: Edge) -> list[tuple[str, str, str]]:
    """Add ``edge`` (and its mirror for symmetric types); return the directed keys added.

    The attributes are one compact dict (:func:`graph.compact.compact`), shared by both
    directions of a symmetric edge (they are equal by definition; snapshots keep the sharing).
    """
    attrs = compact(edge.to_attrs())
    key = edge.type.value
    added: list[tuple[str, str, str]] = []
    pairs = [(edge.source, edge.target)]
    if edge.type.symmetric:
        pairs.append((edge.target, edge.source))
    succ = raw_adjacency(G).succ
    for u, v in pairs:
        if not G.has_edge(u, v, key):
            G.add_edge(u, v, key=key)
            succ[u][v][key] = attrs  # the key dict is also pred[v][u]: one object, both views
            added.append((u, v, key))
    return added


def drop_edge(
    G: nx.MultiDiGraph[str], source: str, target: str, edge_type: EdgeType
) -> list[tuple[str, str, str]]:
    """Remove one typed edge (both directions for symmetric types); return the keys removed."""
    key = edge_type.value
    removed: list[tuple[str, str, str]] = []
    pairs = [(source, target)]
    if edge_type.symmetric:
        pairs.append((target, source))
    for u, v in pairs:
        if G.has_edge(u, v, key):
            G.remove_edge(u, v, key=key)
            removed.append((u, v, key))
    return removed


def edge_types_between(G: nx.MultiDiGraph[str], source: str, target: str) -> list[EdgeType]:
    """Types of the edges ``source -> target`` plus symmetric ones stored ``target -> source``."""
    types: set[EdgeType] = set()
    if G.has_node(source) and G.has_node(target):
        for key in G.get_edge_data(source, target, default={}):
            types.add(EdgeType(str(key)))
        for key in G.get_edge_data(target, source, default={}):
            if EdgeType(str(key)).symmetric:
                types.add(EdgeType(str(key)))
    return sorted(types, key=lambda t: t.value)


def build_graph(
    nodes: Iterable[str | Mapping[str, Any]],
    edges: Iterable[tuple[str, str, str] | tuple[str, str, str, Mapping[str, Any]]] = (),
) -> nx.MultiDiGraph[str]:
    """Build a graph that follows the storage convention, filling required fields.

    Intended for examples, notebooks and tests; the store builds its graph from the event log.

    Parameters
    ----------
    nodes : iterable of str or mapping
        Node ids, or mappings of :class:`~graph.model.Node` fields (``id`` required; ``text``
        defaults to ``"decision <id>"``).
    edges : iterable of tuples
        ``(source, target, type)`` or ``(source, target, type, fields)``.

    Returns
    -------
    networkx.MultiDiGraph

    Examples
    --------
    >>> G = build_graph(["aaaaaaaa", "bbbbbbbb"], [("aaaaaaaa", "bbbbbbbb", "relates_to")])
    >>> sorted(G.edges(keys=True))
    [('aaaaaaaa', 'bbbbbbbb', 'relates_to'), ('bbbbbbbb', 'aaaaaaaa', 'relates_to')]
    """
    G: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    for spec in nodes:
        fields: dict[str, Any] = {"id": spec} if isinstance(spec, str) else dict(spec)
        fields.setdefault("text", f"decision {fields['id']}")
        fields.setdefault("created_at", EXAMPLE_TIME)
        fields.setdefault("recorded_by", "example")
        put_node(G, Node.model_validate(fields))
    for item in edges:
        extra: Mapping[str, Any] = item[3] if len(item) == 4 else {}
        edge = Edge.model_validate(
            {
                "source": item[0],
                "target": item[1],
                "type": item[2],
                "created_at": EXAMPLE_TIME,
                "created_by": "example",
                **extra,
            }
        )
        for end in (edge.source, edge.target):
            if end not in G:
                raise ValueError(f"edge endpoint {end!r} is not among the nodes")
        put_edge(G, edge)
    return G
