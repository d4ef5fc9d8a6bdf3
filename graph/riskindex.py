"""Contradiction pairs and blocked chains kept in step with the graph (so a write never
re-scans the whole graph).

:func:`graph.algorithms.contradictions.find_contradictions` scans every edge and
:func:`~graph.algorithms.contradictions.get_blocked_chain` (for everything) walks the chain of
every node with a blocker: at 100k decisions that is half a second and several seconds. The
:class:`RiskIndex` hears every change the :class:`~graph.state.GraphState` makes (it is a
:class:`~graph.state.GraphWatcher`, beside the salience adjacency) and keeps what those answers
need, so each costs in proportion to its size:

* **Contradictions**: the set of pairs ``(a, b)``, ``a < b``, joined by ``contradicts`` (with
  the stored halves of each, so a pair leaves when its last half does). A query filters the
  pairs by activity, scores them and sorts them exactly as the from-scratch function does; the
  answer is memoised until the next change or a new salience mapping.
* **Blocked chains**: each node's chain, cached, with the nodes it *read* (its blockers, every
  node of the supersession walks, every heir whose reason was asked). A change at a node (an
  attribute change, a ``blocks``/``depends_on``/``supersedes`` edge at it, its removal) marks
  it and every chain that read it dirty; a query recomputes only the dirty chains (through the
  same :func:`~graph.algorithms.contradictions._chain`, so the answer is the same by
  construction) and re-sorts the blocked list only if something changed.

The index is built lazily, by one scan of the graph, on the first query: replay and snapshot
restore pay nothing until something asks (a hook call on an unbuilt index is one attribute
test). Past graphs (``asOf``) keep using the from-scratch functions, which also serve as the
oracle in ``tests/unit/test_riskindex.py``.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx

from .algorithms.contradictions import (
    MAX_LIMIT,
    BlockedChain,
    BlockReason,
    Contradiction,
    _chain,
    _heirs,
    _Lookups,
)
from .algorithms.walk import EdgeRef, check_int, edge_ref
from .enums import EdgeType, Lifecycle, NodeKind
from .lifecycle import is_active

__all__ = ["RiskIndex"]

_CONTRADICTS = EdgeType.CONTRADICTS.value
_SUPERSEDES = EdgeType.SUPERSEDES.value
_BLOCKING = frozenset({EdgeType.BLOCKS.value, EdgeType.DEPENDS_ON.value, _SUPERSEDES})
_DECISION = NodeKind.DECISION.value
_REJECTED = Lifecycle.REJECTED.value

Pair = tuple[str, str]
#: A live pair's sort key: (-salience at stake, -the lower score, a, b).
Scored = tuple[float, float, str, str]


@dataclass
class _Memo:
    """The last contradictions answer: its sort keys, and the answers made so far from them."""

    version: int
    salience: Mapping[str, float]
    include_inactive: bool
    keyed: list[Scored]  # every pair's key, unsorted
    top: list[Scored]  # the smallest keys, in order (a prefix of sorted(keyed))
    made: list[Contradiction]  # the answers for a prefix of top


class _Tracked(_Lookups):
    """The per-query lookups, also noting every node the current chain reads (``deps``)."""

    def __init__(self, G: nx.MultiDiGraph[str]) -> None:
        super().__init__(G)
        self.deps: set[str] = set()
        self._visited: dict[str, set[str]] = {}

    def blockers(self, node_id: str) -> list[tuple[str, EdgeType]]:
        self.deps.add(node_id)
        return super().blockers(node_id)

    def heirs(self, node_id: str) -> list[list[str]]:
        visited = self._visited.get(node_id)
        if visited is None:
            visited = set()
            self._heirs[node_id] = _heirs(self.G, node_id, visited)
            self._visited[node_id] = visited
        self.deps |= visited
        return self._heirs[node_id]

    def reason(self, node_id: str, via: EdgeType) -> BlockReason | None:
        self.deps.add(node_id)
        return super().reason(node_id, via)


class RiskIndex:
    """Contradiction pairs and blocked chains, maintained from the graph's changes."""

    def __init__(self) -> None:
        self._graph: nx.MultiDiGraph[str] | None = None  # the graph it was built for
        self._reset()

    def _reset(self) -> None:
        self._pairs: dict[Pair, set[Pair]] = {}  # pair -> its stored halves
        self._refs: dict[Pair, EdgeRef] = {}  # pair -> its edge as the scan reports it
        self._active: dict[str, bool] = {}  # node -> is_active, until the node is touched
        self._partners: dict[str, set[str]] = {}  # node -> its contradicts partners
        self._links: dict[str, set[str]] = {}  # node -> nodes joined by a blocking type
        self._chains: dict[str, BlockedChain] = {}  # blocked node -> its chain
        self._deps: dict[str, tuple[str, ...]] = {}  # chain owner -> nodes its chain read
        self._readers: dict[str, set[str]] = {}  # node -> chain owners that read it
        self._dirty: set[str] = set()
        self._sorted: list[BlockedChain] | None = None
        self._version = 0  # moves whenever a pair, or a node's activity, may have changed
        self._live: tuple[int, list[Pair]] | None = None  # pairs with both ends active
        self._memo: _Memo | None = None

    # -- the graph's changes (GraphWatcher) ----------------------------------------------------
    def add_node(self, node_id: str) -> None:
        if self._graph is not None:
            self._touch(node_id)

    def node_changed(self, node_id: str) -> None:
        if self._graph is not None:
            self._touch(node_id)

    def set_edge(self, u: str, v: str, edge_type: str, weight: float) -> None:
        if self._graph is None:
            return
        if edge_type == _CONTRADICTS:
            self._add_half(u, v)
        elif edge_type in _BLOCKING:
            self._link(u, v)

    def remove_edge(self, u: str, v: str, edge_type: str) -> None:
        if self._graph is None:
            return
        if edge_type == _CONTRADICTS:
            pair = (u, v) if u < v else (v, u)
            halves = self._pairs.get(pair)
            if halves is not None:
                halves.discard((u, v))
                self._refs.pop(pair, None)
                self._version += 1
                if not halves:
                    self._drop_pair(pair)
        elif edge_type in _BLOCKING:
            self._touch(u)
            self._touch(v)

    def remove_node(self, node_id: str) -> None:
        if self._graph is None:
            return
        for other in list(self._partners.pop(node_id, ())):
            self._drop_pair((node_id, other) if node_id < other else (other, node_id))
        self._touch(node_id)
        for other in self._links.pop(node_id, set()):
            self._links.get(other, set()).discard(node_id)
            self._touch(other)

    # -- queries -------------------------------------------------------------------------------
    def contradictions(
        self,
        G: nx.MultiDiGraph[str],
        salience: Mapping[str, float],
        *,
        include_inactive: bool = False,
        limit: int | None = None,
    ) -> list[Contradiction]:
        """What ``find_contradictions(G, salience, ...)`` answers, from the maintained pairs.

        The answer is memoised for this ``salience`` object (the store replaces its mapping
        when the graph changes, never edits it in place) until a pair or an end's activity
        changes."""
        if limit is not None:
            check_int(limit, "limit", 1, MAX_LIMIT)
        self._ensure(G)
        memo = self._memo
        if (
            memo is None
            or memo.version != self._version
            or memo.salience is not salience
            or memo.include_inactive != include_inactive
        ):
            keyed = self._score(G, salience, include_inactive)
            memo = self._memo = _Memo(self._version, salience, include_inactive, keyed, [], [])
        want = len(memo.keyed) if limit is None else min(limit, len(memo.keyed))
        if want > len(memo.top):  # the first `want` keys in order: a heap for a short page
            few = want * 8 < len(memo.keyed)
            memo.top = heapq.nsmallest(want, memo.keyed) if few else sorted(memo.keyed)
        made = memo.made
        for _, _, a, b in memo.top[len(made) : want]:
            made.append(self._contradiction(G, salience, a, b))
        return made[:want]

    def blocked(self, G: nx.MultiDiGraph[str]) -> list[BlockedChain]:
        """What ``get_blocked_chain(G)`` answers: every blocked active decision's chain."""
        self._ensure(G)
        if self._dirty:
            self._recompute(G)
        if self._sorted is None:
            self._sorted = sorted(self._chains.values(), key=lambda c: (-len(c.chain), c.node_id))
        return list(self._sorted)

    # -- internals -----------------------------------------------------------------------------
    def _ensure(self, G: nx.MultiDiGraph[str]) -> None:
        """Build from ``G`` unless already built for it (a restored snapshot is a new graph)."""
        if self._graph is G:
            return
        self._reset()
        self._graph = G
        for u, v, key in G.edges(keys=True):
            if key == _CONTRADICTS:
                self._add_half(u, v)
            elif key in _BLOCKING:
                self._links.setdefault(u, set()).add(v)
                self._links.setdefault(v, set()).add(u)
        self._dirty = {n for n in self._links if n in G}

    def _add_half(self, u: str, v: str) -> None:
        if u == v:
            return
        pair = (u, v) if u < v else (v, u)
        self._pairs.setdefault(pair, set()).add((u, v))
        self._refs.pop(pair, None)
        self._version += 1
        self._partners.setdefault(u, set()).add(v)
        self._partners.setdefault(v, set()).add(u)

    def _drop_pair(self, pair: Pair) -> None:
        self._pairs.pop(pair, None)
        self._refs.pop(pair, None)
        a, b = pair
        self._partners.get(a, set()).discard(b)
        self._partners.get(b, set()).discard(a)
        self._version += 1

    def _link(self, u: str, v: str) -> None:
        self._links.setdefault(u, set()).add(v)
        self._links.setdefault(v, set()).add(u)
        self._touch(u)
        self._touch(v)

    def _touch(self, node_id: str) -> None:
        """``node_id`` changed: its own chain and every chain that read it must be recomputed
        (and its contradictions rescored, if it has any: its activity may have changed)."""
        if self._partners.get(node_id):
            self._version += 1
        self._active.pop(node_id, None)
        self._dirty.add(node_id)
        readers = self._readers.get(node_id)
        if readers:
            self._dirty |= readers

    def _score(
        self, G: nx.MultiDiGraph[str], salience: Mapping[str, float], include_inactive: bool
    ) -> list[Scored]:
        """Every pair's sort key (live pairs only unless ``include_inactive``): one pass over
        the pairs, nothing per edge."""
        get = salience.get
        keyed: list[Scored] = []
        append = keyed.append
        for a, b in self._pairs if include_inactive else self._live_pairs(G):
            sa, sb = get(a, 0.0), get(b, 0.0)
            append((-sa, -sb, a, b) if sa >= sb else (-sb, -sa, a, b))
        return keyed

    def _live_pairs(self, G: nx.MultiDiGraph[str]) -> list[Pair]:
        if self._live is not None and self._live[0] == self._version:
            return self._live[1]
        active = self._active
        for node_id, partners in self._partners.items():
            if partners and node_id not in active:
                active[node_id] = is_active(G, node_id)
        live = [(a, b) for a, b in self._pairs if active[a] and active[b]]
        self._live = (self._version, live)
        return live

    def _contradiction(
        self, G: nx.MultiDiGraph[str], salience: Mapping[str, float], a: str, b: str
    ) -> Contradiction:
        sa, sb = float(salience.get(a, 0.0)), float(salience.get(b, 0.0))
        ref = self._refs.get((a, b))
        if ref is None:
            # As the scan meets it: the canonical half's attributes when stored, else the other's.
            if G.has_edge(a, b, _CONTRADICTS):
                ref = edge_ref(G, a, b, _CONTRADICTS)
            else:
                ref = edge_ref(G, b, a, _CONTRADICTS)
            self._refs[a, b] = ref
        return Contradiction(a, b, max(sa, sb), sa, sb, ref)

    def _recompute(self, G: nx.MultiDiGraph[str]) -> None:
        lookups = _Tracked(G)
        changed = False
        for node_id in self._dirty:
            for read in self._deps.pop(node_id, ()):
                owners = self._readers.get(read)
                if owners is not None:
                    owners.discard(node_id)
                    if not owners:
                        del self._readers[read]
            old = self._chains.pop(node_id, None)
            new = self._chain_of(G, node_id, lookups)
            if new is not None:
                self._chains[node_id] = new
            changed = changed or old is not None or new is not None
        self._dirty = set()
        if changed:
            self._sorted = None

    def _chain_of(
        self, G: nx.MultiDiGraph[str], node_id: str, lookups: _Tracked
    ) -> BlockedChain | None:
        """``node_id``'s chain if it is a blocked active decision (as ``get_blocked_chain(G)``
        decides), noting what it read."""
        if node_id not in G:
            return None
        if G.nodes[node_id].get("kind", _DECISION) != _DECISION or not is_active(G, node_id):
            return None
        lookups.deps = set()
        chain = _chain(G, node_id, lookups) if lookups.blockers(node_id) else []
        self._deps[node_id] = tuple(lookups.deps)
        for read in lookups.deps:
            self._readers.setdefault(read, set()).add(node_id)
        direct = [b for b in chain if b.depth == 1]
        return BlockedChain(node_id, True, direct, chain) if direct else None
