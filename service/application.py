"""The application: one store, its indexes and the settings, and the use cases over them.

Each use case is the one place that drives the log, the graph and the indexes together; the
JSON-RPC methods in ``service/methods.py`` only translate wire shapes to and from these calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from graph.store import DecisionStore, StoreOptions
from retrieval.autoedges import AutoEdgeConfig
from retrieval.embedder import Embedder
from retrieval.index import DualIndex

from .guardrails import Rule, load_rules
from .settings import Settings
from .wiring import open_index


@dataclass
class Decigraph:
    """Everything a request needs; created once per process by :meth:`open`."""

    settings: Settings
    store: DecisionStore
    index: DualIndex
    auto_edges: AutoEdgeConfig
    rules: list[Rule] = field(default_factory=list)

    @classmethod
    def open(cls, settings: Settings, embedder: Embedder | None = None) -> Decigraph:
        rules = load_rules(rule_paths(settings))  # bad rules stop start-up, before any lock
        options = StoreOptions(fsync=settings.fsync, snapshot_every=settings.snapshot_every)
        store = DecisionStore.open(settings.data_dir, options)
        try:
            index = open_index(store, settings, embedder)
        except BaseException:
            store.close()
            raise
        return cls(settings, store, index, AutoEdgeConfig(), rules)

    def close(self) -> None:
        try:
            self.index.close()
        finally:
            self.store.close()


def rule_paths(settings: Settings) -> list[Path]:
    paths = [settings.data_dir / "guardrails"]
    if settings.guardrails_path is not None:
        paths.append(settings.guardrails_path)
    return paths
