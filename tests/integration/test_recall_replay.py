"""Replaying the log gives the same recall answers: the sketch pool against a real ChromaDB.

A store of 1,500 memory items is written once; its log alone is then replayed into a fresh data
directory, whose indexes (a new ChromaDB collection included) are rebuilt from it. Recall on the
two must answer every question identically, hit for hit and score for score, with the broad
vector search on the matrix's sign-sketch pool (smaller than the store here, so the pool path
runs). The replay fills the matrix in id order, the first store in log order, so this also
checks that no answer depends on where a vector sits. ChromaDB's HNSW index gives no such
guarantee (``bench/bench_recall_pool.py`` measures how often two builds of the same real
vectors disagree; these bag-of-words test vectors are too easy to show it), so it is not
asserted for ``vector_pool=0``.
"""

from __future__ import annotations

import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graph.drafts import MemoryDraft
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions
from retrieval import planner
from retrieval.index import DualIndex
from retrieval.recall import recall
from retrieval.vector import ChromaVectorIndex
from retrieval.writes import remember_many
from tests.support.fakes import HashEmbedder

T0 = datetime(2025, 2, 3, 8, 0, tzinfo=UTC)
SUBJECTS = [
    "the billing service",
    "the search cluster",
    "the mobile app",
    "the data warehouse",
    "the auth gateway",
    "the release train",
    "the on-call rota",
    "the CI pipeline",
]
EVENTS = [
    "timed out under load",
    "was migrated to PostgreSQL 16",
    "lost a node overnight",
    "got a new owner",
    "doubled its p95 latency",
    "was rolled back",
    "passed the audit",
    "moved to the Frankfurt region",
    "needs a capacity review",
    "shipped dark mode",
]
PEOPLE = ["Ana", "Ben", "Chen", "Dara", "Eli"]
QUESTIONS = [
    "why did the billing service time out?",
    "what happened to the search cluster last week?",
    "who owns the auth gateway now?",
    "when was the data warehouse migrated?",
    "what did Chen say about the CI pipeline?",
    "which service moved to Frankfurt?",
    "latency problems in the mobile app",
    "rollbacks of the release train",
]  # fmt: skip


def _drafts(count: int) -> list[MemoryDraft]:
    rng = random.Random(21)
    return [
        MemoryDraft(
            text=f"{rng.choice(PEOPLE)}: {rng.choice(SUBJECTS)} {rng.choice(EVENTS)} "
            f"(ticket OPS-{rng.randrange(1000, 9999)})",
            source="chat",
            occurred_at=T0 + timedelta(minutes=7 * n),
            external_id=f"m{n}",
        )
        for n in range(count)
    ]


def _open(data: Path) -> DualIndex:
    store = DecisionStore.open(data, StoreOptions(fsync="never"), ids=IdSource(3))
    index = DualIndex.open(store, HashEmbedder(), ChromaVectorIndex.persistent(data / "chroma"))
    index.vector_pool = 64  # below the fetch's floor of 16 rows per item: the pool path runs
    return index


def _answers(index: DualIndex) -> list[list[tuple[str, float]]]:
    now = T0 + timedelta(days=30)
    return [
        [(hit.id, hit.score) for hit in recall(index, question, 10, now=now).hits]
        for question in QUESTIONS
    ]


def test_a_replayed_log_gives_identical_recall_answers(tmp_path: Path) -> None:
    first = _open(tmp_path / "first")
    remember_many(first, _drafts(1500), "agent")
    assert len(first.matrix) == 1500 > planner.POOL_PER_HIT * 80  # the pool path, not exact
    before = _answers(first)
    first.close()
    first.store.close()

    replayed = tmp_path / "replayed"
    replayed.mkdir()
    shutil.copy2(tmp_path / "first" / "events.jsonl", replayed / "events.jsonl")
    second = _open(replayed)
    assert second.report.from_snapshot is False  # indexes and ChromaDB rebuilt from the log
    assert second.matrix.ids() == first.matrix.ids()
    assert list(second.matrix._ids) != list(first.matrix._ids)  # the rows in another order
    after = _answers(second)
    second.close()
    second.store.close()

    assert all(len(hits) == 10 for hits in before)
    assert after == before


@pytest.mark.parametrize("pool", [64, 0])
def test_reopening_from_snapshots_gives_identical_answers(tmp_path: Path, pool: int) -> None:
    index = _open(tmp_path / "data")
    index.vector_pool = pool
    remember_many(index, _drafts(600), "agent")
    before = _answers(index)
    index.close()
    index.store.close()
    again = _open(tmp_path / "data")
    again.vector_pool = pool
    assert again.report.from_snapshot
    assert _answers(again) == before  # the same process's indexes, reloaded: equal either way
    again.close()
    again.store.close()
