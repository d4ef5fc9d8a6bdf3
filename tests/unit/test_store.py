"""The store's commands and the graph rules they enforce."""

from __future__ import annotations

import pytest

from graph.drafts import EdgeDraft, MemoryDraft
from graph.enums import EdgeType, Lifecycle, NodeKind, ReviewStatus
from graph.errors import (
    CycleError,
    DuplicateIdError,
    EdgeNotFoundError,
    NodeNotFoundError,
    SelfLoopError,
    ValidationError,
    VersionConflictError,
)
from graph.lifecycle import effective_lifecycle, is_active
from graph.store import DecisionStore
from tests.conftest import decision


def log_size(store: DecisionStore) -> int:
    return store.log_path.stat().st_size if store.log_path.exists() else 0


def test_record_assigns_cstp_style_id_and_fields(store: DecisionStore) -> None:
    node = store.record(
        decision(category="architecture", stakes="high", tags=["db", "db", " "], review_in="2w"),
        "agent-a",
    )
    assert len(node.id) == 8
    assert int(node.id, 16) >= 0
    assert node.kind is NodeKind.DECISION
    assert node.tags == ["db"]
    assert node.recorded_by == "agent-a"
    assert node.status is ReviewStatus.PENDING
    assert node.review_by is not None
    assert (node.review_by - node.created_at).days == 14
    assert store.graph.nodes[node.id]["text"] == "Use PostgreSQL for the ledger"


def test_client_supplied_id_is_kept_exactly(store: DecisionStore) -> None:
    node = store.record(decision(id="0a1b2c3d"), "a")
    assert node.id == "0a1b2c3d"
    with pytest.raises(DuplicateIdError, match="0a1b2c3d"):
        store.record(decision(id="0a1b2c3d"), "a")


@pytest.mark.parametrize("bad", ["0A1B2C3D", "0a1b2c3d9", "abc", "zzzzzzzz", ""])
def test_malformed_ids_are_rejected_not_truncated(store: DecisionStore, bad: str) -> None:
    size = log_size(store)
    with pytest.raises(ValidationError) as info:
        store.record(decision(id=bad), "a")
    assert info.value.field == "id"
    assert log_size(store) == size
    assert store.graph.number_of_nodes() == 0


def test_remember_stores_memory_items(store: DecisionStore) -> None:
    item = store.remember(
        MemoryDraft(
            text="Caroline joined a support group",
            kind="fact",
            source="Caroline",
            occurred_at="2023-05-08T13:56:00Z",
            external_id="D1:3",
            entities=["Caroline"],
        ),
        "bench",
    )
    assert item.kind is NodeKind.FACT
    assert item.occurred_at is not None
    assert item.occurred_at.year == 2023
    assert store.find_external("D1:3") == item.id
    with pytest.raises(ValidationError, match="external_id"):
        store.remember(MemoryDraft(text="again", external_id="D1:3"), "bench")


def test_update_reaches_the_graph_node_at_once(store: DecisionStore) -> None:
    node = store.record(decision(confidence=0.6), "a")
    updated = store.update(node.id, {"confidence": 0.9, "tags": ["x"]}, "b")
    assert updated.version == 2
    attrs = store.graph.nodes[node.id]
    assert attrs["confidence"] == 0.9
    assert attrs["tags"] == ["x"]
    assert attrs["updated_by"] == "b"


def test_review_reaches_the_graph_node_at_once(store: DecisionStore) -> None:
    node = store.record(decision(), "a")
    store.review(node.id, "partial", "reviewer", lessons="slower than hoped")
    attrs = store.graph.nodes[node.id]
    assert attrs["status"] == "reviewed"
    assert attrs["outcome"] == "partial"
    assert attrs["reviewed_by"] == "reviewer"
    assert attrs["lessons"] == "slower than hoped"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"confidence": 1.5}, "changes.confidence"),
        ({"confidence": float("nan")}, "changes.confidence"),
        ({"category": "marketing"}, "changes.category"),
        ({"version": 9}, "changes.version"),
        ({"id": "00000000"}, "changes.id"),
        ({}, "changes"),
        ({"tags": "not-a-list"}, "changes.tags"),
    ],
)
def test_bad_updates_name_the_field_and_change_nothing(
    store: DecisionStore, changes: dict[str, object], field: str
) -> None:
    node = store.record(decision(), "a")
    size, before = log_size(store), store.graph_hash()
    with pytest.raises(ValidationError) as info:
        store.update(node.id, changes, "b")
    assert info.value.field == field
    assert (log_size(store), store.graph_hash()) == (size, before)


def test_expected_version_rejects_stale_writers_with_current_version(store: DecisionStore) -> None:
    node = store.record(decision(), "a")
    store.update(node.id, {"confidence": 0.7}, "a", expected_version=1)
    with pytest.raises(VersionConflictError) as info:
        store.update(node.id, {"confidence": 0.2}, "b", expected_version=1)
    assert (info.value.expected, info.value.current) == (1, 2)
    with pytest.raises(VersionConflictError):
        store.review(node.id, "success", "b", expected_version=1)
    assert store.get(node.id).confidence == 0.7


def test_review_rejects_unknown_outcome(store: DecisionStore) -> None:
    node = store.record(decision(), "a")
    with pytest.raises(ValidationError, match="outcome"):
        store.review(node.id, "great", "a")


def test_lifecycle_and_supersession(store: DecisionStore) -> None:
    old = store.record(decision("Use MySQL"), "a")
    new = store.record(decision("Use PostgreSQL"), "a")
    store.set_lifecycle(old.id, "rejected", "a", reason="licence")
    assert not is_active(store.graph, old.id)
    store.set_lifecycle(old.id, Lifecycle.ACCEPTED, "a")
    store.supersede(new.id, old.id, "a", context="better JSON support")
    assert effective_lifecycle(store.graph, old.id) is Lifecycle.SUPERSEDED
    assert effective_lifecycle(store.graph, new.id) is Lifecycle.ACCEPTED
    with pytest.raises(ValidationError, match="lifecycle"):
        store.set_lifecycle(new.id, "superseded", "a")
    store.unlink(new.id, old.id, "a", "supersedes")
    assert effective_lifecycle(store.graph, old.id) is Lifecycle.ACCEPTED


@pytest.mark.parametrize("edge_type", [t.value for t in EdgeType])
def test_every_edge_type_links_with_its_symmetry(store: DecisionStore, edge_type: str) -> None:
    a, b = store.record(decision("a"), "x"), store.record(decision("b"), "x")
    result = store.link(a.id, b.id, edge_type, "agent", weight=0.5, context="why")
    assert result.created
    assert result.edge.created_by == "agent"
    assert store.graph.has_edge(a.id, b.id, edge_type)
    assert store.graph.has_edge(b.id, a.id, edge_type) == EdgeType(edge_type).symmetric


def test_link_twice_is_idempotent(store: DecisionStore) -> None:
    a, b = store.record(decision("a"), "x"), store.record(decision("b"), "x")
    store.link(a.id, b.id, "relates_to", "x")
    seq, size = store.seq, log_size(store)
    again = store.link(a.id, b.id, "relates_to", "y", weight=3.0)
    assert not again.created
    assert again.edge.created_by == "x"
    assert (store.seq, log_size(store)) == (seq, size)
    assert store.graph.number_of_edges() == 2  # one symmetric edge, stored both ways


def test_link_needs_both_endpoints(store: DecisionStore) -> None:
    a = store.record(decision("a"), "x")
    with pytest.raises(NodeNotFoundError) as info:
        store.link(a.id, "deadbeef", "depends_on", "x")
    assert info.value.field == "target"
    with pytest.raises(NodeNotFoundError) as info:
        store.link("deadbeef", a.id, "depends_on", "x")
    assert info.value.field == "source"
    assert "deadbeef" not in store.graph  # never a silent stub node


def test_self_loops_are_rejected(store: DecisionStore) -> None:
    a = store.record(decision("a"), "x")
    with pytest.raises(SelfLoopError):
        store.link(a.id, a.id, "relates_to", "x")


@pytest.mark.parametrize("edge_type", ["depends_on", "supersedes", "blocks"])
def test_acyclic_types_report_the_cycle_path(store: DecisionStore, edge_type: str) -> None:
    a, b, c = (store.record(decision(t), "x") for t in "abc")
    store.link(a.id, b.id, edge_type, "x")
    store.link(b.id, c.id, edge_type, "x")
    with pytest.raises(CycleError) as info:
        store.link(c.id, a.id, edge_type, "x")
    assert info.value.path == [c.id, a.id, b.id, c.id]
    assert " -> ".join(info.value.path) in str(info.value)
    store.link(c.id, a.id, "relates_to", "x")  # other types may close loops


def test_cycles_within_one_batch_are_caught(store: DecisionStore) -> None:
    a, b = store.record(decision("a"), "x"), store.record(decision("b"), "x")
    size = log_size(store)
    with pytest.raises(CycleError):
        store.link_many(
            [EdgeDraft(a.id, b.id, "depends_on"), EdgeDraft(b.id, a.id, "depends_on")], "x"
        )
    assert log_size(store) == size
    assert store.graph.number_of_edges() == 0


def test_record_with_edges_is_atomic(store: DecisionStore) -> None:
    a = store.record(decision("a"), "x")
    size = log_size(store)
    with pytest.raises(NodeNotFoundError):
        store.record(decision("b"), "x", [EdgeDraft("ffffffff", a.id, "depends_on")])
    assert log_size(store) == size
    assert store.graph.number_of_nodes() == 1


@pytest.mark.parametrize(
    ("edge", "field"),
    [
        ({"weight": 0}, "weight"),
        ({"weight": -1.0}, "weight"),
        ({"weight": float("inf")}, "weight"),
        ({"type": "likes"}, "type"),
    ],
)
def test_bad_edges_name_the_field(
    store: DecisionStore, edge: dict[str, object], field: str
) -> None:
    a, b = store.record(decision("a"), "x"), store.record(decision("b"), "x")
    draft = EdgeDraft(
        a.id, b.id, str(edge.get("type", "relates_to")), float(edge.get("weight", 1.0))
    )  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as info:
        store.link_many([draft], "x")
    assert info.value.field == field


def test_unlink_by_type_or_all(store: DecisionStore) -> None:
    a, b = store.record(decision("a"), "x"), store.record(decision("b"), "x")
    store.link(a.id, b.id, "depends_on", "x")
    store.link(a.id, b.id, "relates_to", "x")
    store.link(b.id, a.id, "refines", "x")
    store.unlink(b.id, a.id, "x", "relates_to")  # symmetric: removable from either end
    assert not store.graph.has_edge(a.id, b.id, "relates_to")
    assert not store.graph.has_edge(b.id, a.id, "relates_to")
    store.unlink(a.id, b.id, "x")  # all edges a -> b; b -> a refines is a different edge
    assert sorted(store.graph.edges(keys=True)) == [(b.id, a.id, "refines")]
    with pytest.raises(EdgeNotFoundError):
        store.unlink(a.id, b.id, "x", "depends_on")
    with pytest.raises(ValidationError, match="type: "):
        store.unlink(b.id, a.id, "x", "likes")


def test_verify_passes_on_a_sound_store(store: DecisionStore) -> None:
    a, b = store.record(decision("a"), "x"), store.record(decision("b"), "x")
    store.link(a.id, b.id, "depends_on", "x")
    report = store.verify()
    assert report.ok, report.problems
    assert report.events == store.seq == 3


def test_salience_is_cached_until_the_graph_changes(store: DecisionStore) -> None:
    a, b, c = (store.record(decision(t), "x") for t in "abc")
    store.link(b.id, a.id, "depends_on", "x")
    store.link(c.id, a.id, "depends_on", "x")
    first = store.salience()
    assert first[a.id] == pytest.approx(1 - 1 / 2.7)  # two dependents
    assert max(first, key=lambda k: (first[k], k)) == a.id
    assert store.salience() is first
    store.unlink(c.id, a.id, "x")
    assert store.salience() is not first
    assert store.salience()[a.id] == pytest.approx(1 - 1 / 1.85)  # one left


def test_relinking_a_symmetric_edge_from_the_other_end_is_a_no_op(store: DecisionStore) -> None:
    a, b = store.record(decision("a"), "x"), store.record(decision("b"), "x")
    store.link(a.id, b.id, "contradicts", "first")
    again = store.link(b.id, a.id, "contradicts", "second")
    assert not again.created
    assert again.edge.created_by == "first"
