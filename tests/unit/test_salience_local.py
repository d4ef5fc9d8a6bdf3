"""The gate's local salience against the exact whole-graph computation (issue 16).

``local_salience`` must equal ``compute_salience`` (to 1e-6; measured differences are ~1e-11)
on varied graphs: every edge type, cycles in the flow links, supersedes chains with several
heirs, custom type weights (symmetric types and the supersedes link counted); its lower bound
(a budget of ancestors) must never exceed the exact score, and the gate's verdicts are the
exact ones.
"""

from __future__ import annotations

import random
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph.algorithms.salience import compute_salience
from graph.algorithms.salience_local import local_salience
from graph.builders import build_graph
from graph.enums import EdgeType

BOUND = 1e-6
TYPES = [t.value for t in EdgeType if t is not EdgeType.SUPERSEDES]


def random_graph(seed: int, n: int, m: int, supersedes: int) -> nx.MultiDiGraph[str]:
    rng = random.Random(seed)
    ids = [f"{i:08x}" for i in range(n)]
    edges: dict[tuple[str, str, str], tuple[str, str, str, dict[str, Any]]] = {}
    for _ in range(m):
        a, b = rng.sample(range(n), 2)
        kind = rng.choice(TYPES)
        weight = rng.choice([1.0, 1.0, rng.uniform(0.05, 3.0)])
        edges[(ids[a], ids[b], kind)] = (ids[a], ids[b], kind, {"weight": weight})
    for _ in range(supersedes):  # newer (higher index) supersedes older: acyclic
        a, b = sorted(rng.sample(range(n), 2))
        edges[(ids[b], ids[a], "supersedes")] = (ids[b], ids[a], "supersedes", {})
    return build_graph(ids, list(edges.values()))


WEIGHTS: list[dict[str, float] | None] = [
    None,
    {"relates_to": 0.3, "supersedes": 0.5},
    {"semantic": 0.2, "temporal": 0.05, "contradicts": 0.4, "depends_on": 2.5},
]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 40),
    density=st.floats(0.5, 4.0),
    supersedes=st.integers(0, 12),
    weights=st.sampled_from(WEIGHTS),
)
def test_local_equals_the_whole_graph_computation(
    seed: int, n: int, density: float, supersedes: int, weights: dict[str, float] | None
) -> None:
    G = random_graph(seed, n, int(n * density), supersedes)
    exact = compute_salience(G, type_weights=weights)
    for node in sorted(G.nodes):
        local = local_salience(G, node, type_weights=weights)
        assert local.exact
        assert local.score == pytest.approx(exact[node], abs=BOUND), node
        bounded = local_salience(G, node, type_weights=weights, budget=3, at_least=0.2)
        assert bounded.score <= exact[node] + BOUND
        if not bounded.exact:
            assert bounded.score > 0.2
        else:
            assert bounded.score == pytest.approx(exact[node], abs=BOUND)


def hub_graph(dependents: int, depth: int) -> nx.MultiDiGraph[str]:
    """A hub that ``dependents`` chains of ``depth`` depends_on links lean on, plus noise."""
    ids = ["00000000"]
    edges: list[tuple[str, str, str]] = []
    for d in range(dependents):
        below = "00000000"
        for level in range(depth):
            node = f"{d + 1:04x}{level:04x}"
            ids.append(node)
            edges.append((node, below, "depends_on"))
            edges.append((node, "00000000", "semantic"))
            below = node
    return build_graph(ids, edges)


def test_a_hub_gets_a_lower_bound_within_the_budget_and_the_same_verdict() -> None:
    G = hub_graph(60, 4)
    exact = compute_salience(G)["00000000"]
    bounded = local_salience(G, "00000000", budget=20, at_least=0.5)
    assert not bounded.exact
    assert bounded.ancestors == 1
    assert 0.5 < bounded.score <= exact
    full = local_salience(G, "00000000")
    assert full.exact
    assert full.ancestors == 241
    assert full.score == pytest.approx(exact, abs=BOUND)
    # Below the threshold the bound is not enough: the whole ancestor set is solved.
    high = local_salience(G, "00000000", budget=20, at_least=0.999)
    assert high.exact
    assert high.score == pytest.approx(exact, abs=BOUND)


def test_on_a_real_store_graph_every_node_matches(tmp_path: Any) -> None:
    """A graph written through the store (its adjacency mirror and storage convention)."""
    from graph.drafts import DecisionDraft, EdgeDraft
    from graph.errors import DecigraphError
    from graph.ids import IdSource
    from graph.store import DecisionStore, StoreOptions

    rng = random.Random(3)
    store = DecisionStore.open(tmp_path / "d", StoreOptions(fsync="never"), ids=IdSource(3))
    ids: list[str] = []
    kinds = ["depends_on", "depends_on", "blocks", "refines", "caused_by", "relates_to"]
    for i in range(300):
        node = store.allocate_id()
        edges = [
            EdgeDraft(node, ids[min(len(ids) - 1, int(len(ids) * rng.random() ** 3))], k)
            for k in rng.sample(kinds, rng.choice([0, 1, 2]))
            if ids
        ]
        if ids and rng.random() < 0.05:
            edges.append(EdgeDraft(node, rng.choice(ids), "supersedes"))
        try:
            store.record(DecisionDraft(id=node, text=f"decision {i}"), "t", edges)
        except DecigraphError:
            store.record(DecisionDraft(id=node, text=f"decision {i}"), "t")
        ids.append(node)
    exact = store.salience()
    local = store.salience_of(ids)
    assert max(abs(local[i].score - exact[i]) for i in ids) <= BOUND
    store.close()


def gate_blocks(G: nx.MultiDiGraph[str], target: str, exact: bool, monkeypatch: Any) -> list[str]:
    """The graph guardrail's messages for contradicting ``target`` (real rule, stub app;
    ``exact``: ``DECIGRAPH_GATE_SALIENCE=exact``, read by the real ``Settings``)."""
    from types import SimpleNamespace
    from typing import cast

    from graph.algorithms.salience import compute_salience as whole
    from service.settings import Settings
    from service.usecases import Decigraph
    from service.usecases.gate import GATE_SALIENCE_ENV, Candidate, graph_constraint

    if exact:
        monkeypatch.setenv(GATE_SALIENCE_ENV, "exact")
    else:
        monkeypatch.delenv(GATE_SALIENCE_ENV, raising=False)
    settings = Settings().model_copy(update={"salience_threshold": 0.5})
    wholes: list[int] = []
    store = SimpleNamespace(
        graph=G,
        salience=lambda: wholes.append(1) or whole(G),
        salience_of=lambda ids, at_least=None: {
            i: local_salience(G, i, budget=256, at_least=at_least) for i in ids
        },
    )
    app = cast(Decigraph, SimpleNamespace(store=store, settings=settings))
    cand = Candidate(text="the opposite", fields={}, contradicts=[target])
    messages = [f.message for f in graph_constraint(app, cand, None)[1]]
    assert bool(wholes) == (exact and target in G)  # the setting chose the whole-graph path
    return messages


def test_the_gate_blocks_exactly_what_the_whole_graph_scores_block(monkeypatch: Any) -> None:
    for seed in range(12):
        G = random_graph(seed, 30, 70, 6)
        for node in sorted(G.nodes):
            local = gate_blocks(G, node, False, monkeypatch)
            assert bool(local) == bool(gate_blocks(G, node, True, monkeypatch)), (seed, node)
            assert local == gate_blocks(G, node, False, monkeypatch)  # reproducible
    hub = hub_graph(60, 4)
    (message,) = gate_blocks(hub, "00000000", False, monkeypatch)
    assert "(salience at least 0.63 > 0.50)" in message  # two dependents
