"""What every use case works on: one store, its indexes, the guardrail rules and the settings.

:mod:`service.composition` builds it (the one place that opens stores and indexes); the use
cases in this package are the only code that drives it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from graph.deliberation import DeliberationTracker
from graph.history import HistoryIndex
from graph.store import DecisionStore
from graph.timetravel import PastStates
from retrieval.autoedges import AutoEdgeConfig
from retrieval.contradiction.judge import PairJudge, PairScorer
from retrieval.contradiction.llm import LLMJudge
from retrieval.index import DualIndex
from service.settings import Settings

from .breaker_model import BreakerRuntime
from .feedhub import FeedHub
from .rules import Rule

T = TypeVar("T")


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
    #: Edge derivation's caps and thresholds (the neighbour pool from ``settings``).
    auto_edges: AutoEdgeConfig = field(init=False)
    read_only: bool = False
    #: The contradiction pair judge (the shipped weights, checked against their digest).
    pair_judge: PairScorer = field(default_factory=PairJudge)
    #: The optional second opinion on ``review`` pairs (``Settings.judge_url``).
    llm_judge: LLMJudge | None = None
    on_gated: Callable[[], None] | None = None
    #: CSTP's deliberation tracker: in memory, per process (``usecases.tracker``).
    tracker: DeliberationTracker = field(default_factory=DeliberationTracker)
    #: Circuit breakers: their configuration and the half-open probes (``usecases.breakers``).
    breakers: BreakerRuntime = field(default_factory=BreakerRuntime)
    #: Derived views computed once per log position (:meth:`at_seq`).
    _memo: dict[str, tuple[int, Any]] = field(default_factory=dict, repr=False)
    #: Event times and each node's events (built on the first history question).
    history: HistoryIndex = field(init=False, repr=False)
    #: The graph as it stood after any event (``asOf`` reads).
    past: PastStates = field(init=False, repr=False)
    #: Wake-ups for the change feed's readers (``usecases.feed``, ``usecases.webhooks``).
    feed: FeedHub = field(init=False, repr=False)
    #: Loads the judge's network in the background (:meth:`preloading_judge`).
    _judge_loader: threading.Thread | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.auto_edges = AutoEdgeConfig(semantic_scan_pool=self.settings.neighbour_pool)
        self.index.vector_pool = self.settings.recall_pool
        self.history = HistoryIndex(self.store)
        self.feed = FeedHub(self.store)
        self.past = PastStates(
            self.store, self.settings.history_checkpoint_every, self.settings.history_cache
        )

    def at_seq(self, name: str, compute: Callable[[], T]) -> T:
        """``compute()``'s value for the graph as it stands, computed once per log position:
        a pure function of the graph (every decision as analytics reads it, every blocked
        chain) is shared by the reads between two writes instead of rebuilt by each. The
        value must not be mutated by callers."""
        with self.store.lock:
            seq = self.store.seq
            hit = self._memo.get(name)
            if hit is not None and hit[0] == seq:
                value: T = hit[1]
                return value
            value = compute()
            self._memo[name] = (seq, value)
            return value

    def forget_derived(self) -> None:
        """Drop what :meth:`at_seq` computed (the store was rebuilt from its log)."""
        with self.store.lock:
            self._memo.clear()

    def preloading_judge(self) -> Decigraph:
        """Start loading the contradiction judge's network now, in the background (a server:
        not on the first check); :meth:`close` waits for it (a process that exits while torch
        loads it aborts). Returns this app."""
        self._judge_loader = threading.Thread(target=self.pair_judge.load, name="decigraph-judge")
        self._judge_loader.start()
        return self

    def close(self) -> None:
        if self._judge_loader is not None:
            self._judge_loader.join()
        self.feed.close()  # the feed's readers end
        self.store.stop_following()  # nothing applied after the indexes stop listening
        try:
            self.index.close()
        finally:
            self.store.close()
