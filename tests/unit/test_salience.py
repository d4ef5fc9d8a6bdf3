"""Salience: the maintained sparse adjacency, the weighted projection and the damped walk over
it, on a scale that means the same at every graph size."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.adjacency import SparseAdjacency
from graph.algorithms.salience import (
    DEFAULT_TYPE_WEIGHTS,
    compute_salience,
    get_high_salience,
    salience_percentiles,
    weighted_projection,
)
from graph.builders import build_graph
from graph.enums import EdgeType
from graph.errors import EdgeNotFoundError, NodeNotFoundError, ValidationError
from graph.lifecycle import successors_of
from graph.store import DecisionStore, StoreOptions
from tests.conftest import StoreFactory, decision

EDGE_TYPES = [t.value for t in EdgeType]
A, B, C, D, X = "aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd", "ffffffff"
#: Every type weighted (the weights salience used before it counted only reliance).
ALL_TYPES = {
    "contradicts": 0.3,
    "relates_to": 0.3,
    "causal": 0.5,
    "semantic": 0.2,
    "entity": 0.1,
    "temporal": 0.05,
    "supersedes": 1.0,
}

EdgeSpec = tuple[str, str, str, dict[str, Any]]


@st.composite
def graph_specs(draw: st.DrawFn, max_nodes: int = 10, max_edges: int = 30) -> Any:
    """Node ids (creation order) and distinct edges that obey the store's rules.

    Acyclic types only point from a later node to an earlier one, so they stay acyclic; ids
    are random, so id order (which salience sorts by) differs from creation order.
    """
    n = draw(st.integers(1, max_nodes))
    keys = draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n, unique=True))
    ids = [f"{k:08x}" for k in keys]
    raw = draw(
        st.lists(
            st.tuples(
                st.integers(0, n - 1),
                st.integers(0, n - 1),
                st.sampled_from(EDGE_TYPES),
                st.sampled_from([1.0, 0.5, 2.0, 3.25]),
            ),
            max_size=max_edges,
        )
    )
    edges: list[EdgeSpec] = []
    seen: set[tuple[str, str, str]] = set()
    for i, j, edge_type, weight in raw:
        if i == j:
            continue
        later, earlier = max(i, j), min(i, j)
        u, v = (ids[later], ids[earlier]) if EdgeType(edge_type).acyclic else (ids[i], ids[j])
        if EdgeType(edge_type).symmetric:
            u, v = min(u, v), max(u, v)
        if (u, v, edge_type) not in seen:
            seen.add((u, v, edge_type))
            edges.append((u, v, edge_type, {"weight": weight}))
    return ids, edges


def reference_projection(
    G: nx.MultiDiGraph[str], weights: Mapping[str, float] | None = None
) -> nx.DiGraph[str]:
    """The projection written the slow, obvious way, to check the vectorised one against."""
    table = {t.value: w for t, w in DEFAULT_TYPE_WEIGHTS.items()} | dict(weights or {})

    def heirs(node: str) -> set[str]:
        newer = successors_of(G, node)
        return set().union(*(heirs(s) for s in newer)) if newer else {node}

    P: nx.DiGraph[str] = nx.DiGraph()
    P.add_nodes_from(G)

    def link(a: str, b: str, weight: float) -> None:
        targets = heirs(b)
        for t in targets:
            if t != a:
                old = P.edges[a, t]["weight"] if P.has_edge(a, t) else 0.0
                P.add_edge(a, t, weight=old + weight / len(targets))

    for u, v, key, attrs in G.edges(keys=True, data=True):
        if key != "supersedes" and table[key] > 0:
            a, b = (v, u) if key == "blocks" else (u, v)
            link(a, b, table[key] * attrs.get("weight", 1.0))
    for node in G:
        if successors_of(G, node) and table["supersedes"] > 0:
            link(node, node, table["supersedes"])
    return P


def reference_salience(
    G: nx.MultiDiGraph[str], weights: Mapping[str, float] | None = None, alpha: float = 0.85
) -> dict[str, float]:
    """The scale's closed form, solved directly: ``r = 1 + alpha * S^T r``, where ``S`` is the
    projection with each row divided by ``max(1, row sum)``; salience is ``1 - 1 / r``."""
    P = reference_projection(G, weights)
    ids = sorted(P)
    matrix = nx.to_numpy_array(P, nodelist=ids, weight="weight")
    share = matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1.0)
    r = np.linalg.solve(np.eye(len(ids)) - alpha * share.T, np.ones(len(ids)))
    return {node: 1.0 - 1.0 / float(value) for node, value in zip(ids, r, strict=True)}


def mirror(
    ids: list[str], edges: list[tuple[str, str, str, float]], rng: random.Random
) -> SparseAdjacency:
    """An adjacency fed one call at a time, in a shuffled order, with edges added and removed."""
    adj = SparseAdjacency()
    for node_id in rng.sample(ids, len(ids)):
        adj.add_node(node_id)
    noise = [(u, v, rng.choice(EDGE_TYPES), 9.0) for u, v, _, _ in edges]
    for u, v, edge_type, weight in rng.sample(edges + noise, len(edges) + len(noise)):
        adj.set_edge(u, v, edge_type, weight)
    real = {(u, v, t) for u, v, t, _ in edges}
    for key in sorted({(u, v, t) for u, v, t, _ in noise} - real):
        adj.remove_edge(*key)
    for u, v, edge_type, weight in edges:
        adj.set_edge(u, v, edge_type, weight)  # restore any weight a noise edge overwrote
    return adj


def stored_edges(G: nx.MultiDiGraph[str]) -> list[tuple[str, str, str, float]]:
    return sorted((u, v, k, a.get("weight", 1.0)) for u, v, k, a in G.edges(keys=True, data=True))


# -- SparseAdjacency ---------------------------------------------------------------------------
def test_adjacency_add_set_remove() -> None:
    adj = SparseAdjacency()
    adj.add_node(A)
    adj.add_node(A)
    adj.set_edge(A, B, "depends_on", 1.0)  # registers B
    adj.set_edge(A, B, "depends_on", 2.5)  # same edge: new weight, not a second edge
    adj.set_edge(A, B, "refines", 1.0)
    assert len(adj) == 2
    assert B in adj
    assert adj.number_of_edges() == 2
    assert list(adj.edges()) == [(A, B, "depends_on", 2.5), (A, B, "refines", 1.0)]
    adj.remove_edge(A, B, "depends_on")
    assert not adj.has_edge(A, B, "depends_on")
    assert adj.has_edge(A, B, "refines")
    assert list(adj.edges()) == [(A, B, "refines", 1.0)]


@pytest.mark.parametrize(
    ("u", "v", "edge_type"),
    [(A, B, "depends_on"), (A, X, "refines"), (B, A, "refines"), (A, B, "bogus")],
)
def test_removing_a_missing_edge_raises(u: str, v: str, edge_type: str) -> None:
    adj = SparseAdjacency()
    adj.set_edge(A, B, "refines", 1.0)
    with pytest.raises(EdgeNotFoundError):
        adj.remove_edge(u, v, edge_type)
    assert adj.number_of_edges() == 1


@pytest.mark.parametrize(
    ("edge_type", "weight", "field"),
    [
        ("bogus", 1.0, "edge_type"),
        ("depends_on", 0.0, "weight"),
        ("depends_on", -1.0, "weight"),
        ("depends_on", math.nan, "weight"),
        ("depends_on", math.inf, "weight"),
    ],
)
def test_set_edge_rejects_bad_input(edge_type: str, weight: float, field: str) -> None:
    adj = SparseAdjacency()
    with pytest.raises(ValidationError) as info:
        adj.set_edge(A, B, edge_type, weight)
    assert info.value.field == field
    assert adj.number_of_edges() == 0


def test_slots_are_reused_and_storage_grows() -> None:
    adj = SparseAdjacency()
    ids = [f"{i:08x}" for i in range(40)]
    edges = [(u, v, "relates_to") for u in ids for v in ids[:5] if u != v]  # 190 > 64 slots
    for u, v, t in edges:
        adj.set_edge(u, v, t, 1.0)
    assert adj.number_of_edges() == len(edges)
    high_water = adj._used
    for _ in range(5):  # churn: freed slots must be taken again, not new ones
        for u, v, t in edges[:100]:
            adj.remove_edge(u, v, t)
        for u, v, t in edges[:100]:
            adj.set_edge(u, v, t, 2.0)
    assert adj._used == high_water
    assert sorted(adj.edges()) == sorted(
        (u, v, t, 2.0 if i < 100 else 1.0) for i, (u, v, t) in enumerate(edges)
    )


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=80), min_size=1, max_size=6
    )
)
def test_id_order_stays_sorted_as_nodes_arrive(batches: list[list[int]]) -> None:
    # Small batches patch the cached order, large ones re-sort: both must give the same ranks.
    adj = SparseAdjacency()
    previous: list[str] = []
    previous_copy: list[str] = []
    for batch in batches:
        for key in batch:
            node_id = f"{key:08x}"
            adj.add_node(node_id)
            if previous:
                adj.set_edge(node_id, previous[0], "refines", 1.0)
        edges = adj.canonical_edges()
        assert edges.ids == sorted(adj._index)
        got = sorted(
            (edges.ids[u], edges.ids[v], t)
            for u, v, t in zip(
                edges.source.tolist(), edges.target.tolist(), edges.type_code.tolist(), strict=True
            )
        )
        assert [(u, v) for u, v, _ in got] == [(u, v) for u, v, _, _ in adj.edges()]
        assert previous == previous_copy  # a list handed out earlier is never changed
        previous, previous_copy = edges.ids, list(edges.ids)


def test_from_graph_rejects_an_unknown_edge_type() -> None:
    G = build_graph([A, B])
    G.add_edge(A, B, key="bogus", weight=1.0)
    with pytest.raises(ValidationError):
        SparseAdjacency.from_graph(G)


@settings(max_examples=60, deadline=None)
@given(
    spec=graph_specs(),
    script=st.lists(st.tuples(st.booleans(), st.integers(0, 60)), max_size=60),
)
def test_incremental_adjacency_equals_bulk_build(
    spec: tuple[list[str], list[EdgeSpec]], script: list[tuple[bool, int]]
) -> None:
    ids, edges = spec
    G = build_graph(ids)
    adj = SparseAdjacency()
    for node_id in ids:
        adj.add_node(node_id)
    full = build_graph(ids, edges)
    pool = sorted(full.edges(keys=True, data=True), key=lambda e: e[:3])
    for add, pick in script:
        if not pool:
            break
        u, v, key, attrs = pool[pick % len(pool)]
        if add and not G.has_edge(u, v, key):
            G.add_edge(u, v, key=key, **attrs)
            adj.set_edge(u, v, key, attrs["weight"])
        elif not add and G.has_edge(u, v, key):
            G.remove_edge(u, v, key=key)
            adj.remove_edge(u, v, key)
    assert list(adj.edges()) == stored_edges(G)
    assert list(SparseAdjacency.from_graph(G).edges()) == stored_edges(G)
    assert compute_salience(G, adj) == compute_salience(G)


def test_store_keeps_its_adjacency_in_step(open_store: StoreFactory) -> None:
    store = open_store()
    a, b, c = (store.record(decision(f"decision {i}"), "t").id for i in range(3))
    store.link(a, b, "depends_on", "t", weight=2.0)
    store.link(a, c, "relates_to", "t")
    store.link(b, c, "blocks", "t")
    store.supersede(c, a, "t")
    store.unlink(a, c, "t", "relates_to")
    assert list(store.adjacency.edges()) == stored_edges(store.graph)
    assert compute_salience(store.graph, store.adjacency) == compute_salience(store.graph)
    expected = compute_salience(store.graph)
    store.close()
    reopened = DecisionStore.open(store.data_dir, StoreOptions(fsync="never"))
    try:  # loaded from the snapshot, so built by from_graph
        assert list(reopened.adjacency.edges()) == stored_edges(reopened.graph)
        assert compute_salience(reopened.graph, reopened.adjacency) == expected
    finally:
        reopened.close()


# -- compute_salience --------------------------------------------------------------------------
def test_empty_and_single_node_graphs() -> None:
    assert compute_salience(build_graph([])) == {}
    assert compute_salience(build_graph([A])) == {A: 0.0}


@pytest.mark.parametrize(
    ("edge_type", "leans_on"),
    [
        ("depends_on", "target"),
        ("refines", "target"),
        ("caused_by", "target"),
        ("causal", "target"),
        ("blocks", "source"),
        ("contradicts", "both"),
        ("relates_to", "both"),
        ("semantic", "both"),
        ("entity", "both"),
        ("temporal", "both"),
    ],
)
def test_importance_flows_towards_what_is_relied_on(edge_type: str, leans_on: str) -> None:
    scores = compute_salience(build_graph([A, B], [(A, B, edge_type)]), type_weights=ALL_TYPES)
    if leans_on == "target":
        assert scores[B] > scores[A] == 0.0
    elif leans_on == "source":
        assert scores[A] > scores[B] == 0.0
    else:
        assert scores[A] == scores[B] > 0.0


@pytest.mark.parametrize(
    "edge_type",
    ["contradicts", "relates_to", "causal", "semantic", "entity", "temporal", "supersedes"],
)
def test_only_reliance_counts_by_default(edge_type: str) -> None:
    # Two decisions in any relation but reliance: neither leans on the other, both score 0.
    scores = compute_salience(build_graph([A, B], [(A, B, edge_type)]))
    assert scores == {A: 0.0, B: 0.0}


def test_a_weak_link_passes_only_its_weight() -> None:
    # x's only link weighs 0.3: it passes 30 % of its damped rank, not all of it (the rest
    # goes to the pool every node shares), so r(b) = 1 + 0.85 * 0.3.
    scores = compute_salience(
        build_graph([A, B], [(A, B, "refines")]), type_weights={"refines": 0.3}
    )
    assert scores[B] == pytest.approx(1 - 1 / (1 + 0.85 * 0.3), abs=1e-9)
    # A heavy edge passes everything, but no more: a node's share is capped at 1.
    heavy = build_graph([A, B], [(A, B, "depends_on", {"weight": 3.0})])
    assert compute_salience(heavy)[B] == pytest.approx(1 - 1 / 1.85, abs=1e-9)


@pytest.mark.parametrize(
    ("dependents", "expected"), [(0, 0.0), (1, 0.459), (2, 0.63), (3, 0.718), (10, 0.895)]
)
def test_the_scale_counts_dependents(dependents: int, expected: float) -> None:
    others = [f"{i:08x}" for i in range(1, dependents + 5)]
    G = build_graph([A, *others], [(o, A, "depends_on") for o in others[:dependents]])
    assert compute_salience(G)[A] == pytest.approx(expected, abs=1e-3)


def test_type_weights_split_a_nodes_outflow() -> None:
    # a leans on b and c with different types: the ratio of what they receive is the ratio of
    # the type weights (a is their only source).
    G = build_graph([A, B, C], [(A, B, "depends_on"), (A, C, "entity"), (C, A, "entity")])
    _, default = weighted_projection(G)
    assert default.toarray().tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    _, matrix = weighted_projection(G, type_weights={"entity": 0.1})
    assert matrix.toarray().tolist() == [[0.0, 1.0, 0.1], [0.0, 0.0, 0.0], [0.1, 0.0, 0.0]]
    _, custom = weighted_projection(G, type_weights={EdgeType.ENTITY: 0.5, "depends_on": 2})
    assert custom.toarray().tolist() == [[0.0, 2.0, 0.5], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]]


def test_weight_zero_drops_a_type() -> None:
    edges = [(A, B, "depends_on"), (B, C, "refines"), (C, D, "relates_to"), (D, A, "semantic")]
    G = build_graph([A, B, C, D], edges)
    without = build_graph([A, B, C, D], [e for e in edges if e[2] not in ("refines", "semantic")])
    assert compute_salience(G, type_weights={"refines": 0, "relates_to": 0.3}) == (
        compute_salience(without, type_weights={"relates_to": 0.3})
    )


def test_edge_weight_and_parallel_types_add_up() -> None:
    parallel = build_graph(
        [A, B, C], [(A, B, "depends_on"), (A, B, "refines"), (A, C, "depends_on")]
    )
    weighted = build_graph([A, B, C], [(A, B, "depends_on", {"weight": 1.6}), (A, C, "depends_on")])
    assert compute_salience(parallel) == pytest.approx(compute_salience(weighted), abs=1e-12)
    assert compute_salience(parallel)[B] > compute_salience(parallel)[C]


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        pytest.param(  # x's dependency moves from b to its successor a; b passes to a
            [(X, B, "depends_on"), (A, B, "supersedes")],
            {X: {A: 1.0}, B: {A: 1.0}},
            id="redirect",
        ),
        pytest.param(  # chains are followed to the end
            [(X, A, "depends_on"), (B, A, "supersedes"), (C, B, "supersedes")],
            {X: {C: 1.0}, A: {C: 1.0}, B: {C: 1.0}},
            id="chain",
        ),
        pytest.param(  # several active successors share evenly
            [(X, A, "depends_on"), (B, A, "supersedes"), (C, A, "supersedes")],
            {X: {B: 0.5, C: 0.5}, A: {B: 0.5, C: 0.5}},
            id="split",
        ),
        pytest.param(  # two routes to one successor do not count twice
            [
                (B, A, "supersedes"),
                (C, A, "supersedes"),
                (D, B, "supersedes"),
                (D, C, "supersedes"),
            ],
            {A: {D: 1.0}, B: {D: 1.0}, C: {D: 1.0}},
            id="diamond",
        ),
        pytest.param(  # the successor's own link to what it replaced is not a self-loop
            [(A, B, "depends_on"), (A, B, "supersedes"), (B, C, "blocks")],
            {B: {A: 1.0}, C: {A: 0.8}},
            id="no-self-loop",
        ),
    ],
)
def test_superseded_nodes_pass_their_weight_on(
    edges: list[tuple[str, str, str]], expected: dict[str, dict[str, float]]
) -> None:
    G = build_graph([A, B, C, D, X], edges)
    ids, matrix = weighted_projection(G, type_weights={"supersedes": 1.0})
    coo = matrix.tocoo()
    got: dict[str, dict[str, float]] = {}
    for i, j, w in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True):
        got.setdefault(ids[i], {})[ids[j]] = w
    assert got == expected


def test_a_superseded_nodes_dependents_move_to_its_heir() -> None:
    G = build_graph(
        [A, B, C, D], [(C, B, "depends_on"), (D, B, "depends_on"), (A, B, "supersedes")]
    )
    _, matrix = weighted_projection(G)
    assert matrix.toarray()[1].tolist() == [0.0] * 4  # by default, replacing adds no link
    scores = compute_salience(G)
    assert scores[A] == pytest.approx(1 - 1 / 2.7, abs=1e-9)  # two dependents, inherited
    assert scores[B] == scores[C] == scores[D] == 0.0


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=graph_specs())
def test_matches_the_closed_form_on_the_projection(
    spec: tuple[list[str], list[EdgeSpec]],
) -> None:
    G = build_graph(*spec)
    for weights in (None, ALL_TYPES):
        scores = compute_salience(G, tol=1e-14, max_iter=10_000, type_weights=weights)
        assert list(scores) == sorted(G)
        assert all(0.0 <= s < 1.0 for s in scores.values())
        assert scores == pytest.approx(reference_salience(G, weights), abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    spec=graph_specs(),
    weights=st.dictionaries(st.sampled_from(EDGE_TYPES), st.just(0.0) | st.floats(0.01, 3)),
)
def test_custom_type_weights_match_the_closed_form(
    spec: tuple[list[str], list[EdgeSpec]], weights: dict[str, float]
) -> None:
    G = build_graph(*spec)
    scores = compute_salience(G, tol=1e-14, max_iter=10_000, type_weights=weights)
    assert scores == pytest.approx(reference_salience(G, weights), abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(spec=graph_specs(), rng=st.randoms(use_true_random=False))
def test_scores_do_not_depend_on_history(
    spec: tuple[list[str], list[EdgeSpec]], rng: random.Random
) -> None:
    ids, edges = spec
    G = build_graph(ids, edges)
    shuffled = build_graph(rng.sample(ids, len(ids)), rng.sample(edges, len(edges)))
    adj = mirror(ids, stored_edges(G), rng)
    first = compute_salience(G)
    for other in (compute_salience(shuffled), compute_salience(G, adj)):
        assert list(other.items()) == list(first.items())  # bit-identical, same order


def test_adjacency_out_of_step_is_refused() -> None:
    G = build_graph([A, B], [(A, B, "depends_on")])
    adj = SparseAdjacency.from_graph(G)
    adj.add_node(C)
    with pytest.raises(ValidationError) as info:
        compute_salience(G, adj)
    assert info.value.field == "adjacency"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"tol": 0.0}, "tol"),
        ({"tol": math.nan}, "tol"),
        ({"max_iter": 0}, "max_iter"),
        ({"max_iter": True}, "max_iter"),
        ({"type_weights": {"bogus": 1.0}}, "type_weights.bogus"),
        ({"type_weights": {"depends_on": -1.0}}, "type_weights.depends_on"),
        ({"type_weights": {"depends_on": math.inf}}, "type_weights.depends_on"),
        ({"type_weights": {"depends_on": "1"}}, "type_weights.depends_on"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, Any], field: str) -> None:
    G = build_graph([A, B], [(A, B, "depends_on")])
    with pytest.raises(ValidationError) as info:
        compute_salience(G, **kwargs)
    assert info.value.field == field


def test_iteration_cap_raises() -> None:
    G = build_graph([A, B, C], [(A, B, "depends_on"), (B, C, "depends_on")])
    with pytest.raises(nx.PowerIterationFailedConvergence):
        compute_salience(G, max_iter=2)


# -- get_high_salience and percentiles ---------------------------------------------------------
def test_high_salience_orders_by_score_then_id() -> None:
    G = build_graph([D, C, B, A, X], [(X, D, "depends_on"), (A, B, "relates_to")])
    scores = compute_salience(G, type_weights={"relates_to": 0.3})
    top = get_high_salience(G, scores, 5)
    # d has a dependent; a and b hold each other up a little; c and x: nothing leans on them
    assert [node for node, _ in top] == [D, A, B, C, X]
    assert top[1][1] == top[2][1]  # ties: the id decides
    assert top[3][1] == top[4][1] == 0.0
    assert get_high_salience(G, scores, 2) == top[:2]
    assert len(get_high_salience(G, scores, 1000)) == 5


def test_high_salience_can_skip_inactive_nodes() -> None:
    G = build_graph(
        [A, B, {"id": C, "lifecycle": "rejected"}, D, X],
        [(X, A, "depends_on"), (D, C, "depends_on"), (B, A, "supersedes")],
    )
    scores = compute_salience(G)
    everything = [node for node, _ in get_high_salience(G, scores, 5)]
    active = [node for node, _ in get_high_salience(G, scores, 5, active_only=True)]
    assert set(everything) == {A, B, C, D, X}
    assert active == [n for n in everything if n not in (A, C)]


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 2.5, "3"])
def test_high_salience_limit_is_validated(limit: Any) -> None:
    G = build_graph([A])
    with pytest.raises(ValidationError) as info:
        get_high_salience(G, {A: 1.0}, limit)
    assert info.value.field == "limit"


def test_high_salience_refuses_scores_from_another_graph() -> None:
    with pytest.raises(NodeNotFoundError):
        get_high_salience(build_graph([A]), {A: 0.5, B: 1.0}, 2)


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ({}, {}),
        ({A: 0.3}, {A: 0.0}),
        ({A: 0.5, B: 0.5, C: 0.5}, {A: 0.0, B: 0.0, C: 0.0}),
        ({C: 1.0, A: 0.2, B: 0.6, D: 0.4}, {A: 0.0, B: 0.5, C: 0.75, D: 0.25}),
        ({A: 1.0, B: 0.1, C: 0.1, D: 0.7}, {A: 0.75, B: 0.0, C: 0.0, D: 0.5}),
    ],
)
def test_percentiles_count_strictly_lower_scores(
    scores: dict[str, float], expected: dict[str, float]
) -> None:
    got = salience_percentiles(scores)
    assert got == expected
    assert list(got) == sorted(got)
