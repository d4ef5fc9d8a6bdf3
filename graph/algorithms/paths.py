"""Paths between two decisions: the shortest, or every simple path up to a length.

:func:`find_path` enumerates simple paths in (length, node-id sequence) order, one length at a
time, depth-first over id-sorted neighbours. The shortest length comes from a breadth-first
search at both ends (:func:`~graph.algorithms.walk.meet`), whose distance maps admit a node at
position ``i`` only if it is exactly ``i`` hops from the source and ``length - i`` from the
target. Longer paths are bounded by hop counts to the target (a search from it that never
passes through the source): a partial path is extended only to nodes from which the target is
still reachable in the hops left. That bound is exact for the
first path and a lower bound for the others, so the enumeration also carries a *visit budget*:
dense graphs can hold exponentially many near-miss partial paths.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import networkx as nx

from graph.algorithms.walk import (
    EdgeRef,
    EdgeTypesArg,
    check_edge_types,
    check_int,
    check_node,
    distances,
    edge_ref,
    meet,
    steps,
)
from graph.enums import Direction

__all__ = ["DEFAULT_VISIT_BUDGET", "MAX_PATHS", "MAX_PATH_LENGTH", "Path", "find_path"]

MAX_PATHS = 100
MAX_PATH_LENGTH = 10
#: Nodes :func:`find_path` may push onto a partial path before it stops enumerating; keeps one
#: request on a dense graph to a fraction of a second.
DEFAULT_VISIT_BUDGET = 100_000


@dataclass(frozen=True)
class Path:
    """A simple path: ``nodes[i]`` and ``nodes[i + 1]`` are joined by ``edges[i]``."""

    nodes: list[str]
    edges: list[EdgeRef]

    @property
    def length(self) -> int:
        """Number of edges (0 for the path from a node to itself)."""
        return len(self.edges)


def _hop(
    G: nx.MultiDiGraph[str], u: str, v: str, types: frozenset[str] | None, directed: bool
) -> EdgeRef:
    """The edge a path uses from ``u`` to ``v``: the smallest by (type, source, target)."""
    pairs = [(u, v)] if directed else [(u, v), (v, u)]
    candidates = [
        edge_ref(G, s, t, str(key))
        for s, t in pairs
        for key in G.get_edge_data(s, t, default={})
        if types is None or key in types
    ]
    return min(candidates, key=lambda e: (e.type.value, e.source, e.target))


def find_path(
    G: nx.MultiDiGraph[str],
    source: str,
    target: str,
    edge_types: EdgeTypesArg = None,
    *,
    directed: bool = False,
    max_paths: int = 1,
    max_length: int = 6,
    visit_budget: int = DEFAULT_VISIT_BUDGET,
) -> list[Path]:
    """Paths from ``source`` to ``target``, shortest first.

    Paths are simple (no node twice) and at most ``max_length`` edges long. They are ordered by
    (length, node-id sequence), so the first is the lexicographically smallest shortest path; a
    path is a node sequence, and where two nodes are joined by several edges it reports the
    smallest by (type, source, target).

    Parameters
    ----------
    G : networkx.MultiDiGraph
    source, target : str
    edge_types : EdgeType, str, iterable of those, or None
        Walk only these types (``None``: all).
    directed : bool, default False
        ``False`` walks edges either way (how two decisions are connected); ``True`` follows
        stored orientation (symmetric types still go both ways). Either way each edge is
        reported as stored, symmetric ones in canonical orientation.
    max_paths : int, default 1
        How many paths to return, 1 to 100.
    max_length : int, default 6
        Longest path, in edges, 1 to 10.
    visit_budget : int
        Bound on the enumeration's work. When it runs out, the paths found so far come back:
        still the first ones in the order above, but possibly fewer than ``max_paths``.

    Returns
    -------
    list of Path
        Empty when no path of at most ``max_length`` edges exists; a single zero-length path when
        ``source == target``.

    Raises
    ------
    NodeNotFoundError
        ``source`` or ``target`` is not in the graph.
    ValidationError
        ``edge_types``, ``max_paths`` or ``max_length`` is unknown or out of range.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> a, b, c, d = "aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"
    >>> G = build_graph(
    ...     [a, b, c, d],
    ...     [(a, b, "depends_on"), (c, b, "refines"), (a, d, "relates_to"), (d, c, "blocks")],
    ... )
    >>> [p.nodes for p in find_path(G, a, c, max_paths=5)]
    [['aaaaaaaa', 'bbbbbbbb', 'cccccccc'], ['aaaaaaaa', 'dddddddd', 'cccccccc']]
    >>> [(e.source, e.target) for e in find_path(G, a, c)[0].edges]
    [('aaaaaaaa', 'bbbbbbbb'), ('cccccccc', 'bbbbbbbb')]
    >>> [p.nodes for p in find_path(G, a, c, directed=True)]
    [['aaaaaaaa', 'dddddddd', 'cccccccc']]
    """
    check_node(G, source, "source")
    check_node(G, target, "target")
    types = check_edge_types(edge_types)
    check_int(max_paths, "max_paths", 1, MAX_PATHS)
    check_int(max_length, "max_length", 1, MAX_PATH_LENGTH)
    check_int(visit_budget, "visit_budget", 1, 10**9)
    if source == target:
        return [Path([source], [])]
    forward = Direction.OUTGOING if directed else Direction.BOTH
    backward = Direction.INCOMING if directed else Direction.BOTH
    # The shortest length from a search at both ends; its partial distance maps already say
    # which nodes can sit at which position of a shortest path.
    met = meet(G, source, target, forward, backward, types, max_length)
    if met is None:
        return []
    shortest = met.length
    adjacency: dict[str, list[str]] = {}

    def neighbours(node: str) -> list[str]:
        if node not in adjacency:
            adjacency[node] = sorted({s[0] for s in steps(G, node, forward, types)})
        return adjacency[node]

    def on_a_shortest_path(node: str, position: int) -> bool:
        if position <= met.source_radius and met.from_source.get(node) != position:
            return False
        left = shortest - position
        return left > met.target_radius or met.to_target.get(node) == left

    found: list[list[str]] = []
    budget = visit_budget
    # Hops left to the target from each node, a lower bound that prunes paths longer than the
    # shortest; computed only if those are asked for.
    to_target: dict[str, int] = {}

    def allowed(node: str, path: list[str], hops_left: int) -> bool:
        if len(path) - 1 + hops_left == shortest:
            return on_a_shortest_path(node, len(path))
        return to_target.get(node, math.inf) <= hops_left - 1

    def extend(path: list[str], hops_left: int) -> bool:
        """Emit, in id order, the simple paths extending ``path`` by exactly ``hops_left``."""
        nonlocal budget
        for nxt in neighbours(path[-1]):
            if nxt == target:
                if hops_left == 1:
                    found.append([*path, target])
                    if len(found) == max_paths:
                        return True
                continue
            if nxt in path or not allowed(nxt, path, hops_left):
                continue
            if budget == 0:
                return True
            budget -= 1
            path.append(nxt)
            stop = extend(path, hops_left - 1)
            path.pop()
            if stop:
                return True
        return False

    # One pass per length keeps the output in (length, sequence) order without sorting a
    # possibly huge set; ``path`` holds at most 11 ids, so the membership test stays cheap.
    for length in range(shortest, max_length + 1):
        if length > shortest and not to_target:
            # The source is never walked through: a simple path cannot revisit it.
            to_target = distances(G, target, backward, types, max_length, stop_at=source)
        if extend([source], length):
            break
    return [
        Path(nodes, [_hop(G, u, v, types, directed) for u, v in itertools.pairwise(nodes)])
        for nodes in found
    ]
