"""Salience means the same at every graph size, and the graph guardrail reads it that way: a
decision nothing relies on is never protected, one that several decisions rely on always is."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import networkx as nx
import pytest

from graph.algorithms.salience import compute_salience
from graph.algorithms.salience_local import local_salience
from graph.builders import build_graph
from graph.enums import EdgeType
from service import usecases
from service.methods.decisions import RecordParams
from service.methods.guardrails import ActionParams
from service.settings import Settings
from service.usecases import Decigraph
from service.usecases.gate import GRAPH_GUARDRAIL, Candidate, graph_constraint
from tests.support.fakes import fake_app

THRESHOLD = Settings.model_fields["salience_threshold"].default
STAMP = {"created_at": "2026-01-01T00:00:00.000000Z", "recorded_by": "t", "lifecycle": "accepted"}
TARGET, LEAF = "7a7a7a7a", "1e1e1e1e"
DEPENDENTS = ["d0d0d0d0", "d1d1d1d1", "d2d2d2d2"]
# Every type, derived ones included, in rough proportion to a real store.
MIX = [
    ("temporal", 30),
    ("entity", 20),
    ("semantic", 10),
    ("causal", 4),
    ("relates_to", 8),
    ("depends_on", 12),
    ("refines", 4),
    ("caused_by", 3),
    ("blocks", 3),
    ("contradicts", 2),
    ("supersedes", 4),
]


def synthetic(n: int, seed: int = 11) -> nx.MultiDiGraph[str]:
    """``n`` decisions with about three edges each (hubs collect most links), plus a target
    three decisions depend on and a leaf; both sit in derived links like any other node."""
    rng = random.Random(seed)
    planted = {TARGET, LEAF, *DEPENDENTS}
    ids: list[str] = []
    taken = set(planted)
    while len(ids) < n - len(planted):
        node_id = f"{rng.getrandbits(32):08x}"
        if node_id not in taken:
            taken.add(node_id)
            ids.append(node_id)
    types = [t for t, _ in MIX]
    weights = [w for _, w in MIX]
    edges: set[tuple[str, str, str]] = set()
    for i in range(1, len(ids)):
        for _ in range(3):
            j = int(i * rng.random() ** 3)  # an earlier node: acyclic types stay acyclic
            edges.add((ids[i], ids[j], rng.choices(types, weights)[0]))
    for node_id in [TARGET, LEAF, *DEPENDENTS]:
        for derived in ("temporal", "entity", "semantic"):
            edges.add((node_id, rng.choice(ids), derived))
    edges |= {(d, TARGET, "depends_on") for d in DEPENDENTS}
    edges |= {(LEAF, rng.choice(ids[:20]), "depends_on"), (TARGET, ids[0], "depends_on")}
    # What build_graph makes, without validating 10k nodes one by one.
    G: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    G.add_nodes_from(
        (node_id, {"kind": "decision", "text": f"decision {node_id}", **STAMP})
        for node_id in [*ids, *planted]
    )
    attrs = {"weight": 1.0, "created_at": STAMP["created_at"], "created_by": "t"}
    for u, v, kind in sorted(edges):
        G.add_edge(u, v, key=kind, **attrs)
        if EdgeType(kind).symmetric:
            G.add_edge(v, u, key=kind, **attrs)
    return G


def gate(G: nx.MultiDiGraph[str], scores: dict[str, float], target: str) -> bool:
    """Whether the graph guardrail blocks contradicting ``target`` (the real rule, stub app)."""
    store = SimpleNamespace(
        graph=G,
        salience=lambda: scores,
        salience_of=lambda ids, **_: {i: local_salience(G, i) for i in ids},
    )
    app = cast(
        Decigraph,
        SimpleNamespace(store=store, settings=Settings()),
    )
    cand = Candidate(text="the opposite", fields={}, contradicts=[target])
    return any(f.guardrail_id == GRAPH_GUARDRAIL for f in graph_constraint(app, cand, None)[1])


@pytest.fixture(scope="module")
def sizes() -> dict[int, tuple[nx.MultiDiGraph[str], dict[str, float]]]:
    out = {}
    for n in (10, 10_000):
        G = synthetic(n)
        out[n] = (G, compute_salience(G))
    return out


def test_three_dependents_block_at_ten_and_at_ten_thousand(
    sizes: dict[int, tuple[nx.MultiDiGraph[str], dict[str, float]]],
) -> None:
    small, large = sizes[10][1][TARGET], sizes[10_000][1][TARGET]
    assert small == pytest.approx(large, abs=0.02)
    assert small == pytest.approx(1 - 1 / (1 + 3 * 0.85), abs=1e-6)
    for n, (G, scores) in sizes.items():
        assert scores[TARGET] > THRESHOLD, n
        assert gate(G, scores, TARGET), n


def test_a_leaf_scores_near_zero_and_never_blocks(
    sizes: dict[int, tuple[nx.MultiDiGraph[str], dict[str, float]]],
) -> None:
    for n, (G, scores) in sizes.items():
        assert scores[LEAF] < 0.1, n
        assert not gate(G, scores, LEAF), n
        assert all(scores[d] < 0.1 for d in DEPENDENTS), n


def test_the_threshold_protects_two_dependents_not_one() -> None:
    others = [f"{i:08x}" for i in range(1, 6)]
    for count, protected in ((0, False), (1, False), (2, True), (3, True)):
        G = build_graph([TARGET, *others], [(o, TARGET, "depends_on") for o in others[:count]])
        assert gate(G, compute_salience(G), TARGET) is protected, count
    for edge_type in ("blocks", "caused_by"):  # two of the other reliance types protect too
        flip = edge_type == "blocks"
        edges = [(TARGET, o, edge_type) if flip else (o, TARGET, edge_type) for o in others[:2]]
        G = build_graph([TARGET, *others], edges)
        assert gate(G, compute_salience(G), TARGET), edge_type


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def record(app: Decigraph, text: str, **fields: Any) -> str:
    params = RecordParams.model_validate({"decision": text, **fields})
    return usecases.record_decision(app, params, "agent").node.id


def test_a_lone_decision_is_not_protected_on_a_two_node_graph(app: Decigraph) -> None:
    # Today's F045 headline: on a fresh store the only decision scored 1.0 and blocked this.
    pg = record(app, "Use PostgreSQL as the primary datastore", category="architecture")
    sqlite = "Use SQLite for the primary datastore in development"
    action = ActionParams.model_validate(
        {"description": sqlite, "category": "architecture", "contradicts": [pg]}
    )
    assert usecases.check(app, action).allowed
    recorded = record(app, sqlite, category="architecture", contradicts=[pg])
    assert app.store.salience()[pg] == 0.0
    assert app.store.graph.has_edge(recorded, pg, "contradicts")
