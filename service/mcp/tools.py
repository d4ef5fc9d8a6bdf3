"""The MCP tool table: each tool's name, description, input schema, the ``cstp.*`` method it
calls, how its arguments become that method's params and how the answer becomes the tool's
result.

Every call goes through the JSON-RPC dispatcher (:data:`Call`: a method and its params in, the
JSON-RPC response out), so a tool sees exactly what ``POST /cstp`` answers; only the argument
mapping and CSTP's documented result differences (reference §8.4) live here. The table is pure:
:func:`run_tool` takes the call function, so the server can dispatch in-process or over HTTP.

Errors: a JSON-RPC error becomes a tool result with ``isError: true`` whose text is
``{"error": <kind>, "message": ..., "code": ..., "data"?: ...}`` (:data:`ERROR_KINDS`). CSTP
answers tool errors with ``isError: false``; a flag the client sees lets a model notice the
call failed instead of reading an error as data. Two "not found" answers stay results, as in
CSTP: ``get_decision`` (``found: false``) and ``review_outcome`` (``status: "not_found"``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel, to_snake

from .descriptions import DESCRIPTIONS, derived_tools
from .schemas import CSTP_INPUTS, flat_schema

#: ``(method, params) -> JSON-RPC response`` (``{"result": ...}`` or ``{"error": ...}``).
Call = Callable[[str, dict[str, Any]], Mapping[str, Any]]
Args = Mapping[str, Any]

#: JSON-RPC error code -> the ``error`` word of a failed tool result.
ERROR_KINDS = {
    -32700: "invalid_request",
    -32600: "invalid_request",
    -32601: "method_not_found",
    -32602: "validation_error",
    -32603: "internal_error",
    -32001: "unauthorized",
    -32003: "unavailable",
    -32004: "record_failed",
    -32005: "not_found",
    -32009: "conflict",
    -32010: "unavailable",
}
NOT_FOUND = -32005


@dataclass(frozen=True)
class Outcome:
    """A tool's answer: the JSON object shown to the model, and whether the call failed."""

    payload: dict[str, Any]
    is_error: bool = False

    def text(self) -> str:
        """The payload as the one text block (pretty-printed, as CSTP)."""
        return json.dumps(self.payload, indent=2, ensure_ascii=False, default=str)


def error_outcome(error: Mapping[str, Any]) -> Outcome:
    """A JSON-RPC error object as a failed tool result."""
    code = error.get("code")
    kind = ERROR_KINDS.get(code, "internal_error") if isinstance(code, int) else "internal_error"
    data = error.get("data")
    if kind == "record_failed" and isinstance(data, Mapping) and "violations" in data:
        kind = "guardrail_blocked"
    payload: dict[str, Any] = {
        "error": kind,
        "message": str(error.get("message", "")),
        "code": code,
    }
    if data is not None:
        payload["data"] = data
    return Outcome(payload, is_error=True)


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
    params.update(_camel(_given(args, "bridge_side")))
    return params


def log_params(args: Args) -> dict[str, Any]:
    names = ("decision", "confidence", "category", "context", "reasons", "tags", "project")
    params = _given(args, *names, "feature", "pr", "deliberation", "bridge")
    params["stakes"] = args.get("stakes") or "medium"
    params.update(_camel(_given(args, "agent_id", "decision_id")))
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
    params = _camel(_given(args, "task_description", "include", "decisions_limit", "ready_limit"))
    params["format"] = args.get("format", "markdown")  # the tool's default; JSON-RPC's is json
    params.update(_camel(_given(args, "agent_id")))
    return params


def _all_camel(*names: str) -> Callable[[Args], dict[str, Any]]:
    def mapping(args: Args) -> dict[str, Any]:
        return _camel(_given(args, *names))

    return mapping


# --- result shapes (reference §8.4 "Differences")


def check_result(result: Mapping[str, Any], args: Args) -> dict[str, Any]:
    """CSTP's reduced snake_case verdict."""

    def finding(item: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "guardrail_id": item.get("guardrailId", item.get("guardrail_id")),
            "name": item.get("name"),
            "message": item.get("message"),
            "severity": item.get("severity"),
            **({"suggestion": item["suggestion"]} if item.get("suggestion") else {}),
        }

    return {
        "allowed": result.get("allowed"),
        "violations": [finding(v) for v in result.get("violations", [])],
        "warnings": [finding(w) for w in result.get("warnings", [])],
        "evaluated": result.get("evaluated"),
        **({"conflicts": result["conflicts"]} if result.get("conflicts") else {}),
    }


def circuit_result(result: Mapping[str, Any], args: Args) -> dict[str, Any]:
    """The raw snake_case breaker state (``opened_at`` a number, as CSTP's tool gives it)."""
    raw = {to_snake(key): value for key, value in result.items()}
    opened = raw.get("opened_at")
    if isinstance(opened, str):
        # An ISO time stays as it is: a number only when the method gives epoch seconds.
        with contextlib.suppress(ValueError):
            raw["opened_at"] = float(opened)
    for key in ("cooldown_remaining_ms", "opened_at", "probe_in_flight", "from_config"):
        raw.setdefault(key, None)
    return raw


def breakers_result(result: Mapping[str, Any], args: Args) -> dict[str, Any]:
    breakers = list(result.get("breakers", []))
    return {**result, "breakers": breakers, "total": len(breakers)}


def decision_result(result: Mapping[str, Any], args: Args) -> dict[str, Any]:
    if result.get("found") is False:
        return {**result, "error": f"Decision not found: {args.get('id')}"}
    return dict(result)


def decision_not_found(error: Mapping[str, Any], args: Args) -> dict[str, Any]:
    return {"found": False, "id": args.get("id"), "error": f"Decision not found: {args.get('id')}"}


def review_not_found(error: Mapping[str, Any], args: Args) -> dict[str, Any]:
    return {
        "success": False,
        "id": args.get("id"),
        "status": "not_found",
        "error": f"Decision not found: {args.get('id')}",
    }


Shape = Callable[[Mapping[str, Any], Args], dict[str, Any]]


def _as_is(result: Mapping[str, Any], args: Args) -> dict[str, Any]:
    return dict(result)


@dataclass(frozen=True)
class Tool:
    """One MCP tool: what the model sees (name, description, input schema) and what runs."""

    name: str
    method: str
    description: str
    input_schema: dict[str, Any]
    params: Callable[[Args], dict[str, Any]]
    shape: Shape = _as_is
    #: A "not found" error (-32005) answered as a result instead of an error.
    not_found: Shape | None = None
    #: Keys of the schema's properties (unknown argument keys are dropped before mapping).
    properties: frozenset[str] = field(default_factory=frozenset)


def run_tool(tool: Tool, arguments: Args | None, call: Call) -> Outcome:
    """Run ``tool`` with ``arguments`` through ``call``; never raises for a refused call."""
    args = {k: v for k, v in (arguments or {}).items() if k in tool.properties}
    empty = not update_params(args)["updates"] and not args.get("compatible_with")
    if tool.name == "update_decision" and empty:
        fields = "decision, confidence, context, tags, pattern (or compatible_with)"
        return Outcome(
            {"error": "validation_error", "message": f"No fields to update: give one of {fields}"},
            is_error=True,
        )
    if tool.name == "record_thought":
        return _record_thought(args, call)
    answer = call(tool.method, tool.params(args))
    error = answer.get("error")
    if error is not None:
        if tool.not_found is not None and error.get("code") == NOT_FOUND:
            return Outcome(tool.not_found(error, args))
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
    "query_decisions": ("cstp.queryDecisions", query_params, _as_is, None),
    "check_action": ("cstp.checkGuardrails", lambda a: {"action": _action(a)}, check_result, None),
    "log_decision": ("cstp.recordDecision", log_params, _as_is, None),
    "review_outcome": ("cstp.reviewDecision", review_params, _as_is, review_not_found),
    "get_stats": ("cstp.getCalibration", stats_params, _as_is, None),
    "get_decision": ("cstp.getDecision", _all_camel("id"), decision_result, decision_not_found),
    "get_reason_stats": ("cstp.getReasonStats", reason_stats_params, _as_is, None),
    "update_decision": ("cstp.updateDecision", update_params, _as_is, None),
    "record_thought": (
        "cstp.recordThought",
        _all_camel("text", "agent_id", "decision_id"),
        _as_is,
        None,
    ),
    "pre_action": ("cstp.preAction", pre_action_params, _as_is, None),
    "get_session_context": ("cstp.getSessionContext", context_params, _as_is, None),
    "ready": (
        "cstp.ready",
        _all_camel("min_priority", "action_types", "limit", "category", "agent_id"),
        _as_is,
        None,
    ),
    "link_decisions": (
        "cstp.linkDecisions",
        _all_camel("source_id", "target_id", "edge_type", "weight", "context"),
        _as_is,
        None,
    ),
    "get_graph": (
        "cstp.getGraph",
        _all_camel("node_id", "depth", "edge_types", "direction"),
        _as_is,
        None,
    ),
    "get_neighbors": (
        "cstp.getNeighbors",
        _all_camel("node_id", "direction", "edge_type", "limit"),
        _as_is,
        None,
    ),
    "get_circuit_state": ("cstp.getCircuitState", _all_camel("scope"), circuit_result, None),
    "list_breakers": ("cstp.listBreakers", lambda a: {}, breakers_result, None),
}


def _tool(
    name: str,
    method: str,
    schema: dict[str, Any],
    params: Callable[[Args], dict[str, Any]],
    shape: Shape = _as_is,
    not_found: Shape | None = None,
) -> Tool:
    return Tool(
        name=name,
        method=method,
        description=DESCRIPTIONS[name],
        input_schema=schema,
        params=params,
        shape=shape,
        not_found=not_found,
        properties=frozenset(schema.get("properties", {})),
    )


def build_tools() -> list[Tool]:
    """CSTP's 17 tools in CSTP's order, then decigraph's own."""
    tools = []
    for name, model in CSTP_INPUTS.items():
        method, params, shape, not_found = _CSTP[name]
        tools.append(_tool(name, method, flat_schema(model), params, shape, not_found))
    for name, method, model, renames in derived_tools():
        schema = derived_schema(model, renames, name)
        tools.append(_tool(name, method, schema, _renamed(renames)))
    return tools


def derived_schema(model: type[BaseModel], renames: Mapping[str, str], name: str) -> dict[str, Any]:
    """A decigraph method's params as a tool schema: snake_case field names (``renames`` for
    the few whose tool name differs), the method's own limits, a description for each."""
    from .descriptions import PROPERTY_DESCRIPTIONS

    schema = flat_schema(model, by_alias=False)
    schema["title"] = "".join(part.title() for part in name.split("_")) + "Input"
    schema["description"] = DESCRIPTIONS[name].split("\n")[0]
    properties: dict[str, Any] = {}
    for key, original in schema["properties"].items():
        new = renames.get(key, key)
        prop = dict(original)
        prop["title"] = new.replace("_", " ").title()
        prop["description"] = PROPERTY_DESCRIPTIONS.get(new) or prop.get("description", "")
        properties[new] = prop
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
