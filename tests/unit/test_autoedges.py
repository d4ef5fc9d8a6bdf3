"""Automatic edges on write: each signal, its caps and weights, and contradiction suggestions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graph.drafts import DecisionDraft, MemoryDraft
from graph.enums import EdgeType
from graph.ids import IdSource
from graph.model import Edge
from graph.store import DecisionStore, StoreOptions
from retrieval.autoedges import AutoEdgeConfig
from retrieval.contradiction.tiers import Conflict
from retrieval.index import DualIndex
from retrieval.writes import WriteResult, record, remember
from tests.conftest import TickingClock
from tests.support.fakes import HashEmbedder, MemoryVectorIndex

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def index(tmp_path: Path) -> DualIndex:
    store = DecisionStore.open(
        tmp_path / "data", StoreOptions(fsync="never"), clock=TickingClock(), ids=IdSource(3)
    )
    return DualIndex.open(store, HashEmbedder(), MemoryVectorIndex())


def by_signal(result: WriteResult, signal: str) -> list[Edge]:
    return [e for e in result.edges if e.meta.get("signal") == signal]


def note(
    index: DualIndex, text: str, source: str = "ana", hours: float = 0.0, **kw: object
) -> WriteResult:
    draft = MemoryDraft.model_validate(
        {"text": text, "source": source, "occurred_at": T0 + timedelta(hours=hours), **kw}
    )
    return remember(index, draft, "t")


def test_temporal_backbone_links_the_previous_item_from_the_same_source(index: DualIndex) -> None:
    first = note(index, "alpha one", "ana", 0)
    note(index, "beta two", "ben", 1)
    third = note(index, "gamma three", "ana", 2)
    backbone = by_signal(third, "backbone")
    assert [e.target for e in backbone] == [first.node.id]
    assert backbone[0].type is EdgeType.TEMPORAL
    assert not by_signal(first, "backbone")


def test_proximity_weights_decay_with_hours_and_rank_and_respect_the_window(
    index: DualIndex,
) -> None:
    old = note(index, "far away", "x", -48)
    near = [note(index, f"word{i}", "x", -i) for i in (3, 1)]
    draft = MemoryDraft(text="fresh", source="y", occurred_at=T0)
    new = remember(index, draft, "t", AutoEdgeConfig(temporal_fanout=3))
    proximity = {e.target: e for e in by_signal(new, "proximity")}
    assert old.node.id not in proximity  # outside the 24 h window
    one_hour, three_hours = proximity[near[1].node.id], proximity[near[0].node.id]
    assert one_hour.weight == pytest.approx(1 / (1 + 1) / 1)
    assert three_hours.weight == pytest.approx(1 / (1 + 3) / 2)


def test_proximity_fan_out_is_capped(index: DualIndex) -> None:
    for i in range(15):
        note(index, f"token{i}", "x", 0)
    config = AutoEdgeConfig(temporal_fanout=4)
    result = remember(index, MemoryDraft(text="last", source="z", occurred_at=T0), "t", config)
    assert len(by_signal(result, "proximity")) == 4


def test_proximity_links_the_items_just_before_in_the_same_stream(index: DualIndex) -> None:
    # Two agents and two projects interleaved within the hour: each item links to the one
    # just before it in its own stream (project, recorder), never to the others' work.
    streams = [("ana", "alpha"), ("ben", "alpha"), ("ana", "beta")]
    ids: dict[tuple[str, str], list[str]] = {s: [] for s in streams}
    links: dict[str, list[str]] = {}
    for i in range(12):
        agent, project = streams[i % 3]
        draft = MemoryDraft(
            text=f"step {i}", project=project, occurred_at=T0 + timedelta(minutes=i)
        )
        result = remember(index, draft, agent)
        links[result.node.id] = [e.target for e in by_signal(result, "proximity")]
        ids[agent, project].append(result.node.id)
    for stream in streams:
        chain = ids[stream]
        assert links[chain[0]] == []
        assert [links[n] for n in chain[1:]] == [[p] for p in chain[:-1]]
    wider = remember(
        index,
        MemoryDraft(text="step 12", project="alpha", occurred_at=T0 + timedelta(minutes=12)),
        "ana",
        AutoEdgeConfig(temporal_fanout=2),
    )
    assert [e.target for e in by_signal(wider, "proximity")] == ids["ana", "alpha"][:-3:-1]


def test_a_scripted_session_is_a_chain_not_a_clique(index: DualIndex) -> None:
    # 36 decisions recorded by one agent within the hour: fewer than 2 temporal edges per
    # decision (each symmetric edge counted once; the old fan-out of 10 gave about 8.5).
    for i in range(36):
        record(index, DecisionDraft(text=f"Decision {i}: adopt tool{i} for stage {i}"), "agent")
    G = index.store.graph
    temporal = {tuple(sorted((u, v))) for u, v, k in G.edges(keys=True) if k == "temporal"}
    assert len(temporal) / 36 < 2
    assert len(temporal) == 35  # one chain


def test_entity_links_are_idf_weighted_and_capped(index: DualIndex) -> None:
    for i in range(8):
        note(index, f"PostgreSQL tuning step {i}", f"s{i}", -100 * (i + 1))
    note(index, "Kubernetes rollout", "k", -1000)
    result = note(index, "PostgreSQL and Kubernetes together", "q", 500)
    entity = by_signal(result, "entity")
    assert len([e for e in entity if e.meta["entity"] == "postgresql"]) == 5  # per-entity cap
    weights = {e.meta["entity"]: e.weight for e in entity}
    assert weights["kubernetes"] > weights["postgresql"]  # the rarer entity weighs more
    capped = remember(
        index,
        MemoryDraft(text="PostgreSQL Kubernetes", source="w", occurred_at=T0 + timedelta(days=90)),
        "t",
        AutoEdgeConfig(entity_links_per_insert=2),
    )
    assert len(by_signal(capped, "entity")) == 2


def test_semantic_links_above_threshold_and_suggests_the_mid_band(index: DualIndex) -> None:
    same = note(index, "redis cache eviction policy", "a", -200)
    partial = note(index, "redis cache warmup plan", "b", -300)
    note(index, "quarterly budget", "c", -400)
    result = note(index, "redis cache eviction policy", "d", 0)
    links = by_signal(result, "semantic")
    assert [e.target for e in links] == [same.node.id]
    assert links[0].type is EdgeType.SEMANTIC
    assert links[0].weight == pytest.approx(1.0, abs=1e-5)
    suggested = {s.target: s for s in result.suggestions}
    assert suggested[partial.node.id].type is EdgeType.RELATES_TO
    assert 0.4 <= suggested[partial.node.id].score < 0.8


def test_causal_cue_plus_overlap_links_recent_items(index: DualIndex) -> None:
    cause = note(index, "the deploy pipeline broke on friday", "a", 0)
    unrelated = note(index, "lunch menu changed", "a", 1)
    result = note(index, "release delayed because the deploy pipeline broke", "a", 2)
    causal = by_signal(result, "causal")
    assert [e.target for e in causal] == [cause.node.id]
    assert causal[0].type is EdgeType.CAUSAL
    assert causal[0].weight >= 0.15
    plain = note(index, "the deploy pipeline broke again", "a", 3)
    assert not by_signal(plain, "causal")  # no causal cue, no causal edge
    assert unrelated.node.id not in {e.target for e in causal}


def test_a_decision_citing_another_decision_is_caused_by_it(index: DualIndex) -> None:
    first = record(index, DecisionDraft(text="Adopt feature flags"), "t").node
    later = record(
        index, DecisionDraft(text="Remove the old toggles", context=f"follows {first.id}"), "t"
    )
    cites = by_signal(later, "cites")
    assert [(e.target, e.type) for e in cites] == [(first.id, EdgeType.CAUSED_BY)]


def test_raised_pairs_are_written_as_suspected_contradictions(index: DualIndex) -> None:
    keep = record(index, DecisionDraft(text="Use Redis for session storage"), "t").node
    raised = Conflict(keep.id, 0.81, "review", "substitution", "judge-v1", "Use Redis")
    result = record(
        index, DecisionDraft(text="Move sessions to Memcached"), "t", conflicts=[raised]
    )
    attrs = index.store.graph.get_edge_data(result.node.id, keep.id, key="contradicts")
    assert attrs is not None
    assert attrs["origin"] == "auto"
    assert attrs["meta"] == {
        "signal": "suspected",
        "p": 0.81,
        "tier": "review",
        "kind": "substitution",
        "judge": "judge-v1",
    }
    assert keep.id not in {s.target for s in result.suggestions}


def test_a_declared_compatible_pair_gets_a_marked_edge_and_no_suggestion(
    index: DualIndex,
) -> None:
    keep = record(index, DecisionDraft(text="Use Redis for session storage"), "t").node
    result = record(
        index,
        DecisionDraft(text="Use Redis for session storage, 2 replicas"),
        "t",
        compatible=[keep.id],
    )
    attrs = index.store.graph.get_edge_data(result.node.id, keep.id, key="relates_to")
    assert attrs is not None
    assert attrs["meta"] == {"signal": "compatible"}
    assert keep.id not in {s.target for s in result.suggestions}


def test_auto_edges_are_in_the_log_and_replay_identically(tmp_path: Path, index: DualIndex) -> None:
    for i in range(6):
        note(index, f"PostgreSQL step {i} because of load", f"s{i % 2}", i)
    store = index.store
    expected = store.graph_hash()
    store.close()
    replayed = DecisionStore.open(store.data_dir, StoreOptions(fsync="never", use_snapshot=False))
    try:
        assert replayed.graph_hash() == expected
        origins = {d.get("origin") for _, _, d in replayed.graph.edges(data=True)}
        assert origins == {"auto"}
    finally:
        replayed.close()
