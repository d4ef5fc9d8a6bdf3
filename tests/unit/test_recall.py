"""Recall and queryDecisions: intents, signals, explanations, time, filters in every mode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pydantic
import pytest

from graph.drafts import DecisionDraft, MemoryDraft
from graph.enums import RelationFamily
from graph.errors import NodeNotFoundError, ValidationError
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions
from retrieval.filters import RecallFilters
from retrieval.index import DualIndex
from retrieval.intents import PRESETS, FamilyWeights, Intent, WeightPreset, detect_intent
from retrieval.query import RetrievalMode, query_decisions
from retrieval.recall import recall
from retrieval.writes import record, remember
from tests.conftest import TickingClock
from tests.support.fakes import HashEmbedder, MemoryVectorIndex

NOW = datetime(2025, 7, 1, tzinfo=UTC)


@pytest.fixture
def index(tmp_path: Path) -> DualIndex:
    store = DecisionStore.open(
        tmp_path / "data", StoreOptions(fsync="never"), clock=TickingClock(NOW), ids=IdSource(9)
    )
    return DualIndex.open(store, HashEmbedder(), MemoryVectorIndex())


@pytest.fixture
def decisions(index: DualIndex) -> dict[str, str]:
    specs: list[dict[str, Any]] = [
        {
            "text": "Use PostgreSQL for the billing ledger",
            "category": "architecture",
            "stakes": "high",
            "confidence": 0.9,
            "project": "ledger",
            "tags": ["db"],
            "created_at": "2025-05-03T10:00:00Z",
        },
        {
            "text": "Use Redis for session caching",
            "category": "architecture",
            "stakes": "low",
            "confidence": 0.6,
            "project": "web",
            "tags": ["cache"],
            "created_at": "2025-05-20T10:00:00Z",
        },
        {
            "text": "Adopt trunk based development",
            "category": "process",
            "stakes": "medium",
            "confidence": 0.4,
            "project": "web",
            "tags": ["git"],
            "created_at": "2025-06-10T10:00:00Z",
        },
        {
            "text": "Shard the billing ledger tables by tenant",
            "category": "architecture",
            "stakes": "critical",
            "confidence": 0.8,
            "project": "ledger",
            "tags": ["db", "scale"],
            "created_at": "2025-06-20T10:00:00Z",
        },
    ]
    names = ["ledger", "redis", "trunk", "shard"]
    ids = {}
    for name, spec in zip(names, specs, strict=True):
        ids[name] = record(index, DecisionDraft.model_validate(spec), "t").node.id
    index.store.review(ids["ledger"], "success", "t")
    return ids


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("Why did we pick PostgreSQL?", Intent.WHY),
        ("what was the reason for sharding", Intent.WHY),
        ("When did we adopt trunk based development?", Intent.WHEN),
        ("what happened last week", Intent.WHEN),
        ("Who owns the billing ledger?", Intent.ENTITY),
        ("tell me about Redis", Intent.ENTITY),
        ("billing ledger database", Intent.GENERAL),
    ],
)
def test_intent_detection(query: str, intent: Intent) -> None:
    assert detect_intent(query) is intent


def test_result_names_intent_and_preset_and_explains_each_hit(
    index: DualIndex, decisions: dict[str, str]
) -> None:
    result = recall(index, "why the billing ledger uses PostgreSQL", 4, now=NOW)
    assert result.intent is Intent.WHY
    assert result.intent_source == "detected"
    assert result.preset == PRESETS[Intent.WHY]
    top = result.hits[0]
    assert top.id == decisions["ledger"]
    via = top.via()
    assert via["anchor"] is True
    assert via["signals"]["keyword"] == 1.0
    assert via["signals"]["vectorRank"] >= 1
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    overridden = recall(index, "why the billing ledger uses PostgreSQL", 4, intent="when", now=NOW)
    assert (overridden.intent, overridden.intent_source) == (Intent.WHEN, "given")


def test_traversal_reaches_linked_items_and_says_along_which_edge(index: DualIndex) -> None:
    cause = remember(index, MemoryDraft(text="zeta outage in region one", occurred_at=NOW), "t")
    effect = remember(
        index,
        MemoryDraft(text="quarterly plan revised", occurred_at=NOW + timedelta(days=40)),
        "t",
    )
    index.store.link(effect.node.id, cause.node.id, "caused_by", "t")
    result = recall(index, "why zeta outage", 5, intent="why", now=NOW)
    hits = {h.id: h for h in result.hits}
    reached = hits[effect.node.id]
    via = reached.via()
    path = via["path"]
    # The hop is the edge as stored ("effect caused_by cause"), walked from the cause.
    assert path[-1] == {
        "from": effect.node.id,
        "edgeType": "caused_by",
        "to": cause.node.id,
        "walked": "backward",
        "family": "causal",
        "weight": 1.0,
    }
    assert via["start"] == cause.node.id
    assert reached.score < hits[cause.node.id].score  # borrowed evidence never outranks its source


def test_intent_changes_which_relations_are_trusted(index: DualIndex) -> None:
    anchor = remember(index, MemoryDraft(text="omega migration", occurred_at=NOW), "t").node.id
    causal = remember(
        index, MemoryDraft(text="unrelated alpha", occurred_at=NOW - timedelta(days=90)), "t"
    ).node.id
    temporal = remember(
        index, MemoryDraft(text="unrelated beta", occurred_at=NOW - timedelta(days=200)), "t"
    ).node.id
    index.store.link(anchor, causal, "caused_by", "t")
    index.store.link(anchor, temporal, "temporal", "t")

    def score(intent: str, node_id: str) -> float:
        hits = {
            h.id: h.score for h in recall(index, "omega migration", 10, intent=intent, now=NOW).hits
        }
        return hits[node_id]

    assert score("why", causal) > score("why", temporal)
    assert score("when", temporal) > score("when", causal)


def test_time_expression_narrows_results(index: DualIndex, decisions: dict[str, str]) -> None:
    result = recall(index, "architecture decisions in June 2025", 4, now=NOW)
    assert result.time_constraint is not None
    inside = [h for h in result.hits if h.signals.get("timeMatch") == 1.0]
    assert {h.id for h in inside} == {decisions["trunk"], decisions["shard"]}
    assert result.hits[0].id in {decisions["trunk"], decisions["shard"]}


def test_before_an_event_is_resolved_from_the_graph(
    index: DualIndex, decisions: dict[str, str]
) -> None:
    result = recall(index, "what did we decide before the sharding of the ledger", 4, now=NOW)
    constraint = result.time_constraint
    assert constraint is not None
    assert constraint.event is not None
    matched = {h.id for h in result.hits if h.signals.get("timeMatch") == 1.0}
    assert decisions["shard"] not in matched
    assert decisions["ledger"] in matched


FILTER_CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"category": "process"}, {"trunk"}),
    ({"minConfidence": 0.7}, {"ledger", "shard"}),
    ({"maxConfidence": 0.5}, {"trunk"}),
    ({"minConfidence": 0.5, "maxConfidence": 0.85}, {"redis", "shard"}),
    ({"dateAfter": "2025-06-01T00:00:00Z"}, {"trunk", "shard"}),
    ({"dateBefore": "2025-05-31T00:00:00Z"}, {"ledger", "redis"}),
    ({"stakes": ["high", "critical"]}, {"ledger", "shard"}),
    ({"status": ["reviewed"]}, {"ledger"}),
    ({"status": "pending"}, {"redis", "trunk", "shard"}),
    ({"project": "web"}, {"redis", "trunk"}),
    ({"tags": ["scale"]}, {"shard"}),
    ({"hasOutcome": True}, {"ledger"}),
    ({"hasOutcome": False}, {"redis", "trunk", "shard"}),
]


@pytest.mark.parametrize(("raw", "expected"), FILTER_CASES)
@pytest.mark.parametrize("mode", ["recall", "semantic", "keyword", "hybrid", "graph"])
def test_filters_apply_in_every_mode(
    index: DualIndex, decisions: dict[str, str], raw: dict[str, Any], expected: set[str], mode: str
) -> None:
    filters = RecallFilters.model_validate(raw)
    query = "ledger redis trunk shard billing session development tables"
    want = {decisions[name] for name in expected}
    if mode == "recall":
        got = {h.id for h in recall(index, query, 10, filters=filters, now=NOW).hits}
    else:
        extra = {"decision_id": decisions["ledger"]} if mode == "graph" else {}
        result = query_decisions(index, query, mode, 10, filters=filters, **extra)
        got = {h.id for h in result.hits}
    assert got <= want
    if mode in ("recall", "hybrid", "semantic"):
        assert got == want


def test_superseded_decisions_are_hidden_unless_asked_for(
    index: DualIndex, decisions: dict[str, str]
) -> None:
    index.store.supersede(decisions["shard"], decisions["ledger"], "t")
    plain = {h.id for h in recall(index, "billing ledger", 10, now=NOW).hits}
    assert decisions["ledger"] not in plain
    history = RecallFilters(include_superseded=True)
    assert decisions["ledger"] in {
        h.id for h in recall(index, "billing ledger", 10, filters=history, now=NOW).hits
    }
    only_old = RecallFilters(status=["superseded"], include_superseded=True)
    found = {h.id for h in query_decisions(index, "billing ledger", filters=only_old).hits}
    assert found == {decisions["ledger"]}


def test_hybrid_normalisation_keeps_the_weakest_hit_above_zero(
    index: DualIndex, decisions: dict[str, str]
) -> None:
    result = query_decisions(index, "billing ledger sharding", "hybrid", 10)
    assert len(result.hits) >= 2
    assert all(h.score > 0 for h in result.hits)
    semantic = query_decisions(index, "billing ledger", "semantic", 10)
    assert semantic.hits[0].distance == pytest.approx(1 - (semantic.hits[0].semantic or 0))


def test_graph_mode_ranks_items_found_both_ways_first(
    index: DualIndex, decisions: dict[str, str]
) -> None:
    index.store.link(decisions["trunk"], decisions["redis"], "depends_on", "t")
    result = query_decisions(
        index, "trunk based development", "graph", 10, decision_id=decisions["redis"], hops=1
    )
    first = result.hits[0]
    assert first.id == decisions["trunk"]
    assert first.found_by_both
    assert first.hops == 1
    assert {"graph", "semantic"} <= set(first.found_by)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"mode": "fuzzy"}, "mode"),
        ({"hybrid_weight": 1.5}, "hybrid_weight"),
        ({"limit": 0}, "limit"),
        ({"mode": "graph"}, "decision_id"),
        ({"mode": "graph", "decision_id": "0000ffff", "hops": 9}, "hops"),
    ],
)
def test_query_decisions_rejects_bad_parameters(
    index: DualIndex, kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        query_decisions(index, "x", **kwargs)
    assert info.value.field == field


def test_graph_mode_with_an_unknown_decision(index: DualIndex) -> None:
    with pytest.raises(NodeNotFoundError):
        query_decisions(index, "x", RetrievalMode.GRAPH, decision_id="0000ffff")


@pytest.mark.parametrize(
    "raw",
    [
        {"minConfidence": 2},
        {"status": ["done"]},
        {"stakes": ["huge"]},
        {"dateAfter": "yesterday"},
        {"minConfidence": 0.9, "maxConfidence": 0.1},
        {"colour": "red"},
    ],
)
def test_bad_filters_are_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        RecallFilters.model_validate(raw)


def test_answers_are_deterministic(index: DualIndex, decisions: dict[str, str]) -> None:
    runs = [
        [
            (h.id, h.score, h.via())
            for h in recall(index, "billing ledger postgres", 10, now=NOW).hits
        ]
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2]


def test_presets_are_validated_typed_configuration() -> None:
    with pytest.raises(pydantic.ValidationError, match="sum to 1"):
        FamilyWeights(causal=0.5, temporal=0.5, entity=0.5, semantic=0.0)
    custom = PRESETS[Intent.GENERAL].model_copy(update={"name": "mine", "max_depth": 0})
    assert custom.name == "mine"
    with pytest.raises(pydantic.ValidationError):
        WeightPreset.model_validate({**PRESETS[Intent.WHY].model_dump(), "beam_width": 0})
    assert {p.intent for p in PRESETS.values()} == set(Intent)
    assert PRESETS[Intent.WHY].families.relative()[RelationFamily.CAUSAL] == 1.0


def test_a_custom_preset_without_depth_returns_only_direct_matches(
    index: DualIndex, decisions: dict[str, str]
) -> None:
    flat = {i: p.model_copy(update={"max_depth": 0}) for i, p in PRESETS.items()}
    result = recall(index, "billing ledger", 10, presets=flat, now=NOW)
    assert all(not h.path for h in result.hits)


def test_mutual_support_scores_but_never_explains_in_circles(index: DualIndex) -> None:
    """Two matching items that refine each other both gain from the other's evidence (the
    score counts every offer), yet neither is explained through itself: an anchor offered
    support only through a walk that starts at it keeps its own explanation."""
    first = remember(index, MemoryDraft(text="kappa rollout paused", occurred_at=NOW), "t")
    second = remember(
        index, MemoryDraft(text="kappa rollout resumed", occurred_at=NOW + timedelta(days=2)), "t"
    )
    third = remember(
        index, MemoryDraft(text="kappa rollout finished", occurred_at=NOW + timedelta(days=5)), "t"
    )
    ids = [first.node.id, second.node.id, third.node.id]
    for source, target in zip(ids, [*ids[1:], ids[0]], strict=True):  # a cycle of refinements
        index.store.link(source, target, "refines", "t")
    result = recall(index, "kappa rollout", 5, intent="general", now=NOW)
    hits = {h.id: h for h in result.hits}
    assert set(ids) <= set(hits)
    for node_id in ids:
        hit = hits[node_id]
        assert hit.score > hit.relevance  # each is supported by the others
        walked = [step.walked_from for step in hit.path] + [step.walked_to for step in hit.path]
        assert walked.count(node_id) <= 1  # never explained through itself
        seen, current = {node_id}, hit.path[0].walked_from if hit.path else None
        while current is not None and current not in seen:  # the explanation's start, and so on
            seen.add(current)
            start = hits[current].path if current in hits else []
            assert node_id not in {s.walked_to for s in start} | {s.walked_from for s in start}
            current = start[0].walked_from if start else None
