"""Composition: build the retrieval side of a store from the one :class:`Settings` object."""

from __future__ import annotations

from graph.store import DecisionStore
from retrieval.embedder import Embedder, MiniLMEmbedder
from retrieval.index import DualIndex
from retrieval.vector import ChromaVectorIndex

from .settings import Settings


def open_vectors(settings: Settings) -> ChromaVectorIndex:
    """The configured ChromaDB collection: over HTTP when a URL is set, else embedded."""
    if settings.chroma_url:
        return ChromaVectorIndex.http(
            settings.chroma_url, settings.chroma_collection, settings.chroma_token
        )
    return ChromaVectorIndex.persistent(settings.data_dir / "chroma", settings.chroma_collection)


def open_index(
    store: DecisionStore, settings: Settings, embedder: Embedder | None = None
) -> DualIndex:
    """The store's indexes, caught up with its log and following it from now on."""
    return DualIndex.open(store, embedder or MiniLMEmbedder(), open_vectors(settings))
