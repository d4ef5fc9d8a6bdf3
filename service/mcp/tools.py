"""The MCP tool table: each tool's name, description, input schema, the ``cstp.*`` method it
calls, how its arguments become that method's params and how the answer becomes the tool's
result.

Every call goes through the JSON-RPC dispatcher (:data:`Call`: a method and its params in, the
JSON-RPC response out), so a tool sees exactly what ``POST /cstp`` answers; only the argument
mapping and CSTP's documented result differences (reference §8.4, :mod:`.results`) live here.
The table is pure: :func:`run_tool` takes the call function, so the server can dispatch
in-process or over HTTP. Unknown arguments are named in the answer's ``warnings`` and a
misspelt one refuses the call (:mod:`.arguments`); a write the guardrails refuse says which
of the tool's own arguments resolves it (:func:`.results.blocked_outcome`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from service.rpc.errors import RpcError

from .arguments import Known, check_arguments, known_of, with_warnings
from .descriptions import DERIVED_HIDDEN, DESCRIPTIONS, PROPERTY_DESCRIPTIONS, derived_tools
from .results import (
    NOT_FOUND,
    Outcome,
    Shape,
    as_is,
    blocked_outcome,
    breakers_result,
    check_result,
    circuit_result,
    decision_not_found,
    decision_result,
    error_outcome,
    review_not_found,
)
from .schemas import CSTP_INPUTS, EDGE_KINDS, HIDDEN, LIFECYCLE_INPUTS, lean_schema

#: ``(method, params) -> JSON-RPC response`` (``{"result": ...}`` or ``{"error": ...}``).
Call = Callable[[str, dict[str, Any]], Mapping[str, Any]]
Args = Mapping[str, Any]
#: A guardrail refusal: JSON-RPC's code, with violations in its data.
BLOCKED = -32004
#: The resolutions each gated write tool takes (named in its refusal).
RESOLUTIONS: dict[str, tuple[str, ...]] = {
    "log_decision": ("supersedes", "compatible_with", "override_reason"),
    "update_decision": ("supersedes", "compatible_with", "override_reason"),
    "set_lifecycle": ("override_reason",),
}


def _given(args: Args, *names: str) -> dict[str, Any]:
    """The named arguments that were given and are not null, keyed as given."""
    return {name: args[name] for name in names if args.get(name) is not None}


def _camel(values: Mapping[str, Any]) -> dict[str, Any]:
    return {to_camel(key): value for key, value in values.items()}


def _resolutions(args: Args) -> dict[str, Any]:
    """How a call resolves a contradiction: ``supersedes``, ``compatibleWith``, ``override``."""
    params = _camel(_given(args, "supersedes", "compatible_with"))
    if args.get("override_reason") is not None:
        params["override"] = {"reason": args["override_reason"]}
    return params


def _action(args: Args) -> dict[str, Any]:
    action = {"description": args.get("description"), "stakes": args.get("stakes") or "medium"}
    action.update(_given(args, "category", "confidence", "context"))
    action.update(_resolutions(args))
    return action


def _filters(args: Args, *names: str) -> dict[str, Any]:
    given = args.get("filters")
    return _camel(_given(given, *names)) if isinstance(given, Mapping) else {}


# --- argument mappings (reference §8.4 "Mapping"); tool defaults that differ from the method's
# --- defaults are sent explicitly, the others only when given.


def query_params(args: Args) -> dict[str, Any]:
    params: dict[str, Any] = {
        "query": args.get("query"),
        "limit": args.get("limit", 5),
        "retrievalMode": args.get("retrieval_mode", "hybrid"),
    }
    names = ("category", "stakes", "status", "project", "feature", "pr")
    filters = _filters(args, *names, "min_confidence", "max_confidence", "has_outcome")
    if filters:
        params["filters"] = filters
    params.update(_camel(_given(args, "bridge_side", "explain", "min_relevance")))
    return params


def log_params(args: Args) -> dict[str, Any]:
    names = ("decision", "confidence", "category", "context", "reasons", "tags", "project")
    params = _given(args, *names, "feature", "pr", "deliberation", "bridge", "contradicts")
    params["stakes"] = args.get("stakes") or "medium"
    params.update(_camel(_given(args, "agent_id", "decision_id", "include_suggestions")))
    params.update(_resolutions(args))
    return params


def review_params(args: Args) -> dict[str, Any]:
    return {
        **_given(args, "id", "outcome", "lessons", "notes"),
        **_camel(_given(args, "actual_result")),
    }


def stats_params(args: Args) -> dict[str, Any]:
    params: dict[str, Any] = {}
    filters = _given(args, "category", "project")
    if filters:
        params["filters"] = filters
    params.update(_given(args, "window"))
    return params


def reason_stats_params(args: Args) -> dict[str, Any]:
    params: dict[str, Any] = {"minReviewed": args.get("min_reviewed", 3)}
    filters = _filters(args, "category", "stakes", "project")
    if filters:
        params["filters"] = filters
    return params


def update_params(args: Args) -> dict[str, Any]:
    params: dict[str, Any] = {"id": args.get("id")}
    updates = _given(args, "decision", "confidence", "context", "tags", "pattern")
    params["updates"] = updates  # may be empty with compatible_with: the method accepts that
    params.update(_resolutions(args))
    return params


def pre_action_params(args: Args) -> dict[str, Any]:
    given = args.get("action")
    action = _action(given) if isinstance(given, Mapping) else given
    given_options = args.get("options")
    options: Mapping[str, Any] = given_options if isinstance(given_options, Mapping) else {}
    params: dict[str, Any] = {
        "action": action,
        "options": {
            "queryLimit": options.get("query_limit", 5),
            "autoRecord": options.get("auto_record", True),  # the tool's default (CSTP's too)
            "view": "brief",  # what an agent reads: conflicts, failures, decisions, one line each
            **_camel(_given(options, "min_relevance", "max_chars", "explain")),
        },
    }
    params.update(_given(args, "reasons", "tags", "pattern"))
    params.update(_camel(_given(args, "agent_id")))
    return params


def context_params(args: Args) -> dict[str, Any]:
    names = ("task_description", "include", "decisions_limit", "ready_limit", "max_chars")
    params = _camel(_given(args, *names, "min_relevance"))
    params["format"] = args.get("format", "markdown")  # the tool's default; JSON-RPC's is json
    params.update(_camel(_given(args, "agent_id")))
    return params


def _all_camel(*names: str) -> Callable[[Args], dict[str, Any]]:
    def mapping(args: Args) -> dict[str, Any]:
        return _camel(_given(args, *names))

    return mapping


def lifecycle_params(args: Args) -> dict[str, Any]:
    params = _given(args, "id", "lifecycle", "reason")
    if args.get("override_reason") is not None:
        params["override"] = {"reason": args["override_reason"]}
    return params


def supersede_params(args: Args) -> dict[str, Any]:
    """``superseded_by`` supersedes ``id``: the edge ``cstp.linkDecisions`` makes."""
    params = {"sourceId": args.get("superseded_by"), "targetId": args.get("id")}
    params["edgeType"] = "supersedes"
    params.update({"context": args["reason"]} if args.get("reason") is not None else {})
    return params


@dataclass(frozen=True)
class Tool:
    """One MCP tool: what the model sees (name, description, input schema) and what runs."""

    name: str
    method: str
    description: str
    input_schema: dict[str, Any]
    params: Callable[[Args], dict[str, Any]]
    shape: Shape = as_is
    #: A "not found" error (-32005) answered as a result instead of an error.
    not_found: Shape | None = None
    #: Every argument the tool accepts, at every depth (listed in the schema or not).
    known: Known = field(default_factory=dict)
    #: Where the answer names ignored arguments (check_action's ``warnings`` are guardrails').
    warnings_key: str = "warnings"


def misspelt_argument(tool: Tool, arguments: Args | None) -> Outcome | None:
    """The refusal of a call whose arguments misspell one the tool accepts (checked before the
    schema: ``confidnce`` is then named as a misspelling, not ``confidence`` as missing)."""
    try:
        check_arguments(tool.known, arguments or {})
    except RpcError as exc:
        return error_outcome(exc.to_dict())
    return None


def run_tool(tool: Tool, arguments: Args | None, call: Call) -> Outcome:
    """Run ``tool`` with ``arguments`` through ``call``; never raises for a refused call.
    Unknown arguments are dropped and named in the answer's warnings; a misspelt one refuses
    the call before anything is called."""
    try:
        args, warnings = check_arguments(tool.known, arguments or {})
    except RpcError as exc:
        return error_outcome(exc.to_dict())
    outcome = _run(tool, args, call)
    payload = with_warnings(outcome.payload, warnings, tool.warnings_key)
    return Outcome(payload, outcome.is_error)


def _run(tool: Tool, args: Args, call: Call) -> Outcome:
    if tool.name == "update_decision":
        settles = args.get("compatible_with") or args.get("supersedes")
        if not update_params(args)["updates"] and not settles:
            fields = "decision, confidence, context, tags, pattern (or compatible_with, supersedes)"
            message = f"No fields to update: give one of {fields}"
            return Outcome({"error": "validation_error", "message": message}, is_error=True)
    if tool.name == "record_thought":
        return _record_thought(args, call)
    answer = call(tool.method, tool.params(args))
    error = answer.get("error")
    if error is not None:
        if tool.not_found is not None and error.get("code") == NOT_FOUND:
            return Outcome(tool.not_found(error, args))
        if tool.name in RESOLUTIONS and error.get("code") == BLOCKED:
            return blocked_outcome(tool.name, error, RESOLUTIONS[tool.name])
        return error_outcome(error)
    result = answer.get("result")
    return Outcome(tool.shape(result if isinstance(result, Mapping) else {}, args))


def _record_thought(args: Args, call: Call) -> Outcome:
    """CSTP's mode rule: with a ``decision_id`` naming a recorded decision (and no
    ``agent_id``), the thought is appended to it; otherwise it is tracked before a decision."""
    text, agent_id, decision_id = args.get("text"), args.get("agent_id"), args.get("decision_id")
    if decision_id is not None and agent_id is None:
        answer = call("cstp.recordThought", {"text": text, "id": decision_id})
        error = answer.get("error")
        if error is None:
            return Outcome(dict(answer.get("result") or {}))
        if error.get("code") != NOT_FOUND:
            return error_outcome(error)
    params = {"text": text, **_camel(_given(args, "agent_id", "decision_id"))}
    answer = call("cstp.recordThought", params)
    if answer.get("error") is not None:
        return error_outcome(answer["error"])
    return Outcome(dict(answer.get("result") or {}))


#: tool -> (method, params mapping, result shape, not-found-as-result)
_CSTP: dict[str, tuple[str, Callable[[Args], dict[str, Any]], Shape, Shape | None]] = {
    "query_decisions": ("cstp.queryDecisions", query_params, as_is, None),
    "check_action": ("cstp.checkGuardrails", lambda a: {"action": _action(a)}, check_result, None),
    "log_decision": ("cstp.recordDecision", log_params, as_is, None),
    "review_outcome": ("cstp.reviewDecision", review_params, as_is, review_not_found),
    "get_stats": ("cstp.getCalibration", stats_params, as_is, None),
    "get_decision": ("cstp.getDecision", _all_camel("id"), decision_result, decision_not_found),
    "get_reason_stats": ("cstp.getReasonStats", reason_stats_params, as_is, None),
    "update_decision": ("cstp.updateDecision", update_params, as_is, None),
    "record_thought": (
        "cstp.recordThought",
        _all_camel("text", "agent_id", "decision_id"),
        as_is,
        None,
    ),
    "pre_action": ("cstp.preAction", pre_action_params, as_is, None),
    "get_session_context": ("cstp.getSessionContext", context_params, as_is, None),
    "ready": (
        "cstp.ready",
        _all_camel("min_priority", "action_types", "limit", "category", "agent_id"),
        as_is,
        None,
    ),
    "link_decisions": (
        "cstp.linkDecisions",
        _all_camel("source_id", "target_id", "edge_type", "weight", "context"),
        as_is,
        None,
    ),
    "get_graph": (
        "cstp.getGraph",
        _all_camel("node_id", "depth", "edge_types", "direction"),
        as_is,
        None,
    ),
    "get_neighbors": (
        "cstp.getNeighbors",
        _all_camel("node_id", "direction", "edge_type", "limit"),
        as_is,
        None,
    ),
    "get_circuit_state": ("cstp.getCircuitState", _all_camel("scope"), circuit_result, None),
    "list_breakers": ("cstp.listBreakers", lambda a: {}, breakers_result, None),
}


#: decigraph's lifecycle tools: tool -> (method, params mapping).
_LIFECYCLE: dict[str, tuple[str, Callable[[Args], dict[str, Any]]]] = {
    "set_lifecycle": ("cstp.setLifecycle", lifecycle_params),
    "forget": ("cstp.forget", _all_camel("id", "reason")),
    "supersede": ("cstp.linkDecisions", supersede_params),
}


def build_tools() -> list[Tool]:
    """CSTP's 17 tools in CSTP's order, then decigraph's own, then its lifecycle tools."""
    tools = []
    for name, model in CSTP_INPUTS.items():
        method, params, shape, not_found = _CSTP[name]
        schema = lean_schema(model, HIDDEN.get(name, frozenset()), max_enum=len(EDGE_KINDS))
        said, known = DESCRIPTIONS[name], known_of(model)
        key = "paramWarnings" if name == "check_action" else "warnings"
        tools.append(Tool(name, method, said, schema, params, shape, not_found, known, key))
    for name, method, params_model, renames in derived_tools():
        schema = derived_schema(params_model, renames, name)
        known = known_of(params_model, renames)
        tools.append(Tool(name, method, DESCRIPTIONS[name], schema, _renamed(renames), known=known))
    for name, model in LIFECYCLE_INPUTS.items():
        method, params = _LIFECYCLE[name]
        schema = lean_schema(model)
        tools.append(Tool(name, method, DESCRIPTIONS[name], schema, params, known=known_of(model)))
    return tools


def derived_schema(model: type[BaseModel], renames: Mapping[str, str], name: str) -> dict[str, Any]:
    """A decigraph method's params as a lean tool schema: snake_case field names (``renames``
    for the few whose tool name differs), the few arguments worth listing, a description only
    where the name does not say it."""
    hidden = DERIVED_HIDDEN.get(name, frozenset())
    schema = lean_schema(model, frozenset(hidden), by_alias=False)
    properties: dict[str, Any] = {}
    for key, prop in schema["properties"].items():
        new = renames.get(key, key)
        said = PROPERTY_DESCRIPTIONS.get(new)
        properties[new] = {**prop, "description": said} if said else prop
    schema["properties"] = properties
    if "required" in schema:
        schema["required"] = [renames.get(key, key) for key in schema["required"]]
    return schema


def _renamed(renames: Mapping[str, str]) -> Callable[[Args], dict[str, Any]]:
    """Arguments -> params: the renamed ones back to the method's field names (which its
    params accept, as snake_case field names always are), the others as given."""
    back = {new: old for old, new in renames.items()}

    def mapping(args: Args) -> dict[str, Any]:
        return {back.get(key, key): value for key, value in args.items() if value is not None}

    return mapping
