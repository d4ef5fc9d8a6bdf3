"""The composition root: the one place a process opens a store and its indexes.

Every process kind comes through here: the server and the CLI (the writer), one-shot CLI
commands that only read (:func:`open_store` read-only) and the analyst API beside a running
server (a read-only store with private in-memory indexes).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Literal

from graph.errors import StoreLockedError
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions
from graph.timeutil import utc_now
from retrieval.embedder import Embedder, MiniLMEmbedder
from retrieval.index import DualIndex
from retrieval.vector import ChromaVectorIndex

from .settings import Settings
from .usecases.context import Decigraph
from .usecases.rules import Rule, load_rules

Mode = Literal["writer", "read_only", "auto"]


def rule_paths(settings: Settings) -> list[Path]:
    """Where guardrail rules are read: ``<data-dir>/guardrails`` and the configured path."""
    paths = [settings.data_dir / "guardrails"]
    if settings.guardrails_path is not None:
        paths.append(settings.guardrails_path)
    return paths


def open_vectors(settings: Settings) -> ChromaVectorIndex:
    """The configured ChromaDB collection: over HTTP when a URL is set, else embedded."""
    if settings.chroma_url:
        return ChromaVectorIndex.http(
            settings.chroma_url, settings.chroma_collection, settings.chroma_token
        )
    return ChromaVectorIndex.persistent(settings.data_dir / "chroma", settings.chroma_collection)


def open_store(
    settings: Settings,
    *,
    read_only: bool = False,
    use_snapshot: bool = True,
    clock: Callable[[], datetime] = utc_now,
    ids: IdSource | None = None,
) -> DecisionStore:
    """The event-sourced store in ``settings.data_dir`` (the writer holds its directory lock)."""
    options = StoreOptions(
        fsync=settings.fsync,
        snapshot_every=0 if not use_snapshot else settings.snapshot_every,
        read_only=read_only,
        use_snapshot=use_snapshot,
    )
    return DecisionStore.open(settings.data_dir, options, clock=clock, ids=ids)


def open_index(
    store: DecisionStore, settings: Settings, embedder: Embedder | None = None
) -> DualIndex:
    """The store's indexes, caught up with its log and following it from now on."""
    return DualIndex.open(store, embedder or MiniLMEmbedder(), open_vectors(settings))


def open_app(
    settings: Settings, embedder: Embedder | None = None, *, mode: Mode = "writer"
) -> Decigraph:
    """A store with its indexes and rules, ready for the use cases.

    ``mode="writer"`` takes the directory lock (:class:`~graph.errors.StoreLockedError` when a
    server holds it); ``"read_only"`` writes nothing in the directory and keeps its vectors in a
    private in-memory ChromaDB; ``"auto"`` is the writer when it can be, else read-only.
    """
    rules = load_rules(rule_paths(settings))  # bad rules stop start-up, before any lock
    if mode != "read_only":
        try:
            return _writer(settings, embedder, rules)
        except StoreLockedError:
            if mode == "writer":
                raise
    store = open_store(settings, read_only=True)
    try:
        vectors = ChromaVectorIndex.ephemeral(f"reader-{uuid.uuid4().hex[:12]}")
        index = DualIndex.open_detached(store, embedder or MiniLMEmbedder(), vectors)
    except BaseException:
        store.close()
        raise
    return Decigraph(settings, store, index, rules, read_only=True)


def _writer(settings: Settings, embedder: Embedder | None, rules: list[Rule]) -> Decigraph:
    store = open_store(settings)
    try:
        index = open_index(store, settings, embedder)
    except BaseException:
        store.close()
        raise
    return Decigraph(settings, store, index, rules)
