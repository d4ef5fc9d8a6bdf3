"""Checking a store against its log: hash chain, replay equality, structural invariants."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from .enums import EdgeType
from .eventlog import LogEntry, TornTail, read_events
from .events import GENESIS_HASH
from .gcpause import gc_paused
from .state import GraphState, graph_hash


@dataclass
class VerifyReport:
    events: int
    last_hash: str
    graph_hash: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_log(log_path: Path, applied: int, live: nx.MultiDiGraph[str]) -> VerifyReport:
    """Replay the first ``applied`` events of the log and compare the result with ``live``.

    Exactly the prefix the store has applied is checked: a writer may be appending beyond it
    right now (verify runs read-only beside a live server).
    """
    return verify_events(read_events(log_path), applied, live)


def verify_events(
    items: Iterable[LogEntry | TornTail], applied: int, live: nx.MultiDiGraph[str]
) -> VerifyReport:
    """:func:`verify_log` over any log's verified events (``items`` checks the chain)."""
    fresh = GraphState()
    problems: list[str] = []
    count = 0
    try:
        with gc_paused():
            for item in items:
                if count == applied or isinstance(item, TornTail):
                    break
                fresh.apply(item.event)
                count += 1
    except Exception as exc:
        problems.append(f"log fails verification: {exc}")
    live_hash = graph_hash(live)
    if count != applied and not problems:
        problems.append(f"log holds {count} events but the store has applied {applied}")
    if graph_hash(fresh.graph) != live_hash and not problems:
        problems.append("graph differs from a full replay of the log")
    problems.extend(check_invariants(live))
    return VerifyReport(count, fresh.last_hash if count else GENESIS_HASH, live_hash, problems)


def check_invariants(G: nx.MultiDiGraph[str]) -> list[str]:
    """Structural rules every stored graph obeys; returns what is broken (empty when sound)."""
    problems: list[str] = []
    for u, v, key in G.edges(keys=True):
        edge_type = EdgeType(key)
        if u == v:
            problems.append(f"self-loop {key} on {u}")
        if edge_type.symmetric and not G.has_edge(v, u, key):
            problems.append(f"symmetric {key} edge {u}->{v} has no mirror")
    for edge_type in (t for t in EdgeType if t.acyclic):
        view = nx.DiGraph((u, v) for u, v, k in G.edges(keys=True) if k == edge_type.value)
        if not nx.is_directed_acyclic_graph(view):
            problems.append(f"{edge_type.value} edges contain a cycle")
    return problems
