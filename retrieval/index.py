"""The derived indexes of one store, kept in step with its event log.

:class:`DualIndex` subscribes to the store's commits. Every event names the nodes it touched;
each touched node is re-read from the graph (the source of truth) and compared with what the
indexes hold through a *fingerprint* of everything they derive from it. Changed nodes are
re-indexed, vanished ones dropped everywhere, so no event type can leave an orphan.

ChromaDB writes are queued and flushed in batches (before any vector query, and at
:meth:`DualIndex.flush`); the flush records the watermark ``(seq, hash)`` of the last event it
covers. On open, a watermark equal to the store's head means nothing to do; anything else is
caught up by comparing fingerprints, re-embedding only what changed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graph.enums import NodeKind
from graph.events import Event, Operation
from graph.lifecycle import is_superseded
from graph.model import Node
from graph.store import DecisionStore
from graph.timeutil import parse_ts
from graph.tracing import span

from . import logvectors, memsnap
from .embedder import Embedder
from .filters import (
    NO_FILTERS,
    RecallFilters,
    facet_values,
    node_time,
    passes,
    vector_metadata,
)
from .keyword import KeywordIndex
from .matrix import EmbeddingMatrix, Vector
from .nodekeys import (
    fingerprint,
    node_content_key,
    node_entities,
    time_key,
    touched_nodes,
)
from .planner import DEFAULT_VECTOR_POOL, exhaustive_search, search_vectors
from .structures import EntityIndex, FacetIndex, Timeline
from .text import embedding_text, keyword_text
from .vector import VectorIndex, VectorIndexError, Watermark

logger = logging.getLogger(__name__)

_FLUSH_BATCH = 512
EMBEDDED_FIELDS = frozenset({"text", "context", "pattern"})  # what embedding_text reads


@dataclass
class CatchUpReport:
    """What opening or rebuilding the index had to do."""

    embedded: int = 0
    removed: int = 0
    reused: int = 0
    full_rebuild: bool = False
    from_snapshot: bool = False


@dataclass
class _Pending:
    upserts: dict[str, tuple[Vector, dict[str, Any]]] = field(default_factory=dict)
    deletes: set[str] = field(default_factory=set)
    mark: Watermark | None = None


class DualIndex:
    """Vector (ChromaDB + in-memory matrix), keyword, entity, time and statement indexes.

    ``store``: the store whose log they follow (they subscribe to its commits); ``embedder``
    turns text into unit vectors (called only for something new); ``vectors``: the ChromaDB
    collection (embedded or over HTTP).
    """

    def __init__(self, store: DecisionStore, embedder: Embedder, vectors: VectorIndex) -> None:
        self.store = store
        self.embedder = embedder
        self.vectors = vectors
        self.keyword = KeywordIndex()
        self.matrix = EmbeddingMatrix(embedder.dimension)
        self.entities = EntityIndex()
        self.timeline = Timeline()
        self.facets = FacetIndex()
        self._fingerprints: dict[str, str] = {}
        self.contents: dict[str, str] = {}  # content key -> id, for idempotent remember
        self._content_of: dict[str, str] = {}
        self._prepared: dict[str, Vector] = {}  # embedding text -> vector from the write path
        self._pending = _Pending()
        self._lock = threading.RLock()
        self.report = CatchUpReport()
        self.healthy = True
        # Set when an embedded ChromaDB failed a write (e.g. its disk filled up; its next write
        # could block for good): no more writes to it, exact answers; the next open catches up.
        self.vectors_failed = False
        self.vector_pool = DEFAULT_VECTOR_POOL  # see retrieval.planner (0: ChromaDB answers)

    # -- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def open(cls, store: DecisionStore, embedder: Embedder, vectors: VectorIndex) -> DualIndex:
        """Build the in-memory indexes, catch ChromaDB up with the log, then follow it.

        After a clean shutdown the in-memory indexes come from their snapshot instead.
        """
        index = cls(store, embedder, vectors)
        with store.lock:
            head = index._head()
            state = memsnap.load(index.snapshot_path, head)
            if state is not None and vectors.watermark() == head:
                index._restore(state)
                index.report = CatchUpReport(reused=len(index.matrix), from_snapshot=True)
            else:
                index.report = index._catch_up()
            index._follow(store)
        return index

    @classmethod
    def open_detached(
        cls, store: DecisionStore, embedder: Embedder, vectors: VectorIndex
    ) -> DualIndex:
        """Indexes for a reader beside the owner: ``vectors`` is a private, empty collection.

        Nothing of the owner's (its ChromaDB, its snapshot) is written. When the owner's memory
        snapshot matches the log head, the vectors come from it; otherwise every node is
        embedded. Pair with a read-only store and :meth:`DecisionStore.refresh` to follow.
        """
        index = cls(store, embedder, vectors)
        with store.lock:
            head = index._head()
            state = memsnap.load(index.snapshot_path, head)
            if state is None:
                index.report = index._catch_up()
            else:
                index._restore(state)
                ids = sorted(index.matrix.ids())
                for start in range(0, len(ids), _FLUSH_BATCH):
                    chunk = ids[start : start + _FLUSH_BATCH]
                    rows = [index.matrix.get(i) for i in chunk]
                    vectors.upsert(
                        chunk,
                        np.stack([r for r in rows if r is not None]),
                        [index._metadata(store.get(i)) for i in chunk],
                    )
                vectors.set_watermark(head)
                index.report = CatchUpReport(reused=len(ids), from_snapshot=True)
            index._follow(store)
        return index

    def _follow(self, store: DecisionStore) -> None:
        """Hear every event; with a shared log, also hand it the write path's vectors (stored
        with the event, so no other replica embeds them again) and rebuild after a reset."""
        store.listeners.append(self.on_event)
        if store.log.shared:
            store.vector_source = self._prepared_vectors
            store.reset_listeners.append(self._resync)

    def _prepared_vectors(self) -> dict[str, bytes]:
        with self._lock:
            return logvectors.encode(self._prepared)

    def _resync(self) -> None:
        """The store was rebuilt from a shared log that diverged: rebuild the in-memory indexes
        and bring the vector index to the log as it is (fingerprints say what changed)."""
        with self.store.lock, self._lock:
            self._clear_memory()
            self.report = self._catch_up()

    @property
    def snapshot_path(self) -> Path:
        return self.store.data_dir / "index" / "memory.pickle"

    def close(self) -> None:
        """Stop following the log, flush ChromaDB and snapshot the in-memory indexes."""
        with self.store.lock, self._lock:
            if self.on_event in self.store.listeners:
                self.store.listeners.remove(self.on_event)
            try:
                if not self.vectors_failed:
                    self.flush()
                if self.healthy and not self.store.options.read_only:
                    memsnap.save(self.snapshot_path, self._head(), self._state())
            except (VectorIndexError, OSError) as exc:
                # ChromaDB unreachable or the disk full: the next open catches up from the log.
                logger.warning("indexes not flushed or snapshotted on close: %s", exc)
                self.snapshot_path.with_suffix(".tmp").unlink(missing_ok=True)
            finally:
                self.vectors.close()

    def _state(self) -> dict[str, Any]:
        return {
            "keyword": self.keyword,
            "matrix": self.matrix,
            "entities": self.entities,
            "timeline": self.timeline,
            "facets": self.facets,
            "fingerprints": self._fingerprints,
            "contents": self.contents,
            "content_of": self._content_of,
        }

    def _restore(self, state: dict[str, Any]) -> None:
        self.keyword = state["keyword"]
        self.matrix = state["matrix"]
        self.entities = state["entities"]
        self.timeline = state["timeline"]
        self.facets = state["facets"]
        self._fingerprints = state["fingerprints"]
        self.contents = state["contents"]
        self._content_of = state["content_of"]

    def rebuild(self) -> CatchUpReport:
        """Drop every index and rebuild it from the graph, re-embedding everything."""
        with self.store.lock, self._lock:
            self.vectors.reset()
            self._clear_memory()
            return self._catch_up(force=True)

    def _clear_memory(self) -> None:
        self.keyword = KeywordIndex()
        self.matrix = EmbeddingMatrix(self.embedder.dimension)
        self.entities = EntityIndex()
        self.timeline = Timeline()
        self.facets = FacetIndex()
        self._fingerprints.clear()
        self.contents.clear()
        self._content_of.clear()
        self._pending = _Pending()

    def _head(self) -> Watermark:
        return Watermark(self.store.seq, self.store.state.last_hash)

    def _catch_up(self, force: bool = False) -> CatchUpReport:
        report = CatchUpReport(full_rebuild=force)
        nodes = [self.store.get(node_id) for node_id in sorted(self.store.graph.nodes)]
        wanted = {node.id: fingerprint(node) for node in nodes}
        stored = self.vectors.fingerprints()
        stale = sorted(set(stored) - set(wanted))
        if stale:
            self.vectors.delete(stale)
        report.removed = len(stale)
        keep = [i for i in sorted(wanted) if stored.get(i) == wanted[i]]
        vectors = self.vectors.get_vectors(keep) if keep else {}
        missing = [node for node in nodes if node.id not in vectors]
        shared = self._stored_in_log(missing)
        vectors.update(shared)
        missing = [node for node in missing if node.id not in shared]
        report.embedded, report.reused = len(missing), len(vectors)
        # Embed and store in chunks: an interrupted catch-up keeps what it finished (the
        # fingerprints say so next time) and memory stays bounded.
        for start in range(0, len(missing), _FLUSH_BATCH):
            chunk = missing[start : start + _FLUSH_BATCH]
            fresh = self._embed([embedding_text(node) for node in chunk])
            self.vectors.upsert(
                [node.id for node in chunk], np.stack(fresh), [self._metadata(n) for n in chunk]
            )
            vectors.update(zip((node.id for node in chunk), fresh, strict=True))
        for node in nodes:
            self._index_memory(node, vectors[node.id])
        self.vectors.set_watermark(self._head())
        return report

    def _stored_in_log(self, nodes: Sequence[Node]) -> dict[str, Vector]:
        """The vectors a shared log holds for these nodes (another replica embedded them),
        stored in ChromaDB here like fresh ones."""
        found = logvectors.lookup(self.store.log, nodes, self.embedder.dimension)
        ids = sorted(found)
        by_id = {node.id: node for node in nodes}
        for start in range(0, len(ids), _FLUSH_BATCH):
            chunk = ids[start : start + _FLUSH_BATCH]
            metadata = [self._metadata(by_id[i]) for i in chunk]
            self.vectors.upsert(chunk, np.stack([found[i] for i in chunk]), metadata)
        return found

    # -- following the log -------------------------------------------------------------------
    def on_event(self, event: Event) -> None:
        """Store listener: bring every node the event touched up to date."""
        with self._lock, span("index.dual", op=event.op.value, seq=event.seq):
            changes = event.payload.get("changes") if event.op is Operation.UPDATE else None
            same_text = isinstance(changes, dict) and not EMBEDDED_FIELDS & changes.keys()
            try:
                for node_id in touched_nodes(event):
                    self.sync_node(node_id, same_text)
            except Exception:
                self.healthy = False  # never snapshot a state that missed an event
                raise
            self._pending.mark = Watermark(event.seq, event.hash)

    def sync_node(self, node_id: str, same_text: bool = False) -> None:
        """``same_text``: an update kept the embedded text, so the vector held is kept."""
        if node_id not in self.store.graph:
            self._drop(node_id)
            return
        node = self.store.get(node_id)
        current = fingerprint(node)
        if self._fingerprints.get(node_id) == current:
            self._index_text(node)  # keyword text or entities may change without the vector
            return
        text = embedding_text(node)
        vector = self._prepared.pop(text, None)
        if vector is None and same_text and node_id in self._fingerprints:
            vector = self.matrix.get(node_id)
        if vector is None:
            vector = logvectors.decode(self.store.incoming_vectors, text, self.embedder.dimension)
        if vector is None:
            vector = self._embed([text])[0]
        self._index_memory(node, vector)
        self._pending.deletes.discard(node_id)
        self._pending.upserts[node_id] = (vector, self._metadata(node))
        if len(self._pending.upserts) >= _FLUSH_BATCH and not self.vectors_failed:
            self.flush()

    @contextmanager
    def prepared(self, text: str, vector: Vector) -> Iterator[None]:
        """Offer the write path's vector for ``text`` to the listener during one write; it is
        withdrawn afterwards whatever the outcome, so a rejected write leaves nothing behind."""
        with self._lock:
            self._prepared[text] = vector
        try:
            yield
        finally:
            with self._lock:
                self._prepared.pop(text, None)

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        return self._embed(texts)

    def _drop(self, node_id: str) -> None:
        self.keyword.remove(node_id)
        self.matrix.remove(node_id)
        self.entities.remove(node_id)
        self.timeline.remove(node_id)
        self.facets.remove(node_id)
        key = self._content_of.pop(node_id, None)
        if key is not None and self.contents.get(key) == node_id:
            del self.contents[key]
        if self._fingerprints.pop(node_id, None) is not None:
            self._pending.upserts.pop(node_id, None)
            self._pending.deletes.add(node_id)

    def _index_memory(self, node: Node, vector: Vector) -> None:
        self.matrix.put(node.id, vector)
        self.facets.put(node.id, facet_values(node.to_attrs()))
        self._fingerprints[node.id] = fingerprint(node)
        self._index_text(node)

    def _index_text(self, node: Node) -> None:
        when = time_key(node)
        self.keyword.upsert(node.id, keyword_text(node))
        self.entities.put(node.id, node_entities(node), when)
        self.timeline.put(node.id, when, node.source)
        if node.kind is not NodeKind.DECISION:
            key = node_content_key(node)
            previous = self._content_of.get(node.id)
            if previous is not None and previous != key and self.contents.get(previous) == node.id:
                del self.contents[previous]
            self._content_of[node.id] = key
            self.contents.setdefault(key, node.id)

    def _metadata(self, node: Node) -> dict[str, Any]:
        attrs = node.to_attrs()
        meta: dict[str, Any] = vector_metadata(attrs, parse_ts(node_time(attrs)))
        meta["fp"] = fingerprint(node)
        return meta

    def _embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        return list(np.asarray(self.embedder.embed(texts), dtype=np.float32))

    def flush(self) -> None:
        """Send queued vector writes to ChromaDB and advance its watermark."""
        with self._lock, span("index.flush"):
            pending, self._pending = self._pending, _Pending()
            try:
                if pending.deletes:
                    self.vectors.delete(sorted(pending.deletes))
                if pending.upserts:
                    ids = sorted(pending.upserts)
                    self.vectors.upsert(
                        ids,
                        np.stack([pending.upserts[i][0] for i in ids]),
                        [pending.upserts[i][1] for i in ids],
                    )
                if pending.mark is not None:
                    self.vectors.set_watermark(pending.mark)
            except BaseException:
                # ChromaDB unreachable: keep the batch for the next flush. Nothing can have
                # queued meanwhile (the lock is held), and re-sending applied parts is harmless.
                self._pending = pending
                raise

    # -- reading -----------------------------------------------------------------------------
    def vector_search(
        self,
        vector: Vector,
        k: int,
        filters: RecallFilters = NO_FILTERS,
        accept: Callable[[str], bool] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest nodes passing the filters, with exact cosines (see ``planner``)."""
        if accept is None:
            G = self.store.graph

            def accept(node_id: str) -> bool:
                return passes(G, filters, node_id)

        if self.vectors_failed:
            return self._exact_search(vector, k, filters, accept)
        try:  # a read sends queued vectors on, so ChromaDB's copy (and watermark) stays current
            self.flush()
            return search_vectors(self, vector, k, filters, accept)
        except VectorIndexError as exc:
            # ChromaDB is unreachable or will not take the queued writes (e.g. its disk is
            # full). The in-memory matrix holds every vector: answer exactly from it, slower
            # but complete. A server's queue waits for it to come back; an embedded store is
            # not written again by this process (see ``vectors_failed``).
            logger.warning("vector search from the in-memory matrix: %s", exc)
            if getattr(self.vectors, "embedded", False):
                self.vectors_failed = True
            return self._exact_search(vector, k, filters, accept)

    def _exact_search(
        self, vector: Vector, k: int, filters: RecallFilters, accept: Callable[[str], bool]
    ) -> list[tuple[str, float]]:
        allowed = self.facets.candidates(filters.facets())
        return exhaustive_search(self, vector, max(k, 1), allowed, accept)

    def is_superseded(self, node_id: str) -> bool:
        return is_superseded(self.store.graph, node_id)

    def check_consistency(self) -> list[str]:
        """Every disagreement between the graph and any index (empty when all agree)."""
        with self.store.lock, self._lock:
            self.flush()
            graph_ids = set(self.store.graph.nodes)
            problems: list[str] = []
            views: dict[str, Iterable[str]] = {
                "keyword": self.keyword.ids(),
                "matrix": self.matrix.ids(),
                "entities": self.entities.ids(),
                "timeline": self.timeline.ids(),
                "facets": self.facets.ids(),
                "chroma": self.vectors.all_ids(),
            }
            for name, ids in views.items():
                held = set(ids)
                for node_id in sorted(held - graph_ids):
                    problems.append(f"{name} holds {node_id}, which the graph does not")
                for node_id in sorted(graph_ids - held):
                    problems.append(f"{name} lacks {node_id}")
            stored = self.vectors.fingerprints()
            for node_id in sorted(graph_ids & set(stored)):
                if stored[node_id] != fingerprint(self.store.get(node_id)):
                    problems.append(f"chroma holds a stale vector for {node_id}")
            mark = self.vectors.watermark()
            if mark != self._head():
                problems.append(f"chroma watermark {mark} is not the log head {self._head()}")
            return problems


def audit_vectors(store: DecisionStore, vectors: VectorIndex) -> list[str]:
    """Read-only check of a vector index against the graph (orphans, gaps, stale vectors); no
    model needed (it compares fingerprints), so ``decigraph verify`` runs it beside a writer."""
    stored = vectors.fingerprints()
    problems = [
        f"chroma holds {i}, which the graph does not"
        for i in sorted(set(stored) - set(store.graph.nodes))
    ]
    for node_id in sorted(store.graph.nodes):
        held = stored.get(node_id)
        if held is None:
            problems.append(f"chroma lacks {node_id}")
        elif held != fingerprint(store.get(node_id)):
            problems.append(f"chroma holds a stale vector for {node_id}")
    mark = vectors.watermark()
    head = Watermark(store.seq, store.state.last_hash)
    if mark != head:
        problems.append(f"chroma watermark {mark} is not the log head {head}")
    return problems
