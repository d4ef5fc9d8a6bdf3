"""What every use case works on: one store, its indexes, the guardrail rules and the settings.

:mod:`service.composition` builds it (the one place that opens stores and indexes); the use
cases in this package are the only code that drives it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from graph.deliberation import DeliberationTracker
from graph.store import DecisionStore
from retrieval.autoedges import AutoEdgeConfig
from retrieval.index import DualIndex
from service.settings import Settings

from .breaker_model import BreakerRuntime
from .rules import Rule


@dataclass
class Decigraph:
    """A store with its indexes and rules; every use case takes one as its first argument.

    ``on_gated`` runs inside a write's critical section, after the guardrails passed and before
    the event is appended (a seam for tests and tracing: nothing else can write in between).
    """

    settings: Settings
    store: DecisionStore
    index: DualIndex
    rules: list[Rule] = field(default_factory=list)
    auto_edges: AutoEdgeConfig = field(default_factory=AutoEdgeConfig)
    read_only: bool = False
    on_gated: Callable[[], None] | None = None
    #: CSTP's deliberation tracker: in memory, per process (``usecases.tracker``).
    tracker: DeliberationTracker = field(default_factory=DeliberationTracker)
    #: Circuit breakers: their configuration and the half-open probes (``usecases.breakers``).
    breakers: BreakerRuntime = field(default_factory=BreakerRuntime)

    def close(self) -> None:
        try:
            self.index.close()
        finally:
            self.store.close()
