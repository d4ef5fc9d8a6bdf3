"""What callers supply to create decisions, memory items and edges (the store fills the rest)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .enums import Category, EdgeType, Lifecycle, NodeKind, Stakes
from .model import (
    MAX_CONTEXT,
    MAX_PATTERN,
    MAX_REASONS,
    MAX_TEXT,
    Bridge,
    Entities,
    Extras,
    MetaValue,
    Reason,
    ShortText,
    Tags,
    refuse_control_characters,
)
from .timeutil import UtcDatetime

_REVIEW_IN = re.compile(r"^\s*(\d{1,4})\s*([dwmy])\s*$")
_UNIT_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}
MAX_REVIEW_IN = timedelta(days=100 * 365)


def parse_review_in(value: str) -> timedelta:
    """``"7d"``, ``"2w"``, ``"1m"`` (30 days), ``"1y"`` (365 days) as a duration.

    Examples
    --------
    >>> parse_review_in("2w").days
    14
    """
    match = _REVIEW_IN.match(value)
    if not match:
        raise ValueError(f"must look like 7d, 2w, 1m or 1y, got {value!r}")
    return timedelta(days=int(match.group(1)) * _UNIT_DAYS[match.group(2)])


class _Draft(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_strip_whitespace=True)

    @field_validator("*")
    @classmethod
    def _no_control_characters(cls, value: Any) -> Any:
        """Every text field (nested ones too) refuses C0 controls but tab, LF and CR."""
        return refuse_control_characters(value)


class DecisionFields(_Draft):
    """What any caller may say about a new decision (the ``recordDecision`` params derive
    from it, so the wire and the domain share one declaration and one set of limits)."""

    text: str = Field(min_length=1, max_length=MAX_TEXT)
    id: str | None = None
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
    entities: Entities = Field(default_factory=list)
    external_id: ShortText | None = None
    review_in: str | None = None
    #: When the decision took effect (its valid time starts; default: when it was recorded).
    occurred_at: UtcDatetime | None = None
    #: Fields a client sends that decigraph keeps as given (CSTP's deliberation, trace...).
    extras: Extras = None

    @field_validator("review_in")
    @classmethod
    def _review_in(cls, value: str | None) -> str | None:
        if value is not None and parse_review_in(value) > MAX_REVIEW_IN:
            raise ValueError("must be at most 100 years (e.g. 100y, 1200m)")
        return value


class DecisionDraft(DecisionFields):
    """A decision to record: the caller's fields plus what trusted writers (the importer, the
    sample generator) may also set."""

    lifecycle: Literal[Lifecycle.PROPOSED, Lifecycle.ACCEPTED] = Lifecycle.ACCEPTED
    review_by: UtcDatetime | None = None
    created_at: UtcDatetime | None = None

    def review_deadline(self, created: datetime) -> datetime | None:
        if self.review_by is not None:
            return self.review_by
        if self.review_in is not None:
            return created + parse_review_in(self.review_in)
        return None


class MemoryDraft(_Draft):
    """A conversational memory item (``cstp.remember`` params)."""

    text: str = Field(min_length=1, max_length=MAX_TEXT)
    kind: Literal[NodeKind.OBSERVATION, NodeKind.FACT, NodeKind.THOUGHT] = NodeKind.OBSERVATION
    id: str | None = None
    source: ShortText | None = None
    occurred_at: UtcDatetime | None = None
    entities: Entities = Field(default_factory=list)
    tags: Tags = Field(default_factory=list)
    project: ShortText | None = None
    external_id: ShortText | None = None


@dataclass(frozen=True, slots=True)
class EdgeDraft:
    """An edge to create: ``source <type> target``."""

    source: str
    target: str
    type: EdgeType | str
    weight: float = 1.0
    context: str | None = None
    origin: Literal["manual", "auto"] = "manual"
    meta: dict[str, MetaValue] = field(default_factory=dict)
