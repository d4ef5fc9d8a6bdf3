"""The validated inputs of the use cases, in domain words.

Each is declared once here (or in :mod:`graph.drafts`) and the JSON-RPC params derive from it
(:mod:`service.methods.params` only adds wire aliases such as ``decision`` for ``text`` or
``sourceId`` for ``source``), so a limit cannot drift between the wire and the domain. Inputs are
validated once, at the edge; the use cases trust them.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from graph.drafts import DecisionDraft, DecisionFields
from graph.enums import Category, EdgeType, Lifecycle, Outcome, Stakes
from graph.model import (
    MAX_CONTEXT,
    MAX_PATTERN,
    MAX_REASONS,
    MAX_TEXT,
    Bridge,
    Reason,
    ShortText,
    Tags,
    check_node_id,
    refuse_control_characters,
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


def _node_id(value: str) -> str:
    if len(value) > 64:  # not an id; and not worth quoting back
        raise ValueError(f"id must be 8 lowercase hex characters, got {len(value)} characters")
    return check_node_id(value, "id")


#: The id of a decision or memory item named by the caller (8 lowercase hex characters).
NodeId = Annotated[str, AfterValidator(_node_id)]
#: Ids of decisions named by the caller, at most 100.
NodeIds = Annotated[list[NodeId], Field(max_length=MAX_IDS)]


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_strip_whitespace=True)

    @field_validator("*")
    @classmethod
    def _no_control_characters(cls, value: Any) -> Any:
        """Every text field (nested ones too) refuses C0 controls but tab, LF and CR."""
        return refuse_control_characters(value)


class Override(Input):
    """Record despite blocking guardrails; the reason and what was overridden are logged."""

    reason: str = Field(min_length=3, max_length=2_000)


class RecordDecision(DecisionFields):
    """A decision to record, with the links the caller makes in the same write.

    ``contradicts`` and ``supersedes`` add edges from the new decision; a decision that
    supersedes the one it contradicts passes the graph guardrail. ``compatible_with`` declares
    decisions the judge may read as contradicted compatible with this one (a ``relates_to``
    edge marked ``compatible``; the pair is never raised again). ``confirm`` accepts suggested
    edges up front.
    """

    confirm: NodeIds = Field(default_factory=list)
    contradicts: NodeIds = Field(default_factory=list)
    supersedes: NodeIds = Field(default_factory=list)
    compatible_with: NodeIds = Field(default_factory=list)
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

    @field_validator("context")
    @classmethod
    def _context_fits(cls, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        if isinstance(value, dict) and len(context_text(value)) > MAX_CONTEXT:
            raise ValueError(f"as JSON text must be at most {MAX_CONTEXT} characters")
        if isinstance(value, str) and len(value) > MAX_CONTEXT:
            raise ValueError(f"must be at most {MAX_CONTEXT} characters")
        return value

    def to_record(self) -> RecordDecision:
        """The decision to record (validated already: built without validating again)."""
        fields = {name: value for name, value in self if name != "context"}
        context = self.context
        if isinstance(context, dict):
            context = context_text(context)
        return RecordDecision.model_construct(**fields, context=context)


def context_text(context: dict[str, Any]) -> str:
    """An object context as the text a decision keeps (sorted keys, so it is deterministic)."""
    return json.dumps(context, sort_keys=True, ensure_ascii=False)


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
    """Change a decision's fields; ``compatible_with`` declares decisions compatible with it
    (a suspected contradiction between them is withdrawn; the pair is never raised again);
    ``supersedes`` marks decisions it replaces (as a record's ``supersedes``: the gate judges
    the change with them superseded, and the edges are written with it)."""

    id: str
    changes: DecisionChanges = Field(default_factory=DecisionChanges)
    expected_version: int | None = Field(default=None, ge=1)
    override: Override | None = None
    compatible_with: NodeIds = Field(default_factory=list)
    supersedes: NodeIds = Field(default_factory=list)


class ReviewDecision(Input):
    id: str
    outcome: Outcome
    actual_result: str | None = Field(default=None, max_length=MAX_CONTEXT)
    lessons: str | None = Field(default=None, max_length=MAX_CONTEXT)
    notes: str | None = Field(default=None, max_length=MAX_CONTEXT)
    #: CSTP's KPI deltas the outcome moved (name -> value), kept with the review.
    affected_kpis: dict[ShortText, float] | None = Field(default=None, max_length=100)
    expected_version: int | None = Field(default=None, ge=1)


class SetLifecycle(Input):
    """Move a decision to ``proposed``, ``accepted`` or ``rejected`` (``superseded`` is not a
    status one sets: it follows from a ``supersedes`` edge). Bringing a rejected decision back
    is gated like recording it (``override`` as for a record)."""

    id: NodeId
    lifecycle: Literal["proposed", "accepted", "rejected"]
    reason: str | None = Field(default=None, max_length=MAX_CONTEXT)
    expected_version: int | None = Field(default=None, ge=1)
    override: Override | None = None


class ForgetNode(Input):
    """Remove a decision or memory item and its edges (the log keeps its history)."""

    id: NodeId
    reason: str | None = Field(default=None, max_length=MAX_CONTEXT)
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
    #: Drop hits below this absolute relevance (0-1) unless the walk reached them from a kept
    #: one (default: the server's ``recall_floor``).
    min_relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    #: Add how each hit was scored (``via``: signals, anchor, path).
    explain: bool = False


class DecisionQuery(Input):
    query: str = Field(min_length=1, max_length=MAX_TEXT)
    limit: int = Field(default=10, ge=1, le=50)
    filters: RecallFilters = Field(default_factory=RecallFilters)
    retrieval_mode: RetrievalMode = RetrievalMode.HYBRID
    hybrid_weight: float = Field(default=0.7, ge=0, le=1)
    decision_id: str | None = None
    hops: int = Field(default=2, ge=1, le=5)
    #: Drop decisions below this absolute relevance (0-1); default: none dropped (a search).
    min_relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    #: Add the scoring internals (``scores``: semantic, keyword, combined).
    explain: bool = False


class DecisionListing(Input):
    """A page of decisions: filters, a text needle, an order."""

    limit: int = Field(default=20, ge=1, le=500)
    offset: int = Field(default=0, ge=0)
    category: Category | None = None
    stakes: Stakes | None = None
    status: (
        Literal["pending", "reviewed", "proposed", "accepted", "rejected", "superseded"] | None
    ) = None
    lifecycle: list[Lifecycle] | None = None
    tags: list[str] | None = None
    project: str | None = None
    agent: ShortText | None = None
    date_from: UtcDatetime | None = None
    date_to: UtcDatetime | None = None
    search: str | None = Field(default=None, max_length=1_000)
    #: ``date`` and CSTP's ``created_at`` are the same order.
    sort: Literal["date", "created_at", "confidence", "stakes", "category", "status"] = "date"
    order: Literal["asc", "desc"] = "desc"
    include_superseded: bool = True

    @field_validator("lifecycle", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("order", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("date_to", mode="before")
    @classmethod
    def _whole_day(cls, value: Any) -> Any:
        return end_of_day(value)


def end_of_day(value: Any) -> Any:
    """A bare date as an upper bound means its whole day (CSTP appends ``T23:59:59``)."""
    if isinstance(value, str) and len(value.strip()) == 10 and "T" not in value:
        return value.strip() + "T23:59:59.999999Z"
    return value


class FindEvent(Input):
    """An event of the log, by the id a write's "outcome unknown" error named."""

    event_id: str = Field(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$")
