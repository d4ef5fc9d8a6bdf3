"""The MCP tools' input models and the lean JSON Schema a client is shown.

CSTP's 17 tools keep CSTP's names, argument names and required arguments (reference §8.4);
decigraph adds optional arguments (the contradiction resolutions, ``contradicts``...) and its
own tools. Each model is the whole argument list a tool accepts (:mod:`.arguments` reads it to
name unknown and misspelt arguments); what the client is shown is :func:`lean_schema` of it:
no titles, nullable optionals as plain types, no defaults, no length limits, nested objects
cut to their property types, one short description where a name does not say enough. The
``cstp.*`` method behind each tool validates every value again, strictly, so the schema only
has to guide the model, and it costs every session's context window.
"""

from __future__ import annotations

import typing
from typing import Any, Literal

from pydantic import BaseModel, Field

Stakes = Literal["low", "medium", "high", "critical"]
#: Every edge type ``cstp.linkDecisions`` takes: CSTP's three first, then decigraph's relations
#: and the derived memory relations.
EdgeKind = Literal[
    "relates_to",
    "supersedes",
    "depends_on",
    "contradicts",
    "refines",
    "caused_by",
    "blocks",
    "temporal",
    "entity",
    "semantic",
    "causal",
]
EDGE_KINDS = typing.get_args(EdgeKind)
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

#: The resolutions of a refused write (``supersedes``, ``compatible_with``,
#: ``override_reason``) are explained once, in the tools' descriptions.
SUPERSEDES = COMPATIBLE_WITH = OVERRIDE_REASON = None
CONFIDENCE = None  # its bounds (0 to 1) say it


def _(text: str | None = None, default: Any = None, **limits: Any) -> Any:
    """An optional field (``None`` unless ``default``), described only when ``text`` is."""
    return Field(default=default, description=text, **limits)


def _required(text: str | None = None, **limits: Any) -> Any:
    return Field(description=text, **limits)


class QueryFilters(BaseModel):
    category: str | None = _()
    stakes: list[str] | None = _()
    status: list[str] | None = _()
    project: str | None = _()
    feature: str | None = _()
    pr: int | None = _()
    min_confidence: float | None = _()
    max_confidence: float | None = _()
    has_outcome: bool | None = _()


class QueryDecisionsInput(BaseModel):
    query: str = _required(min_length=1)
    limit: int = _(None, 5, ge=1, le=50)
    retrieval_mode: Literal["semantic", "keyword", "hybrid"] = _(None, "hybrid")
    filters: QueryFilters | None = _()
    bridge_side: Literal["structure", "function"] | None = _()
    explain: bool | None = _()
    min_relevance: float | None = _(None, ge=0, le=1)


class CheckActionInput(BaseModel):
    description: str = _required(min_length=1)
    category: str | None = _()
    stakes: Stakes = _(None, "medium")
    confidence: float | None = _(CONFIDENCE, ge=0, le=1)
    context: dict[str, Any] | None = _()  # variables the guardrails may test
    supersedes: list[str] | None = _(SUPERSEDES)
    compatible_with: list[str] | None = _(COMPATIBLE_WITH)


class ReasonInput(BaseModel):
    type: ReasonKind = _required()
    text: str = _required(min_length=1)


class DeliberationInputItem(BaseModel):
    id: str = _required()
    text: str = _required(min_length=1)
    source: str | None = _()


class DeliberationStep(BaseModel):
    step: int = _required(ge=1)
    thought: str = _required(min_length=1)
    inputs_used: list[str] | None = _()
    type: str | None = _()
    conclusion: bool = _(None, False)


class DeliberationInput(BaseModel):
    inputs: list[DeliberationInputItem] | None = _()
    steps: list[DeliberationStep] | None = _()
    total_duration_ms: int | None = _(ge=0)


class BridgeInput(BaseModel):
    structure: str = _required(min_length=1)
    function: str = _required(min_length=1)
    tolerance: list[str] | None = _()
    enforcement: list[str] | None = _()
    prevention: list[str] | None = _()


class LogDecisionInput(BaseModel):
    decision: str = _required(min_length=1)
    confidence: float = _required(CONFIDENCE, ge=0, le=1)
    category: Category = _required()
    stakes: Stakes = _(None, "medium")
    context: str | None = _()
    reasons: list[ReasonInput] | None = _()
    tags: list[str] | None = _()
    project: str | None = _()
    feature: str | None = _()
    pr: int | None = _(ge=1)
    agent_id: str | None = _()
    decision_id: str | None = _()
    deliberation: DeliberationInput | None = _()
    bridge: BridgeInput | None = _()
    supersedes: list[str] | None = _(SUPERSEDES)
    compatible_with: list[str] | None = _(COMPATIBLE_WITH)
    override_reason: str | None = _(OVERRIDE_REASON)
    contradicts: list[str] | None = _()
    include_suggestions: bool | None = _("All quality tips, not only the top one.")


class ReviewOutcomeInput(BaseModel):
    id: str = _required(min_length=1)
    outcome: Literal["success", "partial", "failure", "abandoned"] = _required()
    actual_result: str | None = _()
    lessons: str | None = _()
    notes: str | None = _()


class GetStatsInput(BaseModel):
    category: str | None = _()
    project: str | None = _()
    window: Literal["30d", "60d", "90d", "all"] | None = _()


class GetDecisionInput(BaseModel):
    id: str = _required(min_length=1)


class ReasonStatsFilters(BaseModel):
    category: str | None = _()
    stakes: str | None = _()
    project: str | None = _()


class GetReasonStatsInput(BaseModel):
    filters: ReasonStatsFilters | None = _()
    min_reviewed: int = _(None, 3, ge=1, le=50)


class UpdateDecisionInput(BaseModel):
    id: str = _required(min_length=1)
    decision: str | None = _(min_length=1)
    confidence: float | None = _(CONFIDENCE, ge=0, le=1)
    context: str | None = _()
    tags: list[str] | None = _()
    pattern: str | None = _()
    supersedes: list[str] | None = _(SUPERSEDES)
    compatible_with: list[str] | None = _(COMPATIBLE_WITH)
    override_reason: str | None = _(OVERRIDE_REASON)


class RecordThoughtInput(BaseModel):
    text: str = _required(min_length=1)
    agent_id: str | None = _()
    decision_id: str | None = _()


class ActionInput(CheckActionInput):
    """``check_action``'s arguments (one declaration) plus the override a record may carry."""

    override_reason: str | None = _(OVERRIDE_REASON)


class PreActionOptions(BaseModel):
    query_limit: int = _(None, 5, ge=1, le=20)
    auto_record: bool = _(None, True)
    # the briefing's own options (``cstp.preAction``'s ``minRelevance``, ``maxChars``, ``explain``)
    min_relevance: float | None = _(ge=0, le=1)
    max_chars: int | None = _()
    explain: bool | None = _()


class PreActionInput(BaseModel):
    action: ActionInput = _required()
    options: PreActionOptions | None = _()
    reasons: list[ReasonInput] | None = _()
    tags: list[str] | None = _()
    pattern: str | None = _()
    agent_id: str | None = _()


class GetSessionContextInput(BaseModel):
    task_description: str | None = _()
    include: list[Literal["decisions", "guardrails", "calibration", "ready", "patterns"]] | None = (
        _()
    )
    decisions_limit: int = _(None, 10, ge=1, le=50)
    ready_limit: int = _(None, 5, ge=1, le=20)
    format: Literal["json", "markdown"] = _(None, "markdown")
    agent_id: str | None = _()
    max_chars: int | None = _(None, ge=200, le=50_000)
    min_relevance: float | None = _(None, ge=0, le=1)


class ReadyInput(BaseModel):
    min_priority: Literal["low", "medium", "high"] = _(None, "low")
    action_types: list[str] = Field(default_factory=list)
    limit: int = _(None, 20, ge=1, le=50)
    category: str | None = _()
    agent_id: str | None = _()


class LinkDecisionsInput(BaseModel):
    source_id: str = _required(min_length=1)
    target_id: str = _required(min_length=1)
    edge_type: EdgeKind = _required()
    weight: float = _(None, 1.0, gt=0, le=1.0)
    context: str | None = _()


class GetGraphInput(BaseModel):
    node_id: str = _required(min_length=1)
    depth: int = _(None, 1, ge=1, le=5)
    edge_types: list[str] | None = _()  # any EdgeKind: the method names them when refused
    direction: Direction = _(None, "both")


class GetNeighborsInput(BaseModel):
    node_id: str = _required(min_length=1)
    direction: Direction = _(None, "both")
    edge_type: str | None = _()
    limit: int = _(None, 20, ge=1, le=100)


class GetCircuitStateInput(BaseModel):
    scope: str = _required("e.g. stakes:high", min_length=1)


class ListBreakersInput(BaseModel):
    pass


# -- decigraph's lifecycle tools (after its derived ones) ----------------------------------------
class SetLifecycleInput(BaseModel):
    id: str = _required(min_length=1)
    lifecycle: Literal["proposed", "accepted", "rejected"] = _required()
    reason: str | None = _()
    override_reason: str | None = _(OVERRIDE_REASON)


class ForgetInput(BaseModel):
    id: str = _required(min_length=1)
    reason: str | None = _()


class SupersedeInput(BaseModel):
    id: str = _required(min_length=1)
    superseded_by: str = _required(min_length=1)
    reason: str | None = _()


def flat_schema(model: type[BaseModel], by_alias: bool = True) -> dict[str, Any]:
    """``model``'s JSON Schema with every ``$ref`` inlined and ``$defs`` removed (MCP clients
    differ in how they resolve references; a flat schema reads the same everywhere), and without
    ``additionalProperties: false``: unknown argument keys are named, not refused."""
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
            # a model's docstring is not its fields' description: only the field's own is kept
            model_schema = {k: v for k, v in definitions[name].items() if k != "description"}
            merged = {**model_schema, **{k: v for k, v in node.items() if k != "$ref"}}
            return inline(merged, (*seen, name))
        out = {key: inline(value, seen) for key, value in node.items()}
        if out.get("additionalProperties") is False:
            del out["additionalProperties"]
        return out

    flat: dict[str, Any] = inline(schema, ())
    flat.setdefault("properties", {})
    return flat


#: The keys a lean schema keeps (``minimum``/``maximum`` only for a 0-1 fraction).
_KEPT = frozenset({"type", "properties", "required", "items", "enum", "description"})
#: Objects shown with their properties; any other nested object is one line (:func:`shape`).
OPEN = frozenset({"action"})
#: Listed without their enum beyond this many values (the method names them when refused),
#: except where a tool's schema says otherwise (link_decisions' eleven edge types).
MAX_ENUM = 8


def _plain_node(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf [T, null]`` as ``T`` (the outer description kept); other unions as a type list."""
    node = dict(node)
    options = node.pop("anyOf", None)
    if options is None:
        return node
    kept = [o for o in options if o.get("type") != "null"]
    if len(kept) == 1:
        return {**kept[0], **{k: v for k, v in node.items() if k == "description"}}
    node["type"] = [o.get("type") for o in kept if isinstance(o.get("type"), str)]
    return node


def shape(node: dict[str, Any], values: bool = True) -> str:
    """A nested object's keys in one line: ``{type:a|b,text,tags[]}`` (with each enum's
    values unless ``values`` is false)."""
    parts = []
    for key, raw in node.get("properties", {}).items():
        prop = _plain_node(raw)
        items = prop.get("items") if prop.get("type") == "array" else None
        inner = _plain_node(items) if isinstance(items, dict) else prop
        part = key + ("[]" if items is not None else "")
        if inner.get("properties"):
            part += shape(inner, values)
        elif values and inner.get("enum") and len(inner["enum"]) <= MAX_ENUM:
            part += ":" + "|".join(str(v) for v in inner["enum"])
        parts.append(part)
    return "{" + ",".join(parts) + "}"


def lean(
    node: dict[str, Any], depth: int = 0, name: str = "", max_enum: int = MAX_ENUM
) -> dict[str, Any]:
    """One (flat) schema node as a client is shown it: ``anyOf [T, null]`` as ``T``, no
    titles, defaults, formats or length limits, no enum of more than :data:`MAX_ENUM` values;
    a nested object (or list of objects) is one line of its keys (:func:`shape`) unless it is
    one of :data:`OPEN`; a free-form object is ``{type: object}``."""
    node = _plain_node(node)
    fraction = node.get("minimum") == 0 and node.get("maximum") == 1
    out = {key: value for key, value in node.items() if key in _KEPT}
    if fraction:
        out["minimum"], out["maximum"] = 0, 1
    if len(out.get("enum", ())) > max_enum:
        del out["enum"]
    items = out.get("items")
    nested = items if isinstance(items, dict) and items.get("properties") else out
    if depth and nested.get("properties") and name not in OPEN:
        said = out.get("description")
        line = shape(nested, values=items is not None)  # a record list's values: reasons' types
        out = {"type": out.get("type", "object"), "description": f"{said} {line}" if said else line}
        if items is not None:
            out["items"] = {"type": "object"}
        return out
    if isinstance(out.get("properties"), dict):
        out["properties"] = {
            k: lean(v, depth + 1, k, max_enum) for k, v in out["properties"].items()
        }
        if not out["properties"] and depth:
            del out["properties"]
    if isinstance(items, dict):
        out["items"] = lean(items, depth + 1, max_enum=max_enum)
        out["items"].pop("description", None)
    return out


def lean_schema(
    model: type[BaseModel],
    hidden: frozenset[str] = frozenset(),
    by_alias: bool = True,
    max_enum: int = MAX_ENUM,
) -> dict[str, Any]:
    """The schema a client is shown for ``model`` (:func:`lean` of :func:`flat_schema`),
    without the ``hidden`` arguments (accepted all the same)."""
    flat = flat_schema(model, by_alias)
    flat["properties"] = {k: v for k, v in flat["properties"].items() if k not in hidden}
    schema = lean(flat, max_enum=max_enum)
    schema.pop("description", None)  # the tool's own description says it
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema


#: Arguments a tool accepts but does not list (rarely what a model needs; each costs every
#: session's context): CSTP's tracker scopes, a decision's location and deliberation...
HIDDEN: dict[str, frozenset[str]] = {
    "query_decisions": frozenset({"bridge_side", "explain", "min_relevance"}),
    "check_action": frozenset({"context"}),
    "log_decision": frozenset(
        {"feature", "pr", "agent_id", "decision_id", "deliberation", "bridge"}
    ),
    "review_outcome": frozenset({"notes"}),
    "update_decision": frozenset({"pattern"}),
    "record_thought": frozenset({"agent_id"}),
    "ready": frozenset({"agent_id", "action_types", "category"}),
}


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

#: decigraph's lifecycle tools, listed after its derived ones.
LIFECYCLE_INPUTS: dict[str, type[BaseModel]] = {
    "set_lifecycle": SetLifecycleInput,
    "forget": ForgetInput,
    "supersede": SupersedeInput,
}
