"""The application: one store, its indexes and the settings, and the use cases over them.

Each use case is the one place that drives the log, the graph and the indexes together; the
JSON-RPC methods in ``service/methods.py`` only translate wire shapes to and from these calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.store import DecisionStore, StoreOptions
from retrieval.autoedges import AutoEdgeConfig
from retrieval.embedder import Embedder
from retrieval.index import DualIndex

from .settings import Settings
from .wiring import open_index


@dataclass
class Decigraph:
    """Everything a request needs; created once per process by :meth:`open`."""

    settings: Settings
    store: DecisionStore
    index: DualIndex
    auto_edges: AutoEdgeConfig

    @classmethod
    def open(cls, settings: Settings, embedder: Embedder | None = None) -> Decigraph:
        options = StoreOptions(fsync=settings.fsync, snapshot_every=settings.snapshot_every)
        store = DecisionStore.open(settings.data_dir, options)
        try:
            index = open_index(store, settings, embedder)
        except BaseException:
            store.close()
            raise
        return cls(settings, store, index, AutoEdgeConfig())

    def close(self) -> None:
        try:
            self.index.close()
        finally:
            self.store.close()
