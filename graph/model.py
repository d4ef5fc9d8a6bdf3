"""The node and edge model shared by decisions and memory items.

Models validate; they do not store. The graph keeps each node's attributes as the JSON form of
:class:`Node` (``Node.to_attrs``), which is what snapshots, hashes and exports read.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .enums import (
    Category,
    EdgeType,
    Lifecycle,
    NodeKind,
    Outcome,
    ReasonType,
    ReviewStatus,
    Stakes,
)
from .timeutil import UtcDatetime

NODE_ID_PATTERN = re.compile(r"^[0-9a-f]{8}$")

MAX_TEXT = 10_000
MAX_CONTEXT = 20_000
MAX_SHORT = 500
MAX_TAGS = 50
MAX_TAG_LEN = 100
MAX_REASONS = 50
MAX_ENTITIES = 100
MAX_WEIGHT = 1_000.0
MAX_PATTERN = 2_000

ShortText = Annotated[str, Field(max_length=MAX_SHORT)]
MetaValue = str | int | float | bool


def check_node_id(value: str, field: str = "id") -> str:
    """Return ``value`` if it is a node id (8 lowercase hex characters, as CSTP issues).

    Raises ``ValueError`` naming the field otherwise; ids are never truncated or re-cased.
    """
    if not isinstance(value, str) or not NODE_ID_PATTERN.match(value):
        raise ValueError(f"{field} must be 8 lowercase hex characters, got {value!r}")
    return value


def _clean_str_list(values: list[str], field: str, max_items: int, max_len: int) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for raw in values:
        item = raw.strip()
        if not item:
            continue
        if len(item) > max_len:
            raise ValueError(f"{field} items must be at most {max_len} characters")
        if item not in seen:
            seen.add(item)
            out.append(item)
    if len(out) > max_items:
        raise ValueError(f"{field} may hold at most {max_items} items")
    return out


def clean_tags(values: list[str]) -> list[str]:
    """Tags stripped, blank ones dropped, duplicates removed (first kept), within the limits."""
    return _clean_str_list(values, "tags", MAX_TAGS, MAX_TAG_LEN)


def clean_entities(values: list[str]) -> list[str]:
    """Entities as :func:`clean_tags` cleans tags, within their own limits."""
    return _clean_str_list(values, "entities", MAX_ENTITIES, MAX_SHORT)


#: Tags and entities: stripped, blanks dropped, duplicates removed, within their limits.
Tags = Annotated[list[str], AfterValidator(clean_tags)]
Entities = Annotated[list[str], AfterValidator(clean_entities)]


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_strip_whitespace=True, frozen=True
    )


class Reason(_Strict):
    type: ReasonType
    text: str = Field(min_length=1, max_length=2_000)
    strength: float = Field(default=0.8, ge=0.0, le=1.0)


class Bridge(_Strict):
    structure: str | None = Field(default=None, max_length=2_000)
    function: str | None = Field(default=None, max_length=2_000)


class Node(_Strict):
    """A decision (CSTP fields) or a memory item (``kind`` observation, fact or thought)."""

    id: str
    kind: NodeKind = NodeKind.DECISION
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    category: Category | None = None
    stakes: Stakes | None = None
    context: str | None = Field(default=None, max_length=MAX_CONTEXT)
    reasons: list[Reason] = Field(default_factory=list, max_length=MAX_REASONS)
    tags: Tags = Field(default_factory=list)
    pattern: str | None = Field(default=None, max_length=MAX_PATTERN)
    bridge: Bridge | None = None
    project: ShortText | None = None
    feature: ShortText | None = None
    pr: ShortText | None = None
    source: ShortText | None = None
    external_id: ShortText | None = None
    entities: Entities = Field(default_factory=list)
    lifecycle: Lifecycle = Lifecycle.ACCEPTED
    status: ReviewStatus = ReviewStatus.PENDING
    outcome: Outcome | None = None
    actual_result: str | None = Field(default=None, max_length=MAX_CONTEXT)
    lessons: str | None = Field(default=None, max_length=MAX_CONTEXT)
    review_notes: str | None = Field(default=None, max_length=MAX_CONTEXT)
    reviewed_at: UtcDatetime | None = None
    reviewed_by: ShortText | None = None
    review_by: UtcDatetime | None = None
    created_at: UtcDatetime
    occurred_at: UtcDatetime | None = None
    recorded_by: ShortText
    updated_at: UtcDatetime | None = None
    updated_by: ShortText | None = None
    version: int = Field(default=1, ge=1)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_node_id(value)

    @field_validator("lifecycle")
    @classmethod
    def _stored_lifecycle(cls, value: Lifecycle) -> Lifecycle:
        if value is Lifecycle.SUPERSEDED:
            raise ValueError("superseded is derived from a supersedes edge; supersede instead")
        return value

    def to_attrs(self) -> dict[str, Any]:
        """The JSON-compatible attribute dict kept on the graph node (``id`` is the key)."""
        return self.model_dump(mode="json", exclude={"id"}, exclude_none=True)

    @classmethod
    def from_attrs(cls, node_id: str, attrs: dict[str, Any]) -> Node:
        return cls.model_validate({**attrs, "id": node_id})


class Edge(_Strict):
    """A typed directed edge ``source -> target`` ("source <type> target")."""

    source: str
    target: str
    type: EdgeType
    weight: float = Field(default=1.0, gt=0.0, le=MAX_WEIGHT)
    created_at: UtcDatetime
    created_by: ShortText
    context: str | None = Field(default=None, max_length=MAX_CONTEXT)
    origin: Literal["manual", "auto"] = "manual"
    meta: dict[str, MetaValue] = Field(default_factory=dict, max_length=32)

    @field_validator("source", "target")
    @classmethod
    def _ids(cls, value: str, info: ValidationInfo) -> str:
        return check_node_id(value, info.field_name or "id")

    @field_validator("meta")
    @classmethod
    def _meta(cls, value: dict[str, MetaValue]) -> dict[str, MetaValue]:
        for key, item in value.items():
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"meta.{key} must be finite")
        return value

    def to_attrs(self) -> dict[str, Any]:
        """Attributes kept on the graph edge; source, target and type are its endpoints and key."""
        return self.model_dump(mode="json", exclude={"source", "target", "type"}, exclude_none=True)

    @classmethod
    def from_attrs(cls, source: str, target: str, edge_type: str, attrs: dict[str, Any]) -> Edge:
        return cls.model_validate({**attrs, "source": source, "target": target, "type": edge_type})
