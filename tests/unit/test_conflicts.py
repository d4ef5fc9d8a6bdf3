"""The contradiction detector over a store: candidates from the statement index, only active
decisions, bounded, and the same answer after replay, a snapshot or a rebuild."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

from graph.drafts import DecisionDraft, MemoryDraft
from graph.errors import DecigraphError
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions
from retrieval.conflicts import MAX_CANDIDATES, PER_KEY, find_conflicts
from retrieval.index import DualIndex
from retrieval.nodekeys import time_key
from retrieval.statements import StatementIndex
from retrieval.writes import record, remember
from tests.conftest import TickingClock
from tests.support.fakes import HashEmbedder, MemoryVectorIndex

STATEMENTS = [
    "Use PostgreSQL as the primary datastore for the payments ledger",
    "Use MySQL as the primary datastore for the payments ledger",
    "Use Kafka for payment events",
    "Use RabbitMQ for payment events",
    "Do not use Kafka",
    "Deploy on Fridays",
    "No deploys on Fridays",
    "Keep logs for 30 days",
    "Retain logs for 90 days",
    "Use Datadog for metrics",
    "Use Datadog for logs",
    "Use SQLite for the primary datastore in development",
]


def open_index(path: Path, vectors: MemoryVectorIndex) -> DualIndex:
    store = DecisionStore.open(
        path, StoreOptions(fsync="never"), clock=TickingClock(), ids=IdSource(11)
    )
    return DualIndex.open(store, HashEmbedder(), vectors)


def keys(statements: StatementIndex, store: DecisionStore) -> dict[str, tuple[str, ...]]:
    return {node_id: statements.keys_of(node_id) for node_id in sorted(store.graph.nodes)}


def workload(index: DualIndex, rng: random.Random, steps: int) -> None:
    store = index.store
    for step in range(steps):
        ids = sorted(store.graph.nodes)
        roll = rng.random()
        try:
            if roll < 0.45 or len(ids) < 4:
                record(index, DecisionDraft(text=rng.choice(STATEMENTS)), "t")
            elif roll < 0.55:
                remember(index, MemoryDraft(text=rng.choice(STATEMENTS)), "t")
            elif roll < 0.7:
                store.update(rng.choice(ids), {"text": rng.choice(STATEMENTS)}, "t")
            elif roll < 0.8:
                store.supersede(*rng.sample(ids, 2), "t")
            elif roll < 0.88:
                store.set_lifecycle(rng.choice(ids), rng.choice(["rejected", "accepted"]), "t")
            else:
                store.forget(rng.choice(ids), "t")
        except DecigraphError:
            continue
        if step % 10 == 0:
            assert keys(index.statements, store) == keys(StatementIndex.of(store, time_key), store)


def detections(index: DualIndex) -> list[list[tuple[str, str]]]:
    return [[(f.target, f.reason) for f in find_conflicts(index, s)] for s in STATEMENTS]


def test_the_statement_index_follows_the_log_and_survives_restarts(tmp_path: Path) -> None:
    vectors = MemoryVectorIndex()
    index = open_index(tmp_path / "data", vectors)
    workload(index, random.Random(3), 120)
    store = index.store
    expected = keys(StatementIndex.of(store, time_key), store)
    assert keys(index.statements, store) == expected
    before = detections(index)
    assert any(before)
    index.close()  # snapshot
    store.close()
    index = open_index(tmp_path / "data", vectors)
    assert index.report.from_snapshot
    assert keys(index.statements, index.store) == expected
    assert detections(index) == before
    # A snapshot written before the statement index existed: rebuilt from the graph.
    index.close()
    index.store.close()
    path = index.snapshot_path
    with path.open("rb") as handle:
        header, state = pickle.load(handle), pickle.load(handle)
    del state["statements"]
    with path.open("wb") as handle:
        pickle.dump(header, handle)
        pickle.dump(state, handle)
    index = open_index(tmp_path / "data", vectors)
    assert index.report.from_snapshot
    assert keys(index.statements, index.store) == expected
    assert detections(index) == before
    index.rebuild()
    assert detections(index) == before
    index.close()
    index.store.close()
    replayed = open_index(tmp_path / "data", MemoryVectorIndex())  # no snapshot: catch-up
    assert not replayed.report.from_snapshot
    assert detections(replayed) == before


def test_only_accepted_active_decisions_are_flagged(tmp_path: Path) -> None:
    index = open_index(tmp_path / "data", MemoryVectorIndex())
    store = index.store
    kafka = record(index, DecisionDraft(text="Use Kafka for payment events"), "t").node.id
    rejected = record(index, DecisionDraft(text="Use NATS for payment events"), "t").node.id
    store.set_lifecycle(rejected, "rejected", "t")
    old = record(index, DecisionDraft(text="Use SQS for payment events"), "t").node.id
    newer = record(index, DecisionDraft(text="Use SNS for notifications"), "t", edges=[]).node.id
    store.supersede(newer, old, "t")
    remember(index, MemoryDraft(text="Use Pulsar for payment events"), "t")  # not a decision
    found = find_conflicts(index, "Use RabbitMQ for payment events")
    assert [f.target for f in found] == [kafka]
    assert find_conflicts(index, "Use RabbitMQ for payment events", exclude=kafka) == []


def test_candidates_are_bounded_and_deterministic(tmp_path: Path) -> None:
    index = open_index(tmp_path / "data", MemoryVectorIndex())
    tools = [f"Tool{i}" for i in range(3 * MAX_CANDIDATES)]
    for tool in tools:
        record(index, DecisionDraft(text=f"Use {tool} for payment events"), "t")
    found = find_conflicts(index, "Use RabbitMQ for payment events")
    assert 0 < len(found) <= MAX_CANDIDATES
    assert len(found) >= PER_KEY
    assert found == find_conflicts(index, "Use RabbitMQ for payment events")
    assert [f.score for f in found] == sorted((f.score for f in found), reverse=True)
    latest = {
        n
        for n in index.store.graph.nodes
        if index.store.graph.nodes[n]["text"]
        in {f"Use {tool} for payment events" for tool in tools[-PER_KEY:]}
    }
    assert latest <= {f.target for f in found}  # the latest decisions on the subject first


def test_every_kind_of_contradiction_is_found_through_the_index(tmp_path: Path) -> None:
    """Each rule has its own index key: rival choices, rejections, a policy's values, and a
    rule for every member of a class against one member; in both orders of recording."""
    pairs = [
        ("Use Kafka for payment events", "Payment events go through RabbitMQ"),
        ("Do not use Kafka", "Use Kafka for payment events"),
        ("The Pro plan costs $29 per seat", "Price the Pro plan at $35 per seat"),
        ("Require MFA for admin accounts", "Make MFA optional for admin accounts"),
        (
            "Every event in the payments domain goes through Kafka",
            "The payments refund service publishes its events to RabbitMQ",
        ),
        ("Use Jaeger as the tracing backend", "Replace Jaeger with Tempo"),
    ]
    for number, (first, second) in enumerate(pairs):
        for order, (stored, new) in enumerate([(first, second), (second, first)]):
            index = open_index(tmp_path / f"data-{number}-{order}", MemoryVectorIndex())
            target = record(index, DecisionDraft(text=stored), "t").node.id
            for filler in range(3 * PER_KEY):  # unrelated decisions recorded after it
                record(index, DecisionDraft(text=f"Use Tool{filler} for step {filler}"), "t")
            assert [f.target for f in find_conflicts(index, new)] == [target], (stored, new)
            index.close()
            index.store.close()
