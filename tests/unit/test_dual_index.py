"""Index/graph consistency: every event reaches every index, catch-up and rebuild are exact.

Unit tests of the bookkeeping around the real parts, so they use the deterministic fakes in
``tests/support/fakes.py``; ``tests/integration/test_retrieval_integration.py`` repeats the
essentials with the real model and ChromaDB.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graph.drafts import DecisionDraft, EdgeDraft, MemoryDraft
from graph.errors import DecigraphError
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions
from retrieval.index import DualIndex
from retrieval.nodekeys import touched_nodes
from retrieval.recall import recall
from retrieval.writes import record, remember, remember_many
from tests.conftest import TickingClock
from tests.support.fakes import HashEmbedder, MemoryVectorIndex

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
TOPICS = ["redis cache", "kafka queue", "postgres ledger", "billing retries", "auth tokens"]


def open_pair(
    path: Path, vectors: MemoryVectorIndex, embedder: HashEmbedder | None = None
) -> tuple[DecisionStore, DualIndex]:
    store = DecisionStore.open(
        path, StoreOptions(fsync="never"), clock=TickingClock(), ids=IdSource(5)
    )
    return store, DualIndex.open(store, embedder or HashEmbedder(), vectors)


def random_workload(store: DecisionStore, index: DualIndex, rng: random.Random, steps: int) -> None:
    for step in range(steps):
        ids = sorted(store.graph.nodes)
        roll = rng.random()
        try:
            if roll < 0.3 or len(ids) < 3:
                topic = rng.choice(TOPICS)
                draft = MemoryDraft(
                    text=f"{topic} note {step}",
                    source=rng.choice(["ana", "ben"]),
                    occurred_at=T0 + timedelta(hours=rng.randrange(72)),
                )
                remember(index, draft, "t")
            elif roll < 0.45:
                record(index, DecisionDraft(text=f"Use {rng.choice(TOPICS)} {step}"), "t")
            elif roll < 0.6:
                store.update(
                    rng.choice(ids), {"text": f"{rng.choice(TOPICS)} rewritten {step}"}, "t"
                )
            elif roll < 0.65:
                store.update(rng.choice(ids), {"category": "architecture"}, "t")
            elif roll < 0.72:
                store.review(rng.choice(ids), "success", "t")
            elif roll < 0.82:
                u, v = rng.sample(ids, 2)
                store.link(u, v, rng.choice(["relates_to", "depends_on", "caused_by"]), "t")
            elif roll < 0.88:
                u, v = rng.sample(ids, 2)
                store.unlink(u, v, "t")
            else:
                store.forget(rng.choice(ids), "t")
        except DecigraphError:
            continue  # a rejected command (cycle, missing edge) changes nothing


@pytest.mark.parametrize("seed", range(5))
def test_indexes_follow_random_mutations(tmp_path: Path, seed: int) -> None:
    vectors = MemoryVectorIndex()
    store, index = open_pair(tmp_path / "data", vectors)
    rng = random.Random(seed)
    for _ in range(4):
        random_workload(store, index, rng, 25)
        assert index.check_consistency() == []
    assert store.graph.number_of_nodes() > 5


def test_reopening_in_step_embeds_nothing_and_answers_the_same(tmp_path: Path) -> None:
    vectors = MemoryVectorIndex()
    store, index = open_pair(tmp_path / "data", vectors)
    random_workload(store, index, random.Random(1), 60)
    before = [(h.id, h.score) for h in recall(index, "redis cache note", 8, now=T0).hits]
    index.close()
    store.close()
    embedder = HashEmbedder()
    store, index = open_pair(tmp_path / "data", vectors, embedder)
    assert index.report.embedded == 0
    assert index.report.reused == store.graph.number_of_nodes()
    assert embedder.texts == 0
    assert [(h.id, h.score) for h in recall(index, "redis cache note", 8, now=T0).hits] == before
    assert index.check_consistency() == []


def test_catch_up_re_embeds_only_what_changed_while_away(tmp_path: Path) -> None:
    vectors = MemoryVectorIndex()
    store, index = open_pair(tmp_path / "data", vectors)
    results = remember_many(
        index, [MemoryDraft(text=f"{t} fact", occurred_at=T0) for t in TOPICS], "t"
    )
    index.close()  # the store keeps writing with nobody indexing: the index falls behind
    first, second = results[0].node.id, results[1].node.id
    store.update(first, {"text": "completely new words"}, "t")
    store.forget(second, "t")
    store.close()
    embedder = HashEmbedder()
    store, index = open_pair(tmp_path / "data", vectors, embedder)
    assert (index.report.embedded, index.report.removed) == (1, 1)
    assert embedder.texts == 1
    assert index.check_consistency() == []


def test_rebuild_is_idempotent(tmp_path: Path) -> None:
    vectors = MemoryVectorIndex()
    store, index = open_pair(tmp_path / "data", vectors)
    random_workload(store, index, random.Random(2), 60)
    query = "kafka queue note"
    before = [(h.id, h.score, h.via()) for h in recall(index, query, 10, now=T0).hits]
    for _ in range(2):
        report = index.rebuild()
        assert report.full_rebuild
        assert report.embedded == store.graph.number_of_nodes()
        assert index.check_consistency() == []
        assert [(h.id, h.score, h.via()) for h in recall(index, query, 10, now=T0).hits] == before


def test_consistency_check_reports_orphans_and_stale_vectors(tmp_path: Path) -> None:
    vectors = MemoryVectorIndex()
    _, index = open_pair(tmp_path / "data", vectors)
    node = remember(index, MemoryDraft(text="redis cache fact", occurred_at=T0), "t").node
    index.flush()
    vectors.rows["0badc0de"] = vectors.rows[node.id]
    index.keyword.remove(node.id)
    meta = dict(vectors.rows[node.id][1], fp="stale")
    vectors.rows[node.id] = (vectors.rows[node.id][0], meta)
    problems = index.check_consistency()
    assert "chroma holds 0badc0de, which the graph does not" in problems
    assert f"keyword lacks {node.id}" in problems
    assert f"chroma holds a stale vector for {node.id}" in problems


def test_the_write_path_embeds_once_and_batches_bulk_writes(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    _, index = open_pair(tmp_path / "data", MemoryVectorIndex(), embedder)
    drafts = [MemoryDraft(text=f"item {i} about redis", occurred_at=T0) for i in range(70)]
    remember_many(index, drafts, "t")
    assert embedder.texts == 70
    assert embedder.calls == 2  # batches of 64
    record(index, DecisionDraft(text="Use Redis", context="for sessions"), "t")
    assert embedder.texts == 71


def test_remember_is_idempotent_by_external_id_and_content(tmp_path: Path) -> None:
    store, index = open_pair(tmp_path / "data", MemoryVectorIndex())
    draft = MemoryDraft(text="Ana moved to Lisbon", source="ana", occurred_at=T0)
    first = remember(index, draft, "t")
    again = remember(index, draft, "t")
    assert (first.created, again.created) == (True, False)
    assert again.node.id == first.node.id
    keyed = remember(index, MemoryDraft(text="x", external_id="D1:1", occurred_at=T0), "t")
    same_key = remember(index, MemoryDraft(text="different text", external_id="D1:1"), "t")
    assert same_key.node.id == keyed.node.id
    assert not same_key.created
    assert store.graph.number_of_nodes() == 2


def test_touched_nodes_of_each_event_kind(tmp_path: Path) -> None:
    store, index = open_pair(tmp_path / "data", MemoryVectorIndex())
    seen: list[list[str]] = []
    store.listeners.append(lambda event: seen.append(touched_nodes(event)))
    a = record(index, DecisionDraft(text="Use Redis"), "t").node.id
    b = record(index, DecisionDraft(text="Use Kafka"), "t").node.id
    store.link(a, b, "relates_to", "t")
    store.update(a, {"text": "Use Redis 7"}, "t")
    store.forget(b, "t")
    assert seen == [[a], [b], [], [a], [b]]


def test_a_rejected_write_changes_nothing_anywhere(tmp_path: Path) -> None:
    store, index = open_pair(tmp_path / "data", MemoryVectorIndex())
    first = record(index, DecisionDraft(text="Use Redis", external_id="ext-1"), "t").node
    size, graph = store.log_offset, store.graph_hash()
    with pytest.raises(DecigraphError):
        record(index, DecisionDraft(text="Use Kafka", external_id="ext-1"), "t")
    bad = EdgeDraft(first.id, "0000ffff", "depends_on")
    with pytest.raises(DecigraphError):
        record(index, DecisionDraft(text="Use Kafka"), "t", edges=[bad])
    assert (store.log_offset, store.graph_hash()) == (size, graph)
    assert index.check_consistency() == []
    assert not index._prepared  # the offered vectors were withdrawn


def test_distinct_external_ids_are_distinct_items_even_with_the_same_words(tmp_path: Path) -> None:
    _, index = open_pair(tmp_path / "data", MemoryVectorIndex())
    first = remember(index, MemoryDraft(text="Thanks!", external_id="D1:4", occurred_at=T0), "t")
    second = remember(index, MemoryDraft(text="Thanks!", external_id="D1:9", occurred_at=T0), "t")
    assert second.created
    assert first.node.id != second.node.id
    assert index.check_consistency() == []


def test_a_clean_restart_restores_the_memory_snapshot(tmp_path: Path) -> None:
    vectors = MemoryVectorIndex()
    store, index = open_pair(tmp_path / "data", vectors)
    random_workload(store, index, random.Random(4), 50)
    before = [(h.id, h.score, h.via()) for h in recall(index, "auth tokens note", 8, now=T0).hits]
    index.close()
    store.close()
    store, index = open_pair(tmp_path / "data", vectors)
    assert index.report.from_snapshot
    assert index.check_consistency() == []
    assert [
        (h.id, h.score, h.via()) for h in recall(index, "auth tokens note", 8, now=T0).hits
    ] == before
    remember(index, MemoryDraft(text="auth tokens rotated", occurred_at=T0), "t")  # still follows
    assert index.check_consistency() == []


@pytest.mark.parametrize("spoil", ["stale", "damaged", "foreign-chroma", "unhealthy"])
def test_a_snapshot_that_does_not_match_is_ignored(tmp_path: Path, spoil: str) -> None:
    vectors = MemoryVectorIndex()
    store, index = open_pair(tmp_path / "data", vectors)
    remember_many(index, [MemoryDraft(text=f"{t} fact", occurred_at=T0) for t in TOPICS], "t")
    if spoil == "unhealthy":
        index.healthy = False
    index.close()
    if spoil == "stale":
        store.record(DecisionDraft(text="written while nobody indexed"), "t")
    store.close()
    if spoil == "damaged":
        index.snapshot_path.write_bytes(index.snapshot_path.read_bytes()[:100])
    if spoil == "foreign-chroma":
        vectors = MemoryVectorIndex()
    store, index = open_pair(tmp_path / "data", vectors)
    assert not index.report.from_snapshot
    assert index.check_consistency() == []
