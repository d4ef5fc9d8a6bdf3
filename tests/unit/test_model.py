"""The node and edge model: ids, timestamps, validation that names the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pydantic
import pytest

from graph.drafts import DecisionDraft, parse_review_in
from graph.enums import EDGE_FAMILY, EdgeType, RelationFamily
from graph.model import Edge, Node, check_node_id
from graph.timeutil import format_ts, parse_ts

BASE = {
    "id": "0a1b2c3d",
    "text": "Use Kafka",
    "created_at": "2026-01-01T00:00:00Z",
    "recorded_by": "a",
}


@pytest.mark.parametrize("good", ["00000000", "deadbeef", "0a1b2c3d"])
def test_valid_ids(good: str) -> None:
    assert check_node_id(good) == good


@pytest.mark.parametrize("bad", ["DEADBEEF", "deadbee", "deadbeef0", "g0000000", " deadbeef", ""])
def test_invalid_ids_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="8 lowercase hex"):
        check_node_id(bad)


def test_every_edge_type_has_exactly_one_family() -> None:
    assert set(EDGE_FAMILY) == set(EdgeType)
    assert set(EDGE_FAMILY.values()) == set(RelationFamily)
    assert EdgeType.CAUSED_BY.family is RelationFamily.CAUSAL
    assert EdgeType.SUPERSEDES.family is RelationFamily.TEMPORAL


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"confidence": 1.01}, "confidence"),
        ({"confidence": float("inf")}, "confidence"),
        ({"stakes": "enormous"}, "stakes"),
        ({"kind": "dream"}, "kind"),
        ({"text": ""}, "text"),
        ({"text": "x" * 10_001}, "text"),
        ({"tags": ["t"] * 10 + [f"t{i}" for i in range(60)]}, "tags"),
        ({"lifecycle": "superseded"}, "lifecycle"),
        ({"created_at": "yesterday"}, "created_at"),
        ({"surprise": 1}, "surprise"),
        ({"reasons": [{"type": "vibes", "text": "x"}]}, "reasons"),
    ],
)
def test_node_validation_names_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        Node.model_validate({**BASE, **change})
    assert info.value.errors()[0]["loc"][0] == field


def test_node_attrs_round_trip() -> None:
    node = Node.model_validate({**BASE, "tags": ["a", "a", "b"], "confidence": 0.5})
    attrs = node.to_attrs()
    assert "id" not in attrs
    assert attrs["tags"] == ["a", "b"]
    assert Node.from_attrs(node.id, attrs) == node


def test_timestamps_have_one_sortable_form() -> None:
    plain = parse_ts("2026-05-01T10:00:00")
    offset = parse_ts("2026-05-01T12:00:00+02:00")
    assert plain == offset
    assert format_ts(plain) == "2026-05-01T10:00:00.000000Z"
    later = datetime(2026, 5, 1, 10, 0, 0, 500, tzinfo=UTC)
    assert format_ts(plain) < format_ts(later)
    east = datetime(2026, 5, 1, 11, 0, tzinfo=timezone(timedelta(hours=1)))
    assert format_ts(east) == format_ts(plain)


@pytest.mark.parametrize(("text", "days"), [("7d", 7), ("2w", 14), ("1m", 30), (" 1y ", 365)])
def test_review_in(text: str, days: int) -> None:
    assert parse_review_in(text).days == days


@pytest.mark.parametrize("text", ["7", "d7", "2 weeks", "-1d", ""])
def test_review_in_rejects_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="must look like 7d, 2w"):
        parse_review_in(text)


def test_draft_review_deadline_prefers_explicit_date() -> None:
    created = parse_ts("2026-01-01T00:00:00Z")
    draft = DecisionDraft(text="x", review_in="1w", review_by="2026-02-01T00:00:00Z")  # type: ignore[arg-type]
    assert draft.review_deadline(created) == parse_ts("2026-02-01T00:00:00Z")
    assert DecisionDraft(text="x", review_in="1w").review_deadline(created) == created + timedelta(
        days=7
    )


@pytest.mark.parametrize("weight", [0.0, -1.0, float("nan"), 1e9])
def test_edge_weight_bounds(weight: float) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        Edge.model_validate(
            {
                "source": "00000001",
                "target": "00000002",
                "type": "blocks",
                "weight": weight,
                "created_at": "2026-01-01T00:00:00Z",
                "created_by": "a",
            }
        )
    assert info.value.errors()[0]["loc"][0] == "weight"
