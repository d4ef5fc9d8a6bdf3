"""JSON-RPC 2.0: envelopes, batches, the method registry and dispatch.

Handlers are plain functions ``(params_model, context) -> dict``. Params are validated by a
pydantic model before a handler runs, so a handler only ever sees well-formed input; every
domain error is translated by :mod:`.errors`, once, into a JSON-RPC error whose message names
the field. Nothing a client sends can produce a traceback in the response.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
import pydantic

from graph.errors import DecigraphError
from graph.tracing import span

from .errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
    domain_error,
    invalid_params,
)
from .lenient import relax

logger = logging.getLogger(__name__)

MAX_BATCH = 100
#: Params nest at most this deep. Validation (and the repr in its messages) recurses, so a
#: 1,000-level value would otherwise end in a RecursionError instead of an answer.
MAX_DEPTH = 64


#: The HTTP header naming the caller's session (``decigraph mcp`` proxying to a server): the
#: deliberation tracker keeps each session's reads apart. Not an identity: the token is.
SESSION_HEADER = "X-Decigraph-Session"
_SESSION_KEY = re.compile(r"^[A-Za-z0-9:._-]{1,64}$")


def session_key(value: str | None) -> str | None:
    """A client's session key as given (``None`` when absent or not a short plain key)."""
    return value if value is not None and _SESSION_KEY.match(value) else None


@dataclass(frozen=True)
class CallContext:
    """Who is calling (the agent id the bearer token maps to) and, for a client that keeps
    one, its session (an MCP session, a ``decigraph mcp`` process): the deliberation tracker
    keeps each session's reads apart (``None``: CSTP's one ``rpc:<agent>`` session)."""

    agent: str
    session: str | None = None


Handler = Callable[[Any, CallContext], Mapping[str, Any]]
#: Called after a method answered: ``(method name, params, result, context)``. CSTP's
#: deliberation tracker listens this way to the reads an agent makes before deciding.
CallObserver = Callable[[str, Any, Mapping[str, Any], CallContext], None]


@dataclass(frozen=True)
class Method:
    name: str
    params: type[pydantic.BaseModel]
    handler: Handler
    writes: bool = False
    #: Where the answer reports ignored or clamped params: ``warnings``, unless the method's
    #: own answer already means something else by that key (checkGuardrails' guardrail warnings).
    warnings_key: str = "warnings"


class Consistency(Protocol):
    """Read-your-writes across replicas: a read waits for ``minSeq``; a write reports the seq
    of the event it committed (:mod:`service.usecases.replication`)."""

    def await_seq(self, min_seq: int) -> None: ...
    def start_write(self) -> None: ...
    def written_seq(self) -> int: ...


class Registry:
    """The methods a server answers, by wire name (``cstp.<name>``)."""

    def __init__(self) -> None:
        self._methods: dict[str, Method] = {}
        self.observers: list[CallObserver] = []
        self.consistency: Consistency | None = None

    def add(
        self,
        name: str,
        params: type[pydantic.BaseModel],
        handler: Handler,
        *,
        writes: bool = False,
        warnings_key: str = "warnings",
    ) -> None:
        if name in self._methods:
            raise ValueError(f"method {name} registered twice")
        self._methods[name] = Method(name, params, handler, writes, warnings_key)

    def names(self) -> list[str]:
        return sorted(self._methods)

    def get(self, name: str) -> Method | None:
        return self._methods.get(name)


def too_deep(params: Mapping[str, Any]) -> str | None:
    """The first param whose value nests deeper than :data:`MAX_DEPTH` (walked without
    recursion), or ``None``."""
    for key, value in params.items():
        stack: list[tuple[Any, int]] = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            if depth > MAX_DEPTH:
                return str(key)
            if isinstance(item, dict):
                stack.extend((child, depth + 1) for child in item.values())
            elif isinstance(item, list):
                stack.extend((child, depth + 1) for child in item)
    return None


def parse_body(body: bytes) -> Any:
    """Decode a request body; NaN and Infinity (not JSON) are parse errors.

    Request ids come back exactly as sent: orjson reads an integer beyond 64 bits as a float,
    so when an id came out as a float the ids (and only they) are read again with the standard
    parser, which keeps every integer exact (``123456789012345678901234567890`` stays an int).
    """
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise RpcError(PARSE_ERROR, f"parse error: {exc}") from None
    requests = payload if isinstance(payload, list) else [payload]
    if any(isinstance(r, dict) and isinstance(r.get("id"), float) for r in requests):
        try:  # orjson accepted it, so it is JSON (no NaN, no bad UTF-8)
            exact = json.loads(body)
        except RecursionError:  # nested deeper than this parser goes: keep orjson's reading
            return payload
        exact_requests = exact if isinstance(exact, list) else [exact]
        for request, again in zip(requests, exact_requests, strict=True):
            if isinstance(request, dict) and isinstance(request.get("id"), float):
                request["id"] = again["id"]
    return payload


def encode_response(document: Any) -> bytes:
    """A response document as JSON bytes, its ids exactly as the requests gave them.

    orjson writes integers of at most 64 bits; a larger request id is spliced in as its digits.
    """
    answers = document if isinstance(document, list) else [document]
    big = {n: answer["id"] for n, answer in enumerate(answers) if _beyond_64_bits(answer)}
    if not big:
        return orjson.dumps(document)
    marker = f"decigraph-id-{uuid.uuid4().hex}"
    swapped = [
        {**answer, "id": f"{marker}-{n}"} if n in big else answer
        for n, answer in enumerate(answers)
    ]
    encoded = orjson.dumps(swapped if isinstance(document, list) else swapped[0])
    for n, value in big.items():
        encoded = encoded.replace(f'"{marker}-{n}"'.encode(), str(value).encode(), 1)
    return encoded


def _beyond_64_bits(answer: Any) -> bool:
    value = answer.get("id") if isinstance(answer, dict) else None
    return isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64


def validate_params(model: type[pydantic.BaseModel], raw: Mapping[str, Any]) -> pydantic.BaseModel:
    """``raw`` validated as the JSON it came as, strictly: a boolean, a string or a fraction is
    never taken for a number, nor a number or a string for a boolean (``confidence: true``,
    ``autoRecord: "yes"``, ``limit: "5"`` are refused, naming the field); an integer is a
    number where a float is wanted; strings name enum members and dates as usual."""
    try:  # in-process callers (notebooks) may pass numpy numbers: they are JSON numbers too
        text = orjson.dumps(raw, option=orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:  # e.g. an integer past 64 bits: the standard encoder writes any int
        try:
            text = json.dumps(raw, allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            message = f"params: not JSON: {exc}"
            raise RpcError(INVALID_PARAMS, message, {"field": "params"}) from None
    return model.model_validate_json(text, strict=True)


Observer = Callable[[str, float, str], None]


class Dispatcher:
    def __init__(self, registry: Registry, observer: Observer | None = None) -> None:
        self.registry = registry
        self.observer = observer

    def handle(self, payload: Any, context: CallContext) -> Any:
        """The response document for a decoded request (``None`` when all were notifications)."""
        if isinstance(payload, list):
            if not payload:
                return _error_response(None, RpcError(INVALID_REQUEST, "empty batch"))
            if len(payload) > MAX_BATCH:
                message = f"batch of {len(payload)} requests exceeds the limit of {MAX_BATCH}"
                return _error_response(None, RpcError(INVALID_REQUEST, message))
            answers = [self._one(item, context) for item in payload]
            kept = [a for a in answers if a is not None]
            return kept or None
        return self._one(payload, context)

    def _one(self, request: Any, context: CallContext) -> dict[str, Any] | None:
        if not isinstance(request, dict):
            return _error_response(None, RpcError(INVALID_REQUEST, "request must be an object"))
        request_id = request.get("id")
        notification = "id" not in request
        # JSON-RPC 2.0: a string, a number (fractions allowed, if discouraged) or null.
        if not (request_id is None or isinstance(request_id, str | int | float)) or isinstance(
            request_id, bool
        ):
            message = "id must be a string, a number or null"
            return _error_response(None, RpcError(INVALID_REQUEST, message))
        started = time.perf_counter()
        outcome = "ok"
        name = request.get("method")
        label = name if isinstance(name, str) and self.registry.get(name) else "unknown"
        traced = {"rpc.system": "jsonrpc", "rpc.method": label}
        with span(
            "rpc.unknown" if label == "unknown" else label, **traced, agent=context.agent
        ) as call:
            try:
                result = self._call(request, context)
            except RpcError as exc:
                outcome = str(exc.code)
                return None if notification else _error_response(request_id, exc)
            except Exception:  # a bug: log it, never show it
                outcome = str(INTERNAL_ERROR)
                logger.exception("method %r failed", request.get("method"))
                call.fail("internal error")
                error = RpcError(INTERNAL_ERROR, "internal error (logged on the server)")
                return None if notification else _error_response(request_id, error)
            finally:
                if outcome != "ok":
                    call.set_attribute("rpc.jsonrpc.error_code", int(outcome))
                if self.observer is not None:
                    self.observer(label, time.perf_counter() - started, outcome)
        if notification:
            return None
        return {"jsonrpc": "2.0", "result": result, "id": request_id}

    def _call(self, request: dict[str, Any], context: CallContext) -> Mapping[str, Any]:
        if request.get("jsonrpc") != "2.0":
            raise RpcError(INVALID_REQUEST, 'jsonrpc must be "2.0"')
        name = request.get("method")
        if not isinstance(name, str):
            raise RpcError(INVALID_REQUEST, "method must be a string")
        method = self.registry.get(name)
        if method is None:
            data = {"method": name, "available": self.registry.names()}
            raise RpcError(METHOD_NOT_FOUND, f"unknown method {name!r}", data)
        raw = request.get("params", {})
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise RpcError(INVALID_PARAMS, "params must be an object", {"field": "params"})
        deep = too_deep(raw)
        if deep is not None:
            message = f"{deep}: nested deeper than {MAX_DEPTH} levels"
            raise RpcError(INVALID_PARAMS, message, {"field": deep})
        raw, min_seq = _min_seq(raw)
        raw, warnings = relax(method.params, raw, writes=method.writes)
        try:
            params = validate_params(method.params, raw)
        except pydantic.ValidationError as exc:
            raise invalid_params(exc) from None
        consistency = self.registry.consistency
        try:
            if consistency is not None and min_seq is not None:
                consistency.await_seq(min_seq)
            if consistency is not None and method.writes:
                consistency.start_write()
            result = method.handler(params, context)
            if consistency is not None and method.writes and "seq" not in result:
                result = {**result, "seq": consistency.written_seq()}
            self._observe(name, params, result, context)
            if not warnings:
                return result
            said = result.get(method.warnings_key)
            earlier = list(said) if isinstance(said, list) else []
            return {**result, method.warnings_key: [*earlier, *warnings]}
        except DecigraphError as exc:
            raise domain_error(exc, method.params) from None
        except pydantic.ValidationError as exc:  # an input derived from valid params refused
            raise invalid_params(exc) from None

    def _observe(
        self, name: str, params: Any, result: Mapping[str, Any], context: CallContext
    ) -> None:
        for observer in self.registry.observers:
            try:
                observer(name, params, result, context)
            except Exception:  # an observer never turns an answer into an error
                logger.exception("observer failed after %s", name)


def _min_seq(raw: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """``minSeq`` (any method: answer only once this replica has applied that event) taken
    out of the params, checked like any integer param."""
    key = "minSeq" if "minSeq" in raw else "min_seq" if "min_seq" in raw else None
    if key is None:
        return raw, None
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        message = f"{key}: must be a non-negative integer (a seq a write answered)"
        raise RpcError(INVALID_PARAMS, message, {"field": key})
    return {k: v for k, v in raw.items() if k != key}, value


def _error_response(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": error.to_dict(), "id": request_id}
