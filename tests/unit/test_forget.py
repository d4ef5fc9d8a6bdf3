"""Forgetting a node: the graph, the salience adjacency and replay all agree afterwards."""

from __future__ import annotations

import random

import pytest

from graph.adjacency import SparseAdjacency
from graph.algorithms.salience import compute_salience
from graph.errors import NodeNotFoundError, VersionConflictError
from graph.store import DecisionStore, StoreOptions
from tests.conftest import StoreFactory, decision


def stored(store: DecisionStore) -> list[tuple[str, str, str, float]]:
    return sorted(
        (u, v, k, float(d.get("weight", 1.0)))
        for u, v, k, d in store.graph.edges(keys=True, data=True)
    )


def test_forget_removes_the_node_and_its_edges(open_store: StoreFactory) -> None:
    store = open_store()
    a, b, c = (
        store.record(decision(f"decision {i}", external_id=f"x{i}"), "t").id for i in range(3)
    )
    store.link(a, b, "depends_on", "t")
    store.link(b, c, "relates_to", "t")
    store.supersede(c, a, "t")
    store.forget(c, "t", reason="duplicate")
    assert c not in store.graph
    assert sorted(store.graph.edges(keys=True)) == [(a, b, "depends_on")]
    assert store.find_external("x2") is None
    assert store.get(a).lifecycle.value == "accepted"  # no longer superseded: its successor is gone
    assert list(store.adjacency.edges()) == stored(store)
    again = store.record(decision("reuses the external id", external_id="x2"), "t")
    assert store.find_external("x2") == again.id


def test_forget_checks_the_node_and_version(open_store: StoreFactory) -> None:
    store = open_store()
    a = store.record(decision(), "t").id
    size = store.log_offset
    with pytest.raises(NodeNotFoundError):
        store.forget("0000abcd", "t")
    with pytest.raises(VersionConflictError):
        store.forget(a, "t", expected_version=5)
    assert store.log_offset == size
    assert a in store.graph


@pytest.mark.parametrize("seed", range(6))
def test_random_forgets_keep_adjacency_salience_and_replay_in_step(
    open_store: StoreFactory, seed: int
) -> None:
    rng = random.Random(seed)
    store = open_store(snapshot_every=0)
    ids = [store.record(decision(f"decision {i}"), "t").id for i in range(14)]
    for _ in range(40):
        u, v = rng.sample(ids, 2)
        kind = rng.choice(["relates_to", "contradicts", "refines", "caused_by"])
        store.link(u, v, kind, "t", weight=rng.choice([0.5, 1.0, 2.0]))
    for victim in rng.sample(ids, 5):
        store.forget(victim, "t")
        live = [i for i in ids if i in store.graph]
        u, v = rng.sample(live, 2)
        store.link(u, v, "relates_to", "t")
    assert list(store.adjacency.edges()) == stored(store)
    assert list(SparseAdjacency.from_graph(store.graph).edges()) == stored(store)
    assert compute_salience(store.graph, store.adjacency) == compute_salience(store.graph)
    expected_hash, expected_salience = store.graph_hash(), store.salience()
    data_dir = store.data_dir
    store.close()
    replayed = DecisionStore.open(data_dir, StoreOptions(fsync="never", use_snapshot=False))
    try:
        assert replayed.graph_hash() == expected_hash
        assert replayed.salience() == expected_salience
        assert replayed.verify().ok
    finally:
        replayed.close()
