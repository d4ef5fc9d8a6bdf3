"""Every vector-search path (exact scan, sketch pool, ChromaDB over-fetch, pushed-down ``where``)
gives one answer."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graph.drafts import DecisionDraft
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions
from retrieval import planner
from retrieval.filters import RecallFilters
from retrieval.index import DualIndex
from retrieval.writes import record
from tests.conftest import TickingClock
from tests.support.fakes import HashEmbedder, MemoryVectorIndex

WORDS = ["cache", "queue", "ledger", "billing", "auth", "token", "shard", "replica", "schema"]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> DualIndex:
    path: Path = tmp_path_factory.mktemp("planner") / "data"
    store = DecisionStore.open(
        path, StoreOptions(fsync="never"), clock=TickingClock(), ids=IdSource(4)
    )
    vectors = MemoryVectorIndex()
    index = DualIndex.open(store, HashEmbedder(), vectors)
    rng = random.Random(8)
    for i in range(120):
        draft = DecisionDraft.model_validate(
            {
                "text": " ".join(rng.sample(WORDS, 4)) + f" {i}",
                "category": rng.choice(["architecture", "process", "tooling"]),
                "project": rng.choice(["a", "b", "c", "d"]),
                "confidence": round(rng.random(), 2),
            }
        )
        record(index, draft, "t")
    ids = sorted(store.graph.nodes)
    for old, new in zip(ids[:10], ids[10:20], strict=True):
        store.supersede(new, old, "t")
    return index


def brute_force(index: DualIndex, vector: Any, k: int, filters: RecallFilters) -> list[str]:
    G = index.store.graph
    passing = [n for n in G.nodes if filters.matches(G.nodes[n], index.is_superseded(n))]
    scored = sorted(passing, key=lambda n: (-float(index.matrix.get(n) @ vector), n))  # type: ignore[operator]
    return scored[:k]


FILTERS = [
    {},
    {"project": "a"},
    {"category": ["process"], "project": "b"},
    {"minConfidence": 0.9},
    {"status": ["superseded"], "includeSuperseded": True},
    {"includeSuperseded": True},
]


@pytest.mark.parametrize("raw", FILTERS)
@pytest.mark.parametrize("exact_limit", [0, 10_000])
@pytest.mark.parametrize("pool", [0, planner.DEFAULT_VECTOR_POOL])
def test_all_paths_agree_with_brute_force(
    index: DualIndex,
    raw: dict[str, Any],
    exact_limit: int,
    pool: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(planner, "EXACT_SCAN_LIMIT", exact_limit)
    monkeypatch.setattr(index, "vector_pool", pool)  # 0: ChromaDB answers the broad path
    monkeypatch.setattr(planner, "MAX_FETCH", 40)  # small, so the pushed-down path runs too
    filters = RecallFilters.model_validate(raw)
    for seed in range(5):
        vector = HashEmbedder().embed([" ".join(random.Random(seed).sample(WORDS, 3))])[0]
        got = [node_id for node_id, _ in index.vector_search(vector, 7, filters)]
        assert got == brute_force(index, vector, 7, filters)


def test_scores_are_exact_cosines(index: DualIndex) -> None:
    vector = HashEmbedder().embed(["cache ledger"])[0]
    for node_id, score in index.vector_search(vector, 5):
        assert score == pytest.approx(float(np.dot(index.matrix.get(node_id), vector)))  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", FILTERS)
@pytest.mark.parametrize("exact_limit", [0, 10_000])
def test_keyword_paths_agree_with_brute_force(
    index: DualIndex, raw: dict[str, Any], exact_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planner, "EXACT_SCAN_LIMIT", exact_limit)
    filters = RecallFilters.model_validate(raw)
    G = index.store.graph

    def accept(node_id: str) -> bool:
        return filters.matches(G.nodes[node_id], index.is_superseded(node_id))

    for query in ("cache ledger", "shard replica schema", "billing"):
        scores = index.keyword.query(query)
        got = planner.search_keywords(index, scores, 6, filters, accept)
        passing = [(n, scores.of(n)) for n in G.nodes if accept(n) and scores.of(n) > 0]
        expected = sorted(passing, key=lambda hit: (-hit[1], hit[0]))[:6]
        assert got == expected


def _index_of(path: Path, order: list[int]) -> DualIndex:
    """120 decisions with fixed ids, recorded in ``order``."""
    store = DecisionStore.open(path, StoreOptions(fsync="never"), clock=TickingClock())
    index = DualIndex.open(store, HashEmbedder(), MemoryVectorIndex())
    rng = random.Random(8)
    texts = [" ".join(rng.sample(WORDS, 4)) + f" {i}" for i in range(120)]
    for i in order:
        record(index, DecisionDraft(id=f"{i:08x}", text=texts[i]), "t")
    return index


def test_a_sketch_pool_answer_depends_only_on_the_vectors_and_never_asks_chromadb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planner, "POOL_PER_HIT", 1)  # a pool smaller than the store: sketches
    forward = _index_of(tmp_path / "a", list(range(120)))
    backward = _index_of(tmp_path / "b", list(reversed(range(120))))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a broad search with a sketch pool asked ChromaDB")

    for index in (forward, backward):
        index.vector_pool = 40
        monkeypatch.setattr(index.vectors, "query", refuse)
    for seed in range(8):
        vector = HashEmbedder().embed([" ".join(random.Random(seed).sample(WORDS, 3))])[0]
        got = forward.vector_search(vector, 7)
        assert got == backward.vector_search(vector, 7)  # whatever the rows' order
        assert len(got) == 7
        exact = brute_force(forward, vector, 7, RecallFilters())
        assert len(set(exact) & {node_id for node_id, _ in got}) >= 5  # approximate, and close


def test_the_recall_pool_setting_reaches_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.fakes import fake_app

    with fake_app(tmp_path / "default", 1) as app:
        assert app.index.vector_pool == planner.DEFAULT_VECTOR_POOL == 2048
    monkeypatch.setenv("DECIGRAPH_RECALL_POOL", "0")
    with fake_app(tmp_path / "chroma", 1) as app:
        assert app.index.vector_pool == 0
