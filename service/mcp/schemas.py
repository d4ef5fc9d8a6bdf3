"""The input schemas of CSTP's 17 MCP tools, as CSTP advertises them (reference §8.3, §8.4).

Each tool's ``inputSchema`` is one of these models' JSON Schema, flattened by
:func:`flat_schema` (every ``$ref`` inlined, no ``$defs``): snake_case property names, each with a
title and a description, nullable optionals as ``anyOf [T, null]`` with ``default: null``.

These models only describe the arguments (the MCP SDK checks a call against the schema before
the tool runs); the values are validated once more, strictly, by the ``cstp.*`` method the tool
maps to, whose limits may be stricter. They are declared here, not derived from the methods'
params, because CSTP's tool schemas differ from its JSON-RPC params (other defaults, fewer
fields, snake_case).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Stakes = Literal["low", "medium", "high", "critical"]
EdgeKind = Literal["relates_to", "supersedes", "depends_on"]
Direction = Literal["outgoing", "incoming", "both"]
ReasonKind = Literal[
    "authority",
    "analogy",
    "analysis",
    "pattern",
    "intuition",
    "empirical",
    "elimination",
    "constraint",
]
Category = Literal["architecture", "process", "integration", "tooling", "security"]

SUPERSEDES = "Ids of decisions this one replaces (resolves a contradiction block)."
COMPATIBLE_WITH = (
    "Ids of decisions flagged as contradicted that in fact both hold; never raised again."
)
OVERRIDE_REASON = "Record despite a block; the reason is logged."
DESCRIPTION = "The decision statement: what was decided (or is about to be), in one sentence."
AGENT_ID = (
    "Scopes the deliberation-tracker session to consume (not your identity: calls are "
    "recorded under the authenticated agent)."
)
DECISION_ID = "Scopes the deliberation-tracker session to one decision (not stored)."


def _(text: str, default: Any = None, **limits: Any) -> Any:
    """A field with its description (all optional fields default to ``None`` unless given)."""
    return Field(default=default, description=text, **limits)


def _required(text: str, **limits: Any) -> Any:
    return Field(description=text, **limits)


class QueryFilters(BaseModel):
    """Optional filters; unset ones do not restrict."""

    category: str | None = _("Only this category.")
    stakes: list[str] | None = _("Only these stakes levels (any of).")
    status: list[str] | None = _("Only these review statuses (any of): pending, reviewed.")
    project: str | None = _("Only this project.")
    feature: str | None = _("Only this feature.")
    pr: int | None = _("Only this pull-request number.")
    min_confidence: float | None = _("Only decisions with at least this confidence.")
    max_confidence: float | None = _("Only decisions with at most this confidence.")
    has_outcome: bool | None = _("true: only reviewed decisions; false: only unreviewed ones.")


class QueryDecisionsInput(BaseModel):
    """Search past decisions by meaning and keywords."""

    query: str = _required("What to look for, in natural language.", min_length=1)
    limit: int = _("Most results to return.", 5, ge=1, le=50)
    retrieval_mode: Literal["semantic", "keyword", "hybrid"] = _(
        "semantic (meaning), keyword (exact words) or hybrid (both, the default).", "hybrid"
    )
    filters: QueryFilters | None = _("Restrict the search (category, stakes, project, ...).")
    bridge_side: Literal["structure", "function"] | None = _(
        "Search the bridge's structure (what it looks like) or function (what it does)."
    )


class CheckActionInput(BaseModel):
    """Check a proposed action against the guardrails, without recording anything."""

    description: str = _required("The action you intend to take.", min_length=1)
    category: str | None = _("Its category (architecture, process, integration, ...).")
    stakes: Stakes = _("How much is at stake.", "medium")
    confidence: float | None = _("Your confidence that it is right, 0 to 1.", ge=0, le=1)
    context: dict[str, Any] | None = _("Extra variables the guardrails may test (free-form).")
    supersedes: list[str] | None = _(SUPERSEDES)
    compatible_with: list[str] | None = _(COMPATIBLE_WITH)


class ReasonInput(BaseModel):
    """One reason behind a decision."""

    type: ReasonKind = _required("The kind of reason.")
    text: str = _required("The reason itself.", min_length=1)


class DeliberationInputItem(BaseModel):
    """Something consulted while deciding."""

    id: str = _required("An id for the input, referenced by the steps.")
    text: str = _required("What it said.", min_length=1)
    source: str | None = _("Where it came from.")


class DeliberationStep(BaseModel):
    """One reasoning step."""

    step: int = _required("Step number, from 1.", ge=1)
    thought: str = _required("The thought.", min_length=1)
    inputs_used: list[str] | None = _("Ids of the inputs this step used.")
    type: str | None = _("The kind of step (e.g. reasoning).")
    conclusion: bool = _("Whether this step is the conclusion.", False)


class DeliberationInput(BaseModel):
    """How the decision was reached: inputs consulted and reasoning steps."""

    inputs: list[DeliberationInputItem] | None = _("Inputs consulted.")
    steps: list[DeliberationStep] | None = _("Reasoning steps, in order.")
    total_duration_ms: int | None = _("How long deliberating took, in milliseconds.", ge=0)


class BridgeInput(BaseModel):
    """The decision as structure (what it looks like) and function (what it is for)."""

    structure: str = _required("What it looks like.", min_length=1)
    function: str = _required("What it is for.", min_length=1)
    tolerance: list[str] | None = _("What may vary without breaking it.")
    enforcement: list[str] | None = _("What keeps it in place.")
    prevention: list[str] | None = _("What it prevents.")


class LogDecisionInput(BaseModel):
    """Record a decision after the fact."""

    decision: str = _required(DESCRIPTION, min_length=1)
    confidence: float = _required("Your confidence that it is right, 0 to 1.", ge=0, le=1)
    category: Category = _required("The decision's category.")
    stakes: Stakes = _("How much is at stake.", "medium")
    context: str | None = _("The situation and constraints it was made in.")
    reasons: list[ReasonInput] | None = _("Why: typed reasons (two or more kinds is better).")
    tags: list[str] | None = _("Tags for finding it later.")
    project: str | None = _("The project it belongs to.")
    feature: str | None = _("The feature it belongs to.")
    pr: int | None = _("The pull request it belongs to.", ge=1)
    agent_id: str | None = _(AGENT_ID)
    decision_id: str | None = _(DECISION_ID)
    deliberation: DeliberationInput | None = _("The deliberation that led to it.")
    bridge: BridgeInput | None = _("Its structure and function.")
    supersedes: list[str] | None = _(SUPERSEDES)
    compatible_with: list[str] | None = _(COMPATIBLE_WITH)
    override_reason: str | None = _(OVERRIDE_REASON)


class ReviewOutcomeInput(BaseModel):
    """Record how a decision turned out."""

    id: str = _required("The decision's id (8 hex characters).", min_length=1)
    outcome: Literal["success", "partial", "failure", "abandoned"] = _required("How it went.")
    actual_result: str | None = _("What actually happened.")
    lessons: str | None = _("What to do differently next time.")
    notes: str | None = _("Anything else worth keeping.")


class GetStatsInput(BaseModel):
    """Calibration statistics of reviewed decisions."""

    category: str | None = _("Only this category.")
    project: str | None = _("Only this project.")
    window: Literal["30d", "60d", "90d", "all"] | None = _("Only the last 30, 60 or 90 days.")


class GetDecisionInput(BaseModel):
    """Fetch one decision by id."""

    id: str = _required("The decision's id (8 hex characters).", min_length=1)


class ReasonStatsFilters(BaseModel):
    """Optional filters; unset ones do not restrict."""

    category: str | None = _("Only this category.")
    stakes: str | None = _("Only this stakes level.")
    project: str | None = _("Only this project.")


class GetReasonStatsInput(BaseModel):
    """Which kinds of reasons go with decisions that worked out."""

    filters: ReasonStatsFilters | None = _("Restrict the decisions counted.")
    min_reviewed: int = _("Fewest reviewed uses for a reason type to be scored.", 3, ge=1, le=50)


class UpdateDecisionInput(BaseModel):
    """Change fields of a recorded decision."""

    id: str = _required("The decision's id (8 hex characters).", min_length=1)
    decision: str | None = _("A new statement.", min_length=1)
    confidence: float | None = _("A new confidence, 0 to 1.", ge=0, le=1)
    context: str | None = _("A new context.")
    tags: list[str] | None = _("New tags (they replace the existing ones).")
    pattern: str | None = _("The reusable pattern this decision follows.")
    compatible_with: list[str] | None = _(COMPATIBLE_WITH)
    override_reason: str | None = _(OVERRIDE_REASON)


class RecordThoughtInput(BaseModel):
    """Record one reasoning step."""

    text: str = _required("The thought.", min_length=1)
    agent_id: str | None = _(AGENT_ID)
    decision_id: str | None = _(
        "A recorded decision to append the thought to; else scopes the tracker session."
    )


class ActionInput(BaseModel):
    """The action you are about to take."""

    description: str = _required("The action you intend to take.", min_length=1)
    category: str | None = _("Its category (architecture, process, integration, ...).")
    stakes: Stakes = _("How much is at stake.", "medium")
    confidence: float | None = _("Your confidence that it is right, 0 to 1.", ge=0, le=1)
    context: dict[str, Any] | None = _("Extra variables the guardrails may test (free-form).")
    supersedes: list[str] | None = _(SUPERSEDES)
    compatible_with: list[str] | None = _(COMPATIBLE_WITH)
    override_reason: str | None = _(OVERRIDE_REASON)


class PreActionOptions(BaseModel):
    """What the pre-action check does besides the guardrails."""

    query_limit: int = _("How many similar past decisions to return.", 5, ge=1, le=20)
    auto_record: bool = _("Record the action as a decision when it is allowed.", True)


class PreActionInput(BaseModel):
    """Check an action before taking it: similar decisions, guardrails, optional record."""

    action: ActionInput = _required("The action you are about to take.")
    options: PreActionOptions | None = _("Query size and whether to record.")
    reasons: list[ReasonInput] | None = _("Why (kept when the action is recorded).")
    tags: list[str] | None = _("Tags (kept when the action is recorded).")
    pattern: str | None = _("The reusable pattern it follows (kept when recorded).")
    agent_id: str | None = _(AGENT_ID)


class GetSessionContextInput(BaseModel):
    """Everything worth knowing at the start of a task."""

    task_description: str | None = _("The task you are starting (finds relevant decisions).")
    include: list[Literal["decisions", "guardrails", "calibration", "ready", "patterns"]] | None = (
        _("Sections to include (default: all five).")
    )
    decisions_limit: int = _("Most relevant decisions to include.", 10, ge=1, le=50)
    ready_limit: int = _("Most pending actions to include.", 5, ge=1, le=20)
    format: Literal["json", "markdown"] = _("markdown (to read) or json.", "markdown")
    agent_id: str | None = _("Name shown in the context's header.")


class ReadyInput(BaseModel):
    """Maintenance actions that need attention, most important first."""

    min_priority: Literal["low", "medium", "high"] = _("Lowest priority to include.", "low")
    action_types: list[str] = Field(
        default_factory=list,
        description="Only these kinds: review_outcome, calibration_drift, stale_pending.",
    )
    limit: int = _("Most actions to return.", 20, ge=1, le=50)
    category: str | None = _("Only decisions of this category.")
    agent_id: str | None = _("Accepted for compatibility; unused.")


class LinkDecisionsInput(BaseModel):
    """Create a typed edge between two decisions."""

    source_id: str = _required("The decision the edge starts from.", min_length=1)
    target_id: str = _required("The decision the edge points to.", min_length=1)
    edge_type: EdgeKind = _required(
        "relates_to, supersedes (source replaces target) or depends_on."
    )
    weight: float = _("Strength of the link, above 0 and at most 1.", 1.0, gt=0, le=1.0)
    context: str | None = _("Why they are linked.")


class GetGraphInput(BaseModel):
    """The subgraph around a decision."""

    node_id: str = _required("The decision at the centre.", min_length=1)
    depth: int = _("How many hops to walk.", 1, ge=1, le=5)
    edge_types: list[EdgeKind] | None = _("Only these edge types (default: all).")
    direction: Direction = _("Follow outgoing, incoming or both directions.", "both")


class GetNeighborsInput(BaseModel):
    """The decisions directly linked to one decision."""

    node_id: str = _required("The decision whose neighbours to list.", min_length=1)
    direction: Direction = _("outgoing, incoming or both.", "both")
    edge_type: EdgeKind | None = _("Only this edge type.")
    limit: int = _("Most neighbours to return.", 20, ge=1, le=100)


class GetCircuitStateInput(BaseModel):
    """One circuit breaker's state."""

    scope: str = _required(
        "The breaker's scope, e.g. stakes:high or category:security.", min_length=1
    )


class ListBreakersInput(BaseModel):
    """Every circuit breaker."""


def flat_schema(model: type[BaseModel], by_alias: bool = True) -> dict[str, Any]:
    """``model``'s JSON Schema with every ``$ref`` inlined and ``$defs`` removed (MCP clients
    differ in how they resolve references; a flat schema reads the same everywhere), and without
    ``additionalProperties: false``: as in CSTP, unknown argument keys are accepted and ignored."""
    schema = model.model_json_schema(by_alias=by_alias)
    definitions = schema.pop("$defs", {})

    def inline(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name in seen:  # a recursive model: no such model in the tools (refuse loudly)
                raise ValueError(f"{model.__name__}: recursive schema {name}")
            merged = {**definitions[name], **{k: v for k, v in node.items() if k != "$ref"}}
            return inline(merged, (*seen, name))
        out = {key: inline(value, seen) for key, value in node.items()}
        if out.get("additionalProperties") is False:
            del out["additionalProperties"]
        return out

    flat: dict[str, Any] = inline(schema, ())
    flat.setdefault("properties", {})
    for key, prop in flat["properties"].items():  # pydantic leaves a model-typed field untitled
        prop.setdefault("title", key.replace("_", " ").title())
    return flat


#: The 17 CSTP tools' inputs, by tool name, in CSTP's order.
CSTP_INPUTS: dict[str, type[BaseModel]] = {
    "query_decisions": QueryDecisionsInput,
    "check_action": CheckActionInput,
    "log_decision": LogDecisionInput,
    "review_outcome": ReviewOutcomeInput,
    "get_stats": GetStatsInput,
    "get_decision": GetDecisionInput,
    "get_reason_stats": GetReasonStatsInput,
    "update_decision": UpdateDecisionInput,
    "record_thought": RecordThoughtInput,
    "pre_action": PreActionInput,
    "get_session_context": GetSessionContextInput,
    "ready": ReadyInput,
    "link_decisions": LinkDecisionsInput,
    "get_graph": GetGraphInput,
    "get_neighbors": GetNeighborsInput,
    "get_circuit_state": GetCircuitStateInput,
    "list_breakers": ListBreakersInput,
}
