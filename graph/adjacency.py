"""A sparse, incrementally maintained copy of the graph's typed edges, for salience.

NetworkX stays the graph of record. :class:`SparseAdjacency` mirrors only what PageRank needs
(node ids, and each directed ``(u, v, type)`` edge with its weight) in flat numpy arrays, so
:func:`graph.algorithms.salience.compute_salience` can build its sparse matrix with a handful of
vectorised operations instead of walking 500k NetworkX edges in Python.

Layout: nodes get dense indices in insertion order; every directed edge owns one *slot* in
parallel growable arrays (source index, target index, type code, weight). A dict maps the edge's
packed integer key to its slot and freed slots are reused, so :meth:`SparseAdjacency.set_edge`
and :meth:`SparseAdjacency.remove_edge` are O(1) amortised. Slot order depends on history;
:meth:`SparseAdjacency.canonical_edges` removes that dependence by ranking nodes by id.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import networkx as nx
import numpy as np
import numpy.typing as npt

from .builders import raw_adjacency
from .enums import EdgeType
from .errors import EdgeNotFoundError, ValidationError
from .slotmap import SlotMap

#: Edge type -> the small integer code stored per slot (``-1`` marks a free slot).
TYPE_CODES: Mapping[str, int] = MappingProxyType({t.value: code for code, t in enumerate(EdgeType)})
#: Code -> edge type, the inverse of :data:`TYPE_CODES`.
CODE_TYPES: tuple[EdgeType, ...] = tuple(EdgeType)

_FREE = -1
_PATCH_LIMIT = 64  # more new nodes than this: re-sort the ids instead of patching the order
_MIN_CAPACITY = 64
# Packed key = (source index << 33) | (target index << 4) | type code: an int64 (it fits the
# sorted arrays of :class:`graph.slotmap.SlotMap`) instead of a (str, str, str) tuple.
_TYPE_BITS = 4
_INDEX_BITS = 29
#: Node indices must fit their bits of the packed key (536 million nodes).
MAX_NODES = 1 << _INDEX_BITS

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class CanonicalEdges(NamedTuple):
    """Live edges with endpoints as *ranks* in id order, so equal graphs give equal arrays."""

    ids: list[str]
    """Node ids sorted ascending; rank ``i`` is ``ids[i]``."""
    source: IntArray
    target: IntArray
    type_code: npt.NDArray[np.int8]
    weight: FloatArray


class _IdOrder(NamedTuple):
    size: int  # node count when built
    ids: list[str]
    order: IntArray  # node index at each sorted position
    rank: IntArray  # sorted position of each node index


def _pack(u: int, v: int, code: int) -> int:
    return (((u << _INDEX_BITS) | v) << _TYPE_BITS) | code


def _type_code(edge_type: str) -> int:
    code = TYPE_CODES.get(edge_type)
    if code is None:
        raise ValidationError("edge_type", f"{edge_type!r} is not an edge type")
    return code


class SparseAdjacency:
    """Node ids and directed typed edges in growable numpy arrays, updated in O(1).

    The graph state calls :meth:`add_node` for each new node and :meth:`set_edge` /
    :meth:`remove_edge` once per *directed* edge stored or removed (a symmetric edge arrives as
    two calls). Use :meth:`from_graph` to build one from a loaded graph in bulk.

    Examples
    --------
    >>> adj = SparseAdjacency()
    >>> for node_id in ("bbbbbbbb", "aaaaaaaa"):
    ...     adj.add_node(node_id)
    >>> adj.set_edge("bbbbbbbb", "aaaaaaaa", "depends_on", 2.0)
    >>> len(adj), adj.number_of_edges()
    (2, 1)
    >>> list(adj.edges())
    [('bbbbbbbb', 'aaaaaaaa', 'depends_on', 2.0)]
    >>> adj.remove_edge("bbbbbbbb", "aaaaaaaa", "depends_on")
    >>> adj.number_of_edges()
    0
    """

    def __init__(self, capacity: int = _MIN_CAPACITY) -> None:
        capacity = max(_MIN_CAPACITY, capacity)
        self._ids: list[str] = []
        self._index: dict[str, int] = {}
        self._src = np.zeros(capacity, dtype=np.int32)
        self._dst = np.zeros(capacity, dtype=np.int32)
        self._type = np.full(capacity, _FREE, dtype=np.int8)
        self._weight = np.zeros(capacity, dtype=np.float64)
        self._slots = SlotMap()
        self._free: list[int] = []
        self._used = 0  # high-water mark: slots >= _used have never held an edge
        self._order: _IdOrder | None = None  # valid while no node has been added since

    # -- building ----------------------------------------------------------------------------
    @classmethod
    def from_graph(cls, G: nx.MultiDiGraph[str]) -> SparseAdjacency:
        """Build the adjacency of ``G`` (storage convention: edge key = type) in bulk.

        Parameters
        ----------
        G : networkx.MultiDiGraph
            A graph following :mod:`graph.builders`' convention; edge ``weight`` defaults to 1.

        Returns
        -------
        SparseAdjacency

        Examples
        --------
        >>> from graph.builders import build_graph
        >>> G = build_graph(["aaaaaaaa", "bbbbbbbb"], [("aaaaaaaa", "bbbbbbbb", "relates_to")])
        >>> adj = SparseAdjacency.from_graph(G)
        >>> len(adj), adj.number_of_edges()
        (2, 2)
        """
        # The walk is memory-bound (one dict per node pair and per edge), so each pass is one
        # flat comprehension over NetworkX's own dicts and the per-edge arithmetic is numpy.
        succ = raw_adjacency(G).succ
        ids = list(succ)
        n = len(ids)
        if n > MAX_NODES:
            raise ValidationError("node", f"more than {MAX_NODES} nodes")
        index = {node_id: i for i, node_id in enumerate(ids)}
        per_node = np.fromiter(map(len, succ.values()), dtype=np.int64, count=n)
        targets = [v for nbrs in succ.values() for v in nbrs]
        keyed = [by_key for nbrs in succ.values() for by_key in nbrs.values()]
        per_pair = np.fromiter(map(len, keyed), dtype=np.int64, count=len(keyed))
        target_index = np.fromiter(map(index.__getitem__, targets), np.int64, len(targets))
        keys: list[str] = []
        attrs: list[dict[str, Any]] = []
        for by_key in keyed:
            keys.extend(by_key)
            attrs.extend(by_key.values())
        m = len(keys)
        try:
            codes = np.fromiter(map(TYPE_CODES.__getitem__, keys), dtype=np.int64, count=m)
        except KeyError as exc:
            raise ValidationError("type", f"{exc.args[0]!r} is not an edge type") from None
        weights = np.fromiter([a.get("weight", 1.0) for a in attrs], dtype=np.float64, count=m)
        src = np.repeat(np.repeat(np.arange(n, dtype=np.int64), per_node), per_pair)
        dst = np.repeat(target_index, per_pair)

        adj = cls(capacity=m + m // 4)
        adj._ids = ids
        adj._index = index
        adj._src[:m] = src
        adj._dst[:m] = dst
        adj._type[:m] = codes
        adj._weight[:m] = weights
        adj._used = m
        packed = (((src << _INDEX_BITS) | dst) << _TYPE_BITS) | codes
        adj._slots = SlotMap.from_arrays(packed, np.arange(m))
        return adj

    # -- updates -----------------------------------------------------------------------------
    def add_node(self, node_id: str) -> None:
        """Register ``node_id`` (a no-op if it is already known)."""
        if node_id not in self._index:
            if len(self._ids) >= MAX_NODES:
                raise ValidationError("node", f"more than {MAX_NODES} nodes")
            self._index[node_id] = len(self._ids)
            self._ids.append(node_id)

    def set_edge(self, u: str, v: str, edge_type: str, weight: float) -> None:
        """Store the directed edge ``u -edge_type-> v`` with ``weight`` (replacing its weight).

        Unknown endpoints are registered, so the mirror never refuses what the graph accepted.
        """
        if not (math.isfinite(weight) and weight > 0):
            raise ValidationError("weight", f"must be a finite number > 0, got {weight!r}")
        code = _type_code(edge_type)
        self.add_node(u)
        self.add_node(v)
        ui, vi = self._index[u], self._index[v]
        key = _pack(ui, vi, code)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._take_slot()
            self._src[slot] = ui
            self._dst[slot] = vi
            self._type[slot] = code
            self._slots[key] = slot
        self._weight[slot] = weight

    def remove_edge(self, u: str, v: str, edge_type: str) -> None:
        """Forget the directed edge ``u -edge_type-> v``; raise if it is not stored."""
        ui, vi = self._index.get(u), self._index.get(v)
        code = TYPE_CODES.get(edge_type)
        slot = None
        if ui is not None and vi is not None and code is not None:
            slot = self._slots.pop(_pack(ui, vi, code), None)
        if slot is None:
            raise EdgeNotFoundError(u, v, edge_type)
        self._type[slot] = _FREE
        self._free.append(slot)

    def remove_node(self, node_id: str) -> None:
        """Forget ``node_id`` and every edge touching it (a no-op if it is unknown).

        The last node takes over the freed index so indices stay dense; the edges that named
        it are re-keyed. O(edges) vectorised: node removal is rare, edge changes are not.
        """
        index = self._index.pop(node_id, None)
        if index is None:
            return
        used = slice(0, self._used)
        live = self._type[used] != _FREE
        touching = np.flatnonzero(live & ((self._src[used] == index) | (self._dst[used] == index)))
        for slot in touching.tolist():
            key = _pack(int(self._src[slot]), int(self._dst[slot]), int(self._type[slot]))
            del self._slots[key]
            self._type[slot] = _FREE
            self._free.append(slot)
        last = len(self._ids) - 1
        moved_id = self._ids.pop()
        if index != last:
            self._ids[index] = moved_id
            self._index[moved_id] = index
            live = self._type[used] != _FREE
            src, dst = self._src[used], self._dst[used]
            for slot in np.flatnonzero(live & ((src == last) | (dst == last))).tolist():
                old = _pack(int(src[slot]), int(dst[slot]), int(self._type[slot]))
                del self._slots[old]
                if src[slot] == last:
                    src[slot] = index
                if dst[slot] == last:
                    dst[slot] = index
                self._slots[_pack(int(src[slot]), int(dst[slot]), int(self._type[slot]))] = slot
        self._order = None

    def _take_slot(self) -> int:
        if self._free:
            return self._free.pop()
        if self._used == len(self._type):
            self._grow()
        self._used += 1
        return self._used - 1

    def _grow(self) -> None:
        # Doubling keeps appends O(1) amortised; new slots start free.
        capacity = 2 * len(self._type)
        extra = capacity - len(self._type)
        self._src = np.concatenate([self._src, np.zeros(extra, dtype=np.int32)])
        self._dst = np.concatenate([self._dst, np.zeros(extra, dtype=np.int32)])
        self._type = np.concatenate([self._type, np.full(extra, _FREE, dtype=np.int8)])
        self._weight = np.concatenate([self._weight, np.zeros(extra, dtype=np.float64)])

    # -- reading -----------------------------------------------------------------------------
    def __len__(self) -> int:
        """Number of nodes."""
        return len(self._ids)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._index

    def number_of_edges(self) -> int:
        """Number of directed edges stored (a symmetric edge counts twice, as in the graph)."""
        return len(self._slots)

    def has_edge(self, u: str, v: str, edge_type: str) -> bool:
        """Whether the directed edge ``u -edge_type-> v`` is stored."""
        ui, vi = self._index.get(u), self._index.get(v)
        code = TYPE_CODES.get(edge_type)
        if ui is None or vi is None or code is None:
            return False
        return _pack(ui, vi, code) in self._slots

    def edges(self) -> Iterator[tuple[str, str, str, float]]:
        """Yield ``(u, v, type, weight)`` for every stored edge, sorted (for tests and debugging).

        Iterates in Python; the algorithms use :meth:`canonical_edges` instead.
        """
        live = np.flatnonzero(self._type[: self._used] != _FREE)
        rows = [
            (self._ids[u], self._ids[v], CODE_TYPES[t].value, w)
            for u, v, t, w in zip(
                self._src[live].tolist(),
                self._dst[live].tolist(),
                self._type[live].tolist(),
                self._weight[live].tolist(),
                strict=True,
            )
        ]
        yield from sorted(rows)

    def canonical_edges(self) -> CanonicalEdges:
        """The live edges with endpoints given as ranks in ascending id order.

        Two adjacencies holding the same nodes and edges return equal ``ids`` and equal *multisets*
        of edges, whatever order they were inserted or removed in (edge order still follows
        slots; callers sort when order matters).

        Examples
        --------
        >>> adj = SparseAdjacency()
        >>> for node_id in ("cccccccc", "aaaaaaaa"):
        ...     adj.add_node(node_id)
        >>> adj.set_edge("cccccccc", "aaaaaaaa", "blocks", 1.0)
        >>> edges = adj.canonical_edges()
        >>> edges.ids, edges.source.tolist(), edges.target.tolist()
        (['aaaaaaaa', 'cccccccc'], [1], [0])
        """
        ids, rank = self._id_order()
        live = np.flatnonzero(self._type[: self._used] != _FREE)
        return CanonicalEdges(
            ids=ids,
            source=rank[self._src[live]],
            target=rank[self._dst[live]],
            type_code=self._type[live],
            weight=self._weight[live],
        )

    def _id_order(self) -> tuple[list[str], IntArray]:
        """Sorted ids and each node index's rank among them.

        Nodes are mostly added (a removal drops the cache), so the cached order is patched
        with the few nodes added since it was built (a binary search and a list insert each)
        instead of re-sorting 100k ids after every write; a large batch is re-sorted from
        scratch. A list handed out is never mutated afterwards.
        """
        n = len(self._ids)
        cache = self._order
        if cache is not None and cache.size == n:
            return cache.ids, cache.rank
        if cache is None or n - cache.size > _PATCH_LIMIT:
            order = np.argsort(np.array(self._ids, dtype=str), kind="stable").astype(np.int64)
            ids = [self._ids[i] for i in order.tolist()]
        else:
            new = sorted(range(cache.size, n), key=self._ids.__getitem__)
            positions = [bisect.bisect_left(cache.ids, self._ids[i]) for i in new]
            order = np.insert(cache.order, positions, new)
            ids = list(cache.ids)
            for shift, (pos, i) in enumerate(zip(positions, new, strict=True)):
                ids.insert(pos + shift, self._ids[i])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        self._order = _IdOrder(n, ids, order, rank)
        return ids, rank
