"""What a tool answers: its compact JSON text, the tool form of a JSON-RPC error, and CSTP's
documented result differences (reference §8.4).

Errors: a JSON-RPC error becomes a tool result with ``isError: true`` whose text is
``{"error": <kind>, "message": ..., "code": ..., "data"?: ...}`` (:data:`ERROR_KINDS`). CSTP
answers tool errors with ``isError: false``; a flag the client sees lets a model notice the
call failed instead of reading an error as data. A write the guardrails refused also says, in
the tool's own argument names, which argument resolves it (:func:`blocked_outcome`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic.alias_generators import to_snake

from service.rpc.errors import clip, clip_data, clip_echoes

Args = Mapping[str, Any]
Shape = Callable[[Mapping[str, Any], Args], dict[str, Any]]

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
#: A decision id, as the gate's suggestions quote them.
_ID = re.compile(r"\b[0-9a-f]{8}\b")
_SUPERSEDES = re.compile(r"supersedes: \[([^\]]*)\]")


@dataclass(frozen=True)
class Outcome:
    """A tool's answer: the JSON object shown to the model, and whether the call failed."""

    payload: dict[str, Any]
    is_error: bool = False

    def text(self) -> str:
        """The payload as the one text block: compact JSON (no indent, no spaces)."""
        return json.dumps(self.payload, separators=(",", ":"), ensure_ascii=False, default=str)


def error_outcome(error: Mapping[str, Any]) -> Outcome:
    """A JSON-RPC error object as a failed tool result (any echoed input already clipped by
    the JSON-RPC layer; clipped again here for errors made elsewhere)."""
    code = error.get("code")
    kind = ERROR_KINDS.get(code, "internal_error") if isinstance(code, int) else "internal_error"
    data = error.get("data")
    if kind == "record_failed" and isinstance(data, Mapping) and "violations" in data:
        kind = "guardrail_blocked"
    payload: dict[str, Any] = {
        "error": kind,
        "message": clip_echoes(str(error.get("message", ""))),
        "code": code,
    }
    if data is not None:
        payload["data"] = clip_data(data)
    return Outcome(payload, is_error=True)


def blocking_ids(data: Any) -> list[str]:
    """The decisions a refused write contradicts (the judge's block-tier pairs and the ids the
    graph guardrail's suggestions name), in order, once each."""
    found: list[str] = []
    if not isinstance(data, Mapping):
        return found
    for conflict in data.get("conflicts") or []:
        if isinstance(conflict, Mapping) and conflict.get("tier") == "block":
            found.append(str(conflict.get("id")))
    for violation in data.get("violations") or []:
        said = violation.get("suggestion") if isinstance(violation, Mapping) else None
        match = _SUPERSEDES.search(said) if isinstance(said, str) else None
        if match is not None:
            found.extend(_ID.findall(match.group(1)))
    return list(dict.fromkeys(found))


def resolution(tool: str, ids: Sequence[str], accepted: Sequence[str]) -> str:
    """How to resolve a refused ``tool`` call, in its arguments' names."""
    listed = json.dumps(list(ids), separators=(",", ":"))
    ways = []
    if ids and "supersedes" in accepted:
        ways.append(f"supersedes:{listed} if it replaces them")
    if ids and "compatible_with" in accepted:
        ways.append(f"compatible_with:{listed} if both hold")
    ways.append('override_reason:"<why>" to record it anyway')
    return f"Call {tool} again with " + ", or ".join(ways) + "."


def blocked_outcome(tool: str, error: Mapping[str, Any], accepted: Sequence[str]) -> Outcome:
    """A write the guardrails refused: the error, with the one line (``resolve``) and each
    violation's ``suggestion`` naming the tool's own arguments (``compatible_with``, not the
    method's ``compatibleWith``) and the decisions' ids."""
    outcome = error_outcome(error)
    payload = outcome.payload
    data = payload.get("data")
    ids = blocking_ids(data)
    payload["resolve"] = resolution(tool, ids, accepted)
    if isinstance(data, dict):
        violations = [_own_words(v, tool, accepted) for v in data.get("violations") or []]
        payload["data"] = {**data, "violations": violations}
    return outcome


def _own_words(violation: Any, tool: str, accepted: Sequence[str]) -> Any:
    """A violation whose suggestion names the method's params, in the tool's arguments."""
    said = violation.get("suggestion") if isinstance(violation, Mapping) else None
    match = _SUPERSEDES.search(said) if isinstance(said, str) else None
    if match is None:
        return violation
    return {**violation, "suggestion": resolution(tool, _ID.findall(match.group(1)), accepted)}


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
        return {**result, "error": f"Decision not found: {clip(str(args.get('id')))}"}
    return dict(result)


def decision_not_found(error: Mapping[str, Any], args: Args) -> dict[str, Any]:
    said = clip(str(args.get("id")))
    return {"found": False, "id": said, "error": f"Decision not found: {said}"}


def review_not_found(error: Mapping[str, Any], args: Args) -> dict[str, Any]:
    said = clip(str(args.get("id")))
    return {
        "success": False,
        "id": said,
        "status": "not_found",
        "error": f"Decision not found: {said}",
    }


def as_is(result: Mapping[str, Any], args: Args) -> dict[str, Any]:
    return dict(result)
