"""Property tests for live contradictions and blocked chains, against slow obvious references.

The example-based tests are in ``tests/unit/test_contradictions.py``.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.algorithms.contradictions import find_contradictions, get_blocked_chain
from graph.builders import build_graph
from tests.unit.test_contradictions import STATES, node

# -- determinism and properties ----------------------------------------------------------------
Spec = tuple[list[dict[str, Any]], list[tuple[str, str, str]]]
RISK_TYPES = ["blocks", "depends_on", "supersedes", "contradicts", "relates_to"]


@st.composite
def risk_graphs(draw: st.DrawFn, max_nodes: int = 8) -> Spec:
    """Random states and edges, cycles allowed (the algorithms must cope with any graph)."""
    n = draw(st.integers(1, max_nodes))
    keys = draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n, unique=True))
    ids = [f"{k:08x}" for k in keys]
    states = draw(st.lists(st.sampled_from([*STATES, "memory"]), min_size=n, max_size=n))
    nodes = [
        node(i, "pending", kind="fact") if s == "memory" else node(i, s)
        for i, s in zip(ids, states, strict=True)
    ]
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from(RISK_TYPES))
    raw = draw(st.lists(pairs, max_size=3 * n))
    return nodes, [(ids[i], ids[j], t) for i, j, t in raw if i != j]


def reference_waits_on(G: Any) -> nx.DiGraph[str]:
    """``x -> h`` when x waits on the heir h of one of its blockers and h blocks it: a ``blocks``
    source until it is done, a ``depends_on`` target only if it cannot be relied on (slow,
    obvious)."""
    newer: nx.DiGraph[str] = nx.DiGraph()
    newer.add_nodes_from(G)
    newer.add_edges_from((v, u) for u, v, k in G.edges(keys=True) if k == "supersedes")

    def heirs(y: str) -> set[str]:
        ends = {m for m in nx.descendants(newer, y) | {y} if newer.out_degree(m) == 0}
        return ends or {y}

    def unresolved(h: str, kind: str) -> bool:
        attrs = G.nodes[h]
        good = attrs.get("status") == "reviewed" and attrs.get("outcome") in ("success", "partial")
        if attrs.get("lifecycle") == "rejected" or kind == "blocks":
            return attrs.get("lifecycle") == "rejected" or not good
        unreliable = attrs.get("outcome") in ("failure", "abandoned")
        return not good and (unreliable or attrs.get("lifecycle") == "proposed")

    W: nx.DiGraph[str] = nx.DiGraph()
    W.add_nodes_from(G)
    for u, v, k in G.edges(keys=True):
        waiting, blocker = {"blocks": (v, u), "depends_on": (u, v)}.get(k, (None, None))
        if waiting is not None and blocker is not None:
            W.add_edges_from(
                (waiting, h) for h in heirs(blocker) if unresolved(h, k) and h != waiting
            )
    return W


def joined(G: Any, waiting: str, blocker: str) -> bool:
    return G.has_edge(blocker, waiting, "blocks") or G.has_edge(waiting, blocker, "depends_on")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=risk_graphs())
def test_blocked_chain_matches_a_reference(spec: Spec) -> None:
    nodes, edges = spec
    G = build_graph(nodes, edges)
    W = reference_waits_on(G)
    everyone: list[tuple[int, str]] = []
    for x in G:
        found = get_blocked_chain(G, x)
        expected = nx.single_source_shortest_path_length(W, x)
        del expected[x]
        assert {b.node_id: b.depth for b in found.chain} == expected
        assert [(b.depth, b.node_id) for b in found.chain] == sorted(
            (d, n) for n, d in expected.items()
        )
        assert found.blocked is bool(found.blockers)
        assert found.blockers == [b for b in found.chain if b.depth == 1]
        for b in found.chain:
            assert b.path[0] == x
            assert b.path[-1] == b.node_id
            original = b.stands_for or b.node_id
            # The last occurrence: on a hand-built cycle the path may pass the same id twice.
            cut = len(b.path) - 1 - b.path[::-1].index(original)
            assert cut > 0
            parent = b.path[cut - 1]
            assert joined(G, parent, original)
            via = "blocks" if G.has_edge(original, parent, "blocks") else "depends_on"
            assert b.via_type.value == via
            for older, newer in itertools.pairwise(b.path[cut:]):
                assert G.has_edge(newer, older, "supersedes")
            for waiting, blocker in itertools.pairwise(b.path[: cut + 1]):
                assert joined(G, waiting, blocker) or G.has_edge(blocker, waiting, "supersedes")
        attrs = G.nodes[x]
        superseded = any(k == "supersedes" and v == x for _, v, k in G.edges(keys=True))
        active = attrs.get("lifecycle") != "rejected" and not superseded
        if found.blocked and active and attrs["kind"] == "decision":
            everyone.append((-len(found.chain), x))
    assert [(c.node_id, len(c.chain)) for c in get_blocked_chain(G)] == [
        (x, -n) for n, x in sorted(everyone)
    ]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=risk_graphs(), data=st.data())
def test_contradictions_match_a_reference(spec: Spec, data: st.DataObject) -> None:
    nodes, edges = spec
    G = build_graph(nodes, edges)
    ids = [n["id"] for n in nodes]
    scores = data.draw(
        st.dictionaries(st.sampled_from(ids), st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    )
    superseded = {v for _, v, k in G.edges(keys=True) if k == "supersedes"}
    for include in (False, True):
        found = find_contradictions(G, scores, include_inactive=include)
        expected = {
            (min(u, v), max(u, v))
            for u, v, k in G.edges(keys=True)
            if k == "contradicts"
            and (
                include
                or all(
                    n not in superseded and G.nodes[n].get("lifecycle") != "rejected"
                    for n in (u, v)
                )
            )
        }
        assert sorted((c.a, c.b) for c in found) == sorted(expected)
        assert len(found) == len(expected)
        for c in found:
            assert (c.a, c.b) == (c.edge.source, c.edge.target)
            assert c.a < c.b
            assert (c.a_salience, c.b_salience) == (scores.get(c.a, 0.0), scores.get(c.b, 0.0))
            assert c.salience_at_stake == max(c.a_salience, c.b_salience)
        order = [(-c.salience_at_stake, -min(c.a_salience, c.b_salience), c.a, c.b) for c in found]
        assert order == sorted(order)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=risk_graphs(max_nodes=7), rng=st.randoms(use_true_random=False))
def test_insertion_order_never_changes_an_answer(spec: Spec, rng: random.Random) -> None:
    nodes, edges = spec
    base = build_graph(nodes, edges)
    shuffled = build_graph(rng.sample(nodes, len(nodes)), rng.sample(edges, len(edges)))
    scores = {n["id"]: rng.choice([0.0, 0.5, 1.0]) for n in nodes}
    assert find_contradictions(base, scores) == find_contradictions(shuffled, scores)
    assert find_contradictions(base, scores, include_inactive=True) == find_contradictions(
        shuffled, scores, include_inactive=True
    )
    assert get_blocked_chain(base) == get_blocked_chain(shuffled)
    for x in sorted(base):
        assert get_blocked_chain(base, x) == get_blocked_chain(shuffled, x)
