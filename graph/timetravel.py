"""The graph as it stood after any event: exact, because the graph is a pure function of the log.

:meth:`PastStates.at` replays the log's first ``seq`` events with the same
:meth:`~graph.state.GraphState.apply` the live store uses, so a past graph is, node for node
and edge for edge, the one the live store held then (same :func:`~graph.state.graph_hash`).
Replaying 100k events from nothing takes seconds, so it starts from the nearest *checkpoint*:

* checkpoints are snapshots (the :mod:`graph.snapshot` format) in ``<data-dir>/history/``:
  every periodic snapshot of the store is kept there (a hard link: no extra write), and a
  replay longer than ``every`` events leaves one at the last multiple of ``every`` before its
  target, so a later question near the same point replays at most ``every`` events;
* the store's own ``snapshot.json`` serves as one too;
* each checkpoint records the hash of the event it was taken after and is used only while the
  log still holds that event (a replaced log makes them stale, never wrong);
* the last ``cache_size`` graphs built are kept in memory (an explorer's slider, a notebook
  comparing two dates).

A past graph is read-only and shared between readers: nothing may mutate it. Once built it
is moved out of the cyclic collector's reach (:func:`~graph.gcpause.freeze_heap`: its million
containers were each walked by the next young and old collections, hundreds of ms at 100k)
and made free of reference cycles (:class:`_AcyclicGraph`), so reference counting alone frees
it when the cache drops it and its last reader is done.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

import networkx as nx

from .adjacency import SparseAdjacency
from .algorithms.salience import compute_salience
from .errors import DecigraphError, NodeNotFoundError
from .gcpause import freeze_heap, gc_paused
from .model import Node
from .snapshot import CHECKPOINT_DIR, SnapshotHeader, checkpoint_path, read_snapshot, write_snapshot
from .state import GraphState

if TYPE_CHECKING:
    from .persistence import LoggedGraph

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^ckpt-(\d{12})\.snap$")
_BATCH = 2000


class _AcyclicGraph(nx.MultiDiGraph):  # type: ignore[type-arg]
    """A past graph's class: networkx caches its edge and degree views on the graph, and each
    view points back at the graph, a reference cycle only the cyclic collector frees (never,
    once frozen). Here those views are made afresh on each access instead (a view is a small
    object over the same dicts), so a frozen past graph is freed by reference counting."""

    edges = property(nx.MultiDiGraph.edges.func)  # type: ignore[attr-defined]
    out_edges = property(nx.MultiDiGraph.out_edges.func)  # type: ignore[attr-defined]
    in_edges = property(nx.MultiDiGraph.in_edges.func)  # type: ignore[attr-defined]
    degree = property(nx.MultiDiGraph.degree.func)  # type: ignore[attr-defined]
    in_degree = property(nx.MultiDiGraph.in_degree.func)  # type: ignore[attr-defined]
    out_degree = property(nx.MultiDiGraph.out_degree.func)  # type: ignore[attr-defined]


def _detach(state: GraphState) -> tuple[nx.MultiDiGraph[str], int]:
    """The built graph and its seq, with nothing cyclic left holding them: the state (its
    planners are bound methods, a cycle) lets go of the graph, the graph its cached views."""
    G = state.graph
    for view in ("edges", "out_edges", "in_edges", "degree", "in_degree", "out_degree"):
        G.__dict__.pop(view, None)
    G.__class__ = _AcyclicGraph
    state.graph = nx.MultiDiGraph()
    state.external_ids = {}
    return G, state.seq


class PastGraph:
    """The graph after event ``seq``: what the read use cases need of a store, read-only."""

    def __init__(self, state: GraphState) -> None:
        self._graph, self._seq = _detach(state)
        self._salience: dict[str, float] | None = None
        self._guard = threading.Lock()
        #: Readers hold this like the live store's lock; nothing ever writes a past graph.
        self.lock = contextlib.nullcontext()

    @property
    def graph(self) -> nx.MultiDiGraph[str]:
        return self._graph

    @property
    def seq(self) -> int:
        return self._seq

    def get(self, node_id: str) -> Node:
        if node_id not in self.graph:
            raise NodeNotFoundError(node_id)
        return Node.from_attrs(node_id, self.graph.nodes[node_id])

    def salience(self) -> dict[str, float]:
        """Salience as the live store computed it at this seq (same function, same graph)."""
        with self._guard:
            if self._salience is None:
                adjacency = SparseAdjacency.from_graph(self.graph)
                self._salience = compute_salience(self.graph, adjacency)
            return self._salience


class PastStates:
    """Builds and caches :class:`PastGraph`s of one store (see the module docstring)."""

    def __init__(
        self, store: LoggedGraph, every: int = 5000, cache_size: int = 2, freeze: bool = False
    ) -> None:
        self._store = store
        #: Freeze each past graph built (:func:`~graph.gcpause.freeze_heap`; the server's
        #: ``gc_freeze`` setting turns it on).
        self.freeze = freeze
        self.every = max(1, every)
        self.cache_size = max(0, cache_size)
        self._cache: OrderedDict[int, PastGraph] = OrderedDict()
        self._build = threading.Lock()
        self.directory = store.data_dir / CHECKPOINT_DIR
        #: What the last build did (for benchmarks and ``stats``): where it started, how many
        #: events it replayed, which checkpoints it wrote.
        self.last_build: dict[str, int | list[int] | str] = {}
        store.reset_listeners.append(self.clear)

    def clear(self) -> None:
        """Forget the cached graphs (the log was replaced: checkpoints are re-checked)."""
        self._cache.clear()

    def at(self, seq: int) -> PastGraph:
        """The graph after event ``seq`` (``0 <= seq <=`` what the store has applied)."""
        if not 0 <= seq <= self._store.seq:
            raise ValueError(f"seq {seq} is outside the log (0..{self._store.seq})")
        with self._build:
            cached = self._cache.get(seq)
            if cached is not None:
                self._cache.move_to_end(seq)
                return cached
            # Paused from the checkpoint's load to the freeze: no collection in between walks
            # what is built (a young one did, between the load and the replay).
            with gc_paused():
                past = self._replay(seq)
            if self.cache_size:
                self._cache[seq] = past
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
            return past

    # -- building --------------------------------------------------------------------------
    def _replay(self, seq: int) -> PastGraph:
        state, origin = self._start(seq)
        written: list[int] = []
        start = state.seq
        # One checkpoint per long replay, at the last multiple of ``every`` on the way: the
        # next question near this point starts there (writing one at every multiple would
        # double the cost of the first question on a long log).
        mark = seq - seq % self.every
        with gc_paused():
            while state.seq < seq:
                for event in self._store.read_events(state.seq + 1, seq, _BATCH):
                    state.apply(event)
                    if event.seq == mark and mark - start >= self.every and self._save(state):
                        written.append(event.seq)
        self.last_build = {
            "seq": seq,
            "from": start,
            "origin": origin,
            "replayed": seq - start,
            "checkpointsWritten": written,
        }
        past = PastGraph(state)
        if self.freeze:
            freeze_heap()  # built with the collector paused: all of it is still in generation 0
        return past

    def _start(self, seq: int) -> tuple[GraphState, str]:
        """The newest usable checkpoint at or before ``seq`` as a state, else the empty one."""
        data_dir = self._store.data_dir
        candidates = [(s, checkpoint_path(data_dir, s)) for s in self.checkpoints()]
        snapshot_seq = self._store.snapshot_seq
        if snapshot_seq:
            candidates.append((snapshot_seq, self._store.snapshot_path))
        for at, path in sorted(candidates, key=lambda c: c[0], reverse=True):
            if at > seq:
                continue
            state = self._load(path, at)
            if state is not None:
                return state, path.name
        return GraphState(), "empty"

    def checkpoints(self) -> list[int]:
        """The seqs of the checkpoints on disk, ascending."""
        try:
            names = [p.name for p in self.directory.iterdir()]
        except OSError:
            return []
        return sorted(int(m.group(1)) for n in names if (m := _NAME.match(n)))

    def _load(self, path: Path, seq: int) -> GraphState | None:
        loaded = read_snapshot(path)
        if loaded is None:
            return None
        header, G = loaded
        try:
            event = self._store.read_events(header.seq, header.seq)
        except DecigraphError:
            return None
        if header.seq != seq or not event or event[0].hash != header.last_hash:
            return None  # taken from another history: stale, never used
        state = GraphState()
        state.graph = G
        state.seq = header.seq
        state.last_hash = header.last_hash
        state.external_ids = {
            attrs["external_id"]: node_id
            for node_id, attrs in G.nodes(data=True)
            if "external_id" in attrs
        }
        return state

    def _save(self, state: GraphState) -> bool:
        """Write a checkpoint of ``state`` (``False`` when the directory is not writable)."""
        if self._store.options.read_only:
            return False
        try:
            self.directory.mkdir(mode=0o700, exist_ok=True)
            header = SnapshotHeader(state.seq, 0, state.last_hash, "")
            write_snapshot(checkpoint_path(self._store.data_dir, state.seq), state.graph, header)
        except OSError as exc:
            logger.warning("could not write a history checkpoint (%s)", exc)
            return False
        return True
