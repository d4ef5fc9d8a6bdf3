"""The validated inputs of the use cases, in domain words.

Each is declared once here (or in :mod:`graph.drafts`) and the JSON-RPC params derive from it
(:mod:`service.methods.params` only adds wire aliases such as ``decision`` for ``text`` or
``sourceId`` for ``source``), so a limit cannot drift between the wire and the domain. Inputs are
validated once, at the edge; the use cases trust them.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graph.drafts import DecisionDraft, DecisionFields
from graph.enums import Category, EdgeType, Outcome, Stakes
from graph.model import (
    MAX_CONTEXT,
    MAX_PATTERN,
    MAX_REASONS,
    MAX_TEXT,
    Bridge,
    Reason,
    ShortText,
    Tags,
)
from graph.timeutil import UtcDatetime
from retrieval.filters import RecallFilters
from retrieval.intents import Intent
from retrieval.query import RetrievalMode

MAX_IDS = 100
#: The fields whose change can create a contradiction: an update touching one is gated.
GATED_CHANGES = frozenset({"text", "category", "stakes"})
#: The fields the stored embedding is made of: an update touching one is embedded before the lock.
EMBEDDED_CHANGES = frozenset({"text", "context", "pattern"})


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_strip_whitespace=True)


class Override(Input):
    """Record despite blocking guardrails; the reason and what was overridden are logged."""

    reason: str = Field(min_length=3, max_length=2_000)


class RecordDecision(DecisionFields):
    """A decision to record, with the links the caller makes in the same write.

    ``contradicts`` and ``supersedes`` add edges from the new decision; a decision that
    supersedes the one it contradicts passes the graph guardrail. ``confirm`` accepts suggested
    edges up front.
    """

    confirm: list[str] = Field(default_factory=list, max_length=MAX_IDS)
    contradicts: list[str] = Field(default_factory=list, max_length=MAX_IDS)
    supersedes: list[str] = Field(default_factory=list, max_length=MAX_IDS)
    override: Override | None = None

    def draft(self) -> DecisionDraft:
        """The decision itself (already validated: built without validating again)."""
        fields = {name: getattr(self, name) for name in DecisionFields.model_fields}
        return DecisionDraft.model_construct(**fields)


class ProposedAction(RecordDecision):
    """What ``checkGuardrails`` and ``preAction`` judge: a decision not yet recorded.

    ``context`` may also be an object of extra evaluation variables (CSTP's shape); recorded,
    it is kept as its JSON text.
    """

    context: str | dict[str, Any] | None = None  # type: ignore[assignment]

    def to_record(self) -> RecordDecision:
        fields = self.model_dump(exclude={"context"}, exclude_unset=True, round_trip=True)
        context = self.context
        if isinstance(context, dict):
            context = json.dumps(context, sort_keys=True, ensure_ascii=False)
        if context is not None:
            fields["context"] = context
        return RecordDecision.model_validate(fields)  # the context limit applies here


class DecisionChanges(Input):
    """The updatable fields of a decision; only those given change."""

    text: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    confidence: float | None = Field(default=None, ge=0, le=1)
    category: Category | None = None
    stakes: Stakes | None = None
    tags: Tags | None = None
    pattern: str | None = Field(default=None, max_length=MAX_PATTERN)
    context: str | None = Field(default=None, max_length=MAX_CONTEXT)
    reasons: list[Reason] | None = Field(default=None, max_length=MAX_REASONS)
    bridge: Bridge | None = None
    project: ShortText | None = None

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True, mode="json")


class UpdateDecision(Input):
    id: str
    changes: DecisionChanges
    expected_version: int | None = Field(default=None, ge=1)
    override: Override | None = None


class ReviewDecision(Input):
    id: str
    outcome: Outcome
    actual_result: str | None = Field(default=None, max_length=MAX_CONTEXT)
    lessons: str | None = Field(default=None, max_length=MAX_CONTEXT)
    notes: str | None = Field(default=None, max_length=MAX_CONTEXT)
    expected_version: int | None = Field(default=None, ge=1)


class LinkDecisions(Input):
    source: str
    target: str
    type: EdgeType
    weight: float = Field(default=1.0, gt=0, le=1000)
    context: str | None = Field(default=None, max_length=MAX_CONTEXT)


class UnlinkDecisions(Input):
    source: str
    target: str
    type: EdgeType | None = None


class RecallQuery(Input):
    query: str = Field(min_length=1, max_length=MAX_TEXT)
    limit: int = Field(default=10, ge=1, le=100)
    intent: Intent | None = None
    filters: RecallFilters = Field(default_factory=RecallFilters)


class DecisionQuery(Input):
    query: str = Field(min_length=1, max_length=MAX_TEXT)
    limit: int = Field(default=10, ge=1, le=50)
    filters: RecallFilters = Field(default_factory=RecallFilters)
    retrieval_mode: RetrievalMode = RetrievalMode.HYBRID
    hybrid_weight: float = Field(default=0.7, ge=0, le=1)
    decision_id: str | None = None
    hops: int = Field(default=2, ge=1, le=5)


class DecisionListing(Input):
    """A page of decisions: filters, a text needle, an order."""

    limit: int = Field(default=20, ge=1, le=500)
    offset: int = Field(default=0, ge=0)
    category: Category | None = None
    stakes: Stakes | None = None
    status: (
        Literal["pending", "reviewed", "proposed", "accepted", "rejected", "superseded"] | None
    ) = None
    tags: list[str] | None = None
    project: str | None = None
    date_from: UtcDatetime | None = None
    date_to: UtcDatetime | None = None
    search: str | None = Field(default=None, max_length=1_000)
    sort: Literal["date", "confidence", "stakes"] = "date"
    order: Literal["asc", "desc"] = "desc"
    include_superseded: bool = True
