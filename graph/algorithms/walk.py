"""Walking primitives shared by the query algorithms: edge references, steps, argument checks.

:class:`EdgeRef` is how every query reports an edge. A symmetric type is stored as two directed
edges (see :mod:`graph.builders`) but is one relation, so queries report it once, in *canonical
orientation*: the smaller id as ``source``. Other types keep their stored orientation.

:func:`steps` lists the edges walkable from a node: a stored edge ``u -> v`` is walked
*outgoing* from ``u`` and *incoming* from ``v``, and symmetric types, stored both ways, can always
be walked either way. Steps come sorted, so traversals built on them never depend on the order
nodes and edges were inserted.

The ``check_*`` helpers raise :class:`~graph.errors.ValidationError` naming the JSON-RPC
parameter (camelCase), so the service can pass arguments straight through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import networkx as nx

from graph.builders import raw_adjacency
from graph.enums import Direction, EdgeType
from graph.errors import NodeNotFoundError, ValidationError
from graph.timeutil import parse_ts

__all__ = [
    "EdgeRef",
    "EdgeTypesArg",
    "Step",
    "check_direction",
    "check_edge_type",
    "check_edge_types",
    "check_int",
    "check_node",
    "distances",
    "edge_ref",
    "edge_signal",
    "steps",
]

#: What callers may pass as a type filter: one type, several, or ``None`` for every type.
EdgeTypesArg = EdgeType | str | Iterable[EdgeType | str] | None

#: ``(neighbour, type, stored source, stored target, direction walked)``. Sorted tuples give the
#: neighbour-first, then type, order every traversal walks in.
Step = tuple[str, str, str, str, Direction]

_TYPE_NAMES = ", ".join(t.value for t in EdgeType)


@dataclass(frozen=True)
class EdgeRef:
    """One stored edge ``source -> target`` ("source <type> target") and its attributes.

    Symmetric types are reported in canonical orientation (``source < target``).
    """

    source: str
    target: str
    type: EdgeType
    weight: float
    created_at: datetime
    created_by: str
    context: str | None
    origin: Literal["manual", "auto"]
    #: What derived or declared it (``meta.signal``: ``semantic``, ``suspected``, ...), if said.
    signal: str | None = None

    @property
    def sort_key(self) -> tuple[str, str, str]:
        """``(source, target, type)``: the order every query lists edges in."""
        return (self.source, self.target, self.type.value)


def edge_ref(G: nx.MultiDiGraph[str], source: str, target: str, key: str) -> EdgeRef:
    """The :class:`EdgeRef` of the stored edge ``(source, target, key)``.

    Symmetric edges come back canonical, whichever of their two stored halves is named.
    """
    edge_type = EdgeType(key)
    attrs: Mapping[str, Any] = G.edges[source, target, key]
    if edge_type.symmetric and source > target:
        # The store writes both halves with equal attributes; reading the canonical half (when
        # present) keeps answers independent of which half a traversal happened to meet.
        if G.has_edge(target, source, key):
            attrs = G.edges[target, source, key]
        source, target = target, source
    return _make(source, target, edge_type, attrs)


def _make(source: str, target: str, edge_type: EdgeType, attrs: Mapping[str, Any]) -> EdgeRef:
    origin = attrs.get("origin", "manual")
    return EdgeRef(
        source=source,
        target=target,
        type=edge_type,
        weight=float(attrs.get("weight", 1.0)),
        created_at=parse_ts(attrs["created_at"]),
        created_by=str(attrs["created_by"]),
        context=attrs.get("context"),
        origin="auto" if origin == "auto" else "manual",
        signal=edge_signal(attrs),
    )


def edge_signal(attrs: Mapping[str, Any]) -> str | None:
    """What derived or declared an edge (its ``meta.signal``), if its attributes say."""
    meta = attrs.get("meta")
    signal = meta.get("signal") if isinstance(meta, Mapping) else None
    return None if signal is None else str(signal)


def check_node(G: nx.MultiDiGraph[str], node_id: str, field: str = "node_id") -> str:
    """Return ``node_id`` if ``G`` holds it; raise :class:`NodeNotFoundError` naming ``field``."""
    if not isinstance(node_id, str) or node_id not in G:
        raise NodeNotFoundError(str(node_id), field=field)
    return node_id


def check_int(value: int, field: str, low: int, high: int) -> int:
    """Return ``value`` if it is an int (not a bool) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ValidationError(field, f"must be between {low} and {high}, got {value}")
    return value


def check_edge_type(value: EdgeType | str, field: str = "edge_type") -> EdgeType:
    """Parse one edge type given as an :class:`EdgeType` or its string value."""
    if isinstance(value, EdgeType):
        return value
    if isinstance(value, str):
        try:
            return EdgeType(value)
        except ValueError:
            pass
    raise ValidationError(field, f"{value!r} is not an edge type (one of {_TYPE_NAMES})")


def check_edge_types(value: EdgeTypesArg, field: str = "edge_types") -> frozenset[str] | None:
    """Parse a type filter into the set of type values; ``None`` means every type.

    A single type (string or :class:`EdgeType`) is accepted as a one-element filter; an empty
    collection is refused, since it would silently match nothing.
    """
    if value is None:
        return None
    items: Iterable[EdgeType | str] = [value] if isinstance(value, str) else value
    types = frozenset(check_edge_type(item, field).value for item in items)
    if not types:
        raise ValidationError(field, "must name at least one edge type (omit it for all types)")
    return types


def check_direction(value: Direction | str, field: str = "direction") -> Direction:
    """Parse ``outgoing``, ``incoming`` or ``both``."""
    try:
        return Direction(value)
    except ValueError:
        names = ", ".join(d.value for d in Direction)
        raise ValidationError(field, f"{value!r} is not a direction (one of {names})") from None


def steps(
    G: nx.MultiDiGraph[str], node: str, direction: Direction, types: frozenset[str] | None
) -> list[Step]:
    """Every edge walkable from ``node`` in ``direction`` whose type passes ``types``, sorted."""
    found: list[Step] = []
    if direction is not Direction.INCOMING:
        for _, v, key in G.out_edges(node, keys=True):
            if types is None or key in types:
                found.append((v, key, node, v, Direction.OUTGOING))
    if direction is not Direction.OUTGOING:
        for u, _, key in G.in_edges(node, keys=True):
            if types is None or key in types:
                found.append((u, key, u, node, Direction.INCOMING))
    found.sort()
    return found


def _sides(G: nx.MultiDiGraph[str], direction: Direction) -> list[Any]:
    # NetworkX's own dicts (read only): its views wrap every inner dict, several times slower
    # on the thousands of nodes around a hub.
    _, succ, pred = raw_adjacency(G)
    sides: list[Any] = []
    if direction is not Direction.INCOMING:
        sides.append(succ)
    if direction is not Direction.OUTGOING:
        sides.append(pred)
    return sides


def _next_level(
    sides: list[Any],
    frontier: list[str],
    distance: dict[str, int],
    types: frozenset[str] | None,
    stop_at: str | None,
) -> set[str]:
    found: set[str] = set()
    for node in frontier:
        if node == stop_at:
            continue
        for side in sides:
            for other, keyed in side[node].items():
                if other in distance or other in found:
                    continue
                if types is None or not types.isdisjoint(keyed):
                    found.add(other)
    return found


@dataclass(frozen=True)
class Meeting:
    """A bidirectional search's result: the shortest length and both partial distance maps.

    ``from_source`` is exact for every node within ``source_radius`` hops of the source,
    ``to_target`` within ``target_radius`` of the target; the radii add up to at least
    ``length``, so every node of a shortest path is checkable against one of them.
    """

    length: int
    from_source: dict[str, int]
    to_target: dict[str, int]
    source_radius: int
    target_radius: int


def meet(
    G: nx.MultiDiGraph[str],
    source: str,
    target: str,
    forward: Direction,
    backward: Direction,
    types: frozenset[str] | None,
    cutoff: int,
) -> Meeting | None:
    """Shortest hop count from ``source`` to ``target`` (at most ``cutoff``), searching from both
    ends a level at a time, the smaller frontier first; ``None`` when there is no such path.

    Neither end is walked through by the other side's search (a path never revisits them).
    """
    out_sides, in_sides = _sides(G, forward), _sides(G, backward)
    from_source, to_target = {source: 0}, {target: 0}
    frontier_s, frontier_t = [source], [target]
    radius_s = radius_t = 0
    while radius_s + radius_t < cutoff and frontier_s and frontier_t:
        grow_source = len(frontier_s) <= len(frontier_t)
        if grow_source:
            level = _next_level(out_sides, frontier_s, from_source, types, target)
            radius_s += 1
            from_source.update(dict.fromkeys(level, radius_s))
            frontier_s, other, mine = list(level), to_target, radius_s
        else:
            level = _next_level(in_sides, frontier_t, to_target, types, source)
            radius_t += 1
            to_target.update(dict.fromkeys(level, radius_t))
            frontier_t, other, mine = list(level), from_source, radius_t
        met = [mine + other[node] for node in level if node in other]
        if met:
            return Meeting(min(met), from_source, to_target, radius_s, radius_t)
    return None


def distances(
    G: nx.MultiDiGraph[str],
    start: str,
    direction: Direction,
    types: frozenset[str] | None,
    cutoff: int,
    *,
    stop_at: str | None = None,
    until: str | None = None,
) -> dict[str, int]:
    """Fewest hops from ``start`` to every node within ``cutoff`` hops (breadth-first).

    ``stop_at`` gets its distance when reached but is never walked through. With ``until``,
    the search ends with the level at which ``until`` is reached (every node of that level and
    the ones before has its distance; farther nodes are absent).
    """
    # The adjacency dicts directly: this runs over large parts of the graph, and building a
    # sorted step list per node (as :func:`steps` does) costs several times the walk itself.
    sides = _sides(G, direction)
    distance = {start: 0}
    frontier = [start]
    for level in range(1, cutoff + 1):
        found = _next_level(sides, frontier, distance, types, stop_at)
        if not found:
            break
        distance.update(dict.fromkeys(found, level))
        if until is not None and until in found:
            break
        frontier = list(found)
    return distance
