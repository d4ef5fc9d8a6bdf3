"""The maintained contradictions and blocked chains (graph.riskindex) answer exactly as the
from-scratch functions do, after every event of random histories through a real store."""

from __future__ import annotations

import random
from collections.abc import Mapping
from contextlib import suppress

import pytest

from graph.algorithms.contradictions import find_contradictions, get_blocked_chain
from graph.drafts import EdgeDraft, MemoryDraft
from graph.enums import EdgeType, Outcome
from graph.errors import DecigraphError, ValidationError
from graph.riskindex import RiskIndex
from graph.store import DecisionStore
from tests.conftest import StoreFactory, decision

TYPES = [
    EdgeType.BLOCKS,
    EdgeType.DEPENDS_ON,
    EdgeType.SUPERSEDES,
    EdgeType.CONTRADICTS,
    EdgeType.RELATES_TO,
    EdgeType.SEMANTIC,
]
LIFECYCLES = ["proposed", "accepted", "rejected"]


def check(store: DecisionStore, salience: Mapping[str, float]) -> None:
    G = store.graph
    for inactive in (False, True):
        expected = find_contradictions(G, salience, include_inactive=inactive)
        assert store.risk.contradictions(G, salience, include_inactive=inactive) == expected
        assert (
            store.risk.contradictions(G, salience, include_inactive=inactive, limit=2)
            == (expected[:2])
        )
    assert store.risk.blocked(G) == get_blocked_chain(G)


def step(store: DecisionStore, rng: random.Random) -> None:
    """One random event (or a refused one, which must change nothing)."""
    ids = sorted(store.graph)
    roll = rng.random()
    if len(ids) < 3 or roll < 0.15:
        edges = []
        if ids and rng.random() < 0.5:
            other = rng.choice(ids)
            kind = rng.choice(TYPES)
            edges = [EdgeDraft("?", other, kind)] if rng.random() < 0.5 else []
        lifecycle = "proposed" if rng.random() < 0.3 else "accepted"
        node = store.record(decision(f"d{len(ids)}", lifecycle=lifecycle), "t")
        for e in edges:
            store.link(node.id, e.target, e.type, "t")
    elif roll < 0.2:
        store.remember(MemoryDraft(text=f"m{len(ids)}"), "t")
    elif roll < 0.55:
        a, b = rng.sample(ids, 2)
        store.link(a, b, rng.choice(TYPES), "t")
    elif roll < 0.65:
        u, v, key = rng.choice(list(store.graph.edges(keys=True)) or [(ids[0], ids[1], None)])
        store.unlink(u, v, "t", key if rng.random() < 0.7 else None)
    elif roll < 0.75:
        store.set_lifecycle(rng.choice(ids), rng.choice(LIFECYCLES), "t")
    elif roll < 0.87:
        store.review(rng.choice(ids), rng.choice(list(Outcome)), "t")
    elif roll < 0.93:
        a, b = rng.sample(ids, 2)
        store.supersede(a, b, "t")
    else:
        store.forget(rng.choice(ids), "t")


def salience_for(store: DecisionStore, rng: random.Random) -> dict[str, float]:
    """Few distinct scores (ties on both sort keys) or the store's own."""
    if rng.random() < 0.5:
        return store.salience()
    return {n: rng.choice([0.0, 0.5, 1.0]) for n in store.graph if rng.random() < 0.8}


@pytest.mark.parametrize("seed", range(12))
def test_maintained_answers_equal_the_from_scratch_ones(
    open_store: StoreFactory, seed: int
) -> None:
    rng = random.Random(seed)
    store = open_store()
    every = rng.choice([1, 1, 3])  # sometimes let changes pile up between queries
    for index in range(160):
        with suppress(DecigraphError):  # refused (a cycle, a self-loop...): nothing changed
            step(store, rng)
        if index % every == 0:
            check(store, salience_for(store, rng))
    check(store, salience_for(store, rng))


def test_reopened_store_rebuilds_from_its_snapshot(open_store: StoreFactory) -> None:
    rng = random.Random(99)
    store = open_store()
    for _ in range(120):
        with suppress(DecigraphError):
            step(store, rng)
    check(store, store.salience())
    store.close()
    again = open_store()  # restores the snapshot written on close: a new graph object
    check(again, again.salience())
    for _ in range(60):
        with suppress(DecigraphError):
            step(again, rng)
        check(again, {})


def test_memo_follows_changes_and_salience(store: DecisionStore) -> None:
    a = store.record(decision("a"), "t").id
    b = store.record(decision("b"), "t").id
    store.link(a, b, EdgeType.CONTRADICTS, "t")
    scores = {a: 0.2, b: 0.1}
    first = store.risk.contradictions(store.graph, scores)
    assert [(c.a, c.b) for c in first] == [tuple(sorted((a, b)))]
    assert store.risk.contradictions(store.graph, {a: 0.9}) != first  # a new mapping: rescored
    store.set_lifecycle(a, "rejected", "t")
    assert store.risk.contradictions(store.graph, scores) == []
    assert len(store.risk.contradictions(store.graph, scores, include_inactive=True)) == 1


def test_limit_is_checked_as_before(store: DecisionStore) -> None:
    with pytest.raises(ValidationError):
        store.risk.contradictions(store.graph, {}, limit=0)


def test_an_index_built_for_another_graph_rebuilds(store: DecisionStore) -> None:
    a = store.record(decision("a"), "t").id
    b = store.record(decision("b", lifecycle="proposed"), "t").id
    store.link(a, b, EdgeType.DEPENDS_ON, "t")
    index = RiskIndex()
    assert [c.node_id for c in index.blocked(store.graph)] == [a]
    assert index.blocked(store.graph.copy()) == get_blocked_chain(store.graph)


def test_short_pages_of_many_pairs(store: DecisionStore) -> None:
    """A short page comes from a heap, a longer one from a sort: both as the scan orders."""
    rng = random.Random(5)
    ids = [store.record(decision(f"n{i}"), "t").id for i in range(30)]
    for _ in range(60):
        a, b = rng.sample(ids, 2)
        store.link(a, b, EdgeType.CONTRADICTS, "t")
    store.set_lifecycle(ids[0], "rejected", "t")
    scores = {n: rng.choice([0.0, 0.25, 0.5]) for n in ids}
    G = store.graph
    for limit in (1, 3, 2, 5, 40, 4, None, 1000):
        got = store.risk.contradictions(G, scores, limit=limit)
        assert got == find_contradictions(G, scores, limit=limit)
    store.supersede(ids[1], ids[2], "t")
    assert store.risk.contradictions(G, scores, limit=3) == find_contradictions(G, scores, limit=3)
