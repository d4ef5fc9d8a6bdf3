"""Recall's fast paths answer exactly like the plain computation on a seeded store.

- the compiled filter (:func:`retrieval.filters.accepting`, :func:`~retrieval.filters.matcher`)
  gives ``RecallFilters.matches``'s verdict for every node and every filter shape;
- searches stop asking the filter once they have ``k`` accepted hits (``first_accepted``);
- recall and queryDecisions return the same ranked hits (ids, scores, signals, paths) as on the
  reference path (``bench/recall_reference.py``: the plain predicate, eager filtering, the
  traversal as it was), for many queries, intents and filters.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from bench.recall_reference import reference_paths
from graph.drafts import DecisionDraft, MemoryDraft
from graph.enums import EdgeType
from graph.ids import IdSource
from graph.lifecycle import is_superseded
from graph.store import DecisionStore, StoreOptions
from retrieval import keyword, query, recall
from retrieval.filters import RecallFilters, accepting, matcher, passes
from retrieval.index import DualIndex
from retrieval.intents import PRESETS, Intent
from retrieval.recall import DEFAULT_TUNING
from retrieval.writes import record, remember
from tests.conftest import TickingClock
from tests.support.fakes import HashEmbedder, MemoryVectorIndex

WORDS = ["cache", "queue", "ledger", "billing", "auth", "token", "shard", "replica", "schema"]
WORDS += ["postgres", "redis", "kafka", "deploy", "review", "latency", "budget", "migration"]
PROJECTS = ["a", "b", "c", "d"]
TAGS = ["db", "infra", "team", "cost"]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> DualIndex:
    path: Path = tmp_path_factory.mktemp("fastpaths") / "data"
    store = DecisionStore.open(
        path, StoreOptions(fsync="never"), clock=TickingClock(), ids=IdSource(6)
    )
    index = DualIndex.open(store, HashEmbedder(), MemoryVectorIndex())
    rng = random.Random(16)
    for i in range(160):
        fields: dict[str, Any] = {
            "text": " ".join(rng.sample(WORDS, 5)) + f" {i}",
            "category": rng.choice(["architecture", "process", "tooling"]),
            "stakes": rng.choice(["low", "medium", "high"]),
            "project": rng.choice(PROJECTS),
            "confidence": round(rng.random(), 2),
            "tags": rng.sample(TAGS, rng.randint(0, 2)),
        }
        if i % 3:
            fields["context"] = " ".join(rng.sample(WORDS, 6))
        record(index, DecisionDraft.model_validate(fields), "t")
    for i in range(30):
        text = f"standup: {' '.join(rng.sample(WORDS, 4))} {i}"
        remember(index, MemoryDraft.model_validate({"text": text, "source": "chat"}), "t")
    ids = sorted(n for n, a in store.graph.nodes(data=True) if a.get("kind") == "decision")
    for old, new in zip(ids[:12], ids[12:24], strict=True):
        store.supersede(new, old, "t")
    for node_id in ids[30:40]:
        store.review(node_id, rng.choice(["success", "failure", "partial"]), "t")
    for node_id in ids[40:46]:
        store.set_lifecycle(node_id, rng.choice(["proposed", "rejected"]), "t")
    for a, b in zip(ids[50:90], ids[60:100], strict=True):
        kind = rng.choice([EdgeType.DEPENDS_ON, EdgeType.RELATES_TO, EdgeType.BLOCKS])
        store.link(a, b, kind, "t")
    return index


def random_filters(rng: random.Random) -> RecallFilters:
    spec: dict[str, Any] = {}
    if rng.random() < 0.3:
        spec["category"] = rng.sample(["architecture", "process", "tooling"], rng.randint(1, 2))
    if rng.random() < 0.3:
        spec["project"] = rng.choice(PROJECTS)
    if rng.random() < 0.2:
        spec["stakes"] = rng.choice(["low", "medium", "high"])
    if rng.random() < 0.2:
        spec["kind"] = rng.choice(["decision", "observation", ["decision", "observation"]])
    if rng.random() < 0.2:
        spec["min_confidence"] = round(rng.random() / 2, 2)
    if rng.random() < 0.2:
        spec["max_confidence"] = round(0.5 + rng.random() / 2, 2)
    if rng.random() < 0.2:
        spec["status"] = rng.sample(["pending", "reviewed", "superseded", "accepted"], 2)
    if rng.random() < 0.2:
        spec["lifecycle"] = rng.sample(["proposed", "accepted", "rejected", "superseded"], 2)
    if rng.random() < 0.2:
        spec["tags"] = rng.sample(TAGS, 1)
    if rng.random() < 0.2:
        spec["has_outcome"] = rng.random() < 0.5
    if rng.random() < 0.3:
        spec["include_superseded"] = True
    if rng.random() < 0.15:
        spec["date_after"] = "2020-01-01T00:00:00Z"
    return RecallFilters.model_validate(spec)


def eager_first_accepted(ranked: Any, accept: Any, k: int) -> list[tuple[str, float]]:
    return [hit for hit in ranked if accept(hit[0])][: max(k, 0)]


def test_compiled_filters_give_every_node_the_same_verdict(index: DualIndex) -> None:
    G = index.store.graph
    rng = random.Random(3)
    shapes = [RecallFilters(), RecallFilters(include_superseded=True)]
    shapes += [random_filters(rng) for _ in range(300)]
    nodes = [*G.nodes, "missing0"]
    for filters in shapes:
        fast = accepting(G, filters)
        for node_id in nodes:
            expected = node_id in G and filters.matches(G.nodes[node_id], is_superseded(G, node_id))
            assert fast(node_id) == expected, (filters, node_id)
            assert passes(G, filters, node_id) == expected
            if node_id in G:
                for superseded in (False, True):
                    attrs = G.nodes[node_id]
                    assert matcher(filters)(attrs, superseded) == filters.matches(attrs, superseded)


def test_first_accepted_is_the_prefix_of_the_accepted_hits() -> None:
    rng = random.Random(5)
    for _ in range(200):
        ranked = [(f"n{i}", rng.random()) for i in range(rng.randint(0, 40))]
        keep = {n for n, _ in ranked if rng.random() < 0.6}
        asked: list[str] = []

        def accept(node_id: str, keep: set[str] = keep, asked: list[str] = asked) -> bool:
            asked.append(node_id)
            return node_id in keep

        k = rng.randint(0, 20)
        got = keyword.first_accepted(ranked, accept, k)
        assert got == eager_first_accepted(ranked, lambda n, keep=keep: n in keep, k)
        if len(got) == k and k:
            assert asked[-1] == got[-1][0]  # nothing asked after the k-th accepted hit


def _answers(index: DualIndex, rng: random.Random) -> list[Any]:
    out: list[Any] = []
    for n in range(120):
        text = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        filters = random_filters(rng) if n % 2 else None
        intent = rng.choice([None, "why", "when", "entity", "general"])
        result = recall.recall(index, text, 10, intent=intent, filters=filters)
        out.append(
            [(h.id, h.score, h.relevance, h.signals, h.via(), h.anchor) for h in result.hits]
        )
        hits = query.query_decisions(index, text, "hybrid", 10, filters=filters or None)
        out.append([(h.id, h.score) for h in hits.hits])
    return out


def test_recall_ranks_exactly_as_on_the_reference_path(index: DualIndex) -> None:
    fast = _answers(index, random.Random(21))
    with reference_paths():
        reference = _answers(index, random.Random(21))
    assert fast == reference
    assert any(answer for answer in fast)


def test_scores_read_at_once_equal_scores_read_one_by_one(index: DualIndex) -> None:
    ids = sorted(index.store.graph.nodes)
    for text in ("ledger billing postgres", "standup: kafka queue", "nothing shared here"):
        vector = index.embed([text])[0]
        engine = recall._Recall(
            index, text, vector, RecallFilters(), PRESETS[Intent.GENERAL], DEFAULT_TUNING
        )
        engine.vector_max = 0.7
        cosines = index.matrix.similarities(vector, ids[::2])  # the others: no cosine known
        many = engine._score_many([*ids, "missing0"], cosines)
        one = [engine._score(i, cosines.get(i, 0.0)) for i in [*ids, "missing0"]]
        assert [(c.relevance, c.signals) for c in many] == [(c.relevance, c.signals) for c in one]
