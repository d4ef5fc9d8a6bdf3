"""The one mapping from domain errors (domain words) to JSON-RPC errors (wire names).

A domain error names a field in the domain's words (``source``, ``changes.text``); the wire
name comes from the method's params model, whose aliases say how the client spelled it
(``sourceId``, ``updates.decision``). Fields a model does not declare are camelCased.
"""

from __future__ import annotations

import errno
import logging
import re
import typing
from typing import Any

import pydantic
from pydantic.alias_generators import to_camel

from graph.errors import (
    BackendUnavailableError,
    CommitOutcomeUnknownError,
    CycleError,
    DecigraphError,
    EdgeNotFoundError,
    EventStoreError,
    FieldError,
    NodeNotFoundError,
    NotCaughtUpError,
    ReadOnlyStoreError,
    StorageError,
    StoreLockedError,
    VersionConflictError,
)
from service.usecases.rules import GuardrailBlockedError

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
AUTH_REQUIRED = -32001
QUERY_FAILED = -32003
RECORD_FAILED = -32004
NOT_FOUND = -32005
CONFLICT = -32009
STORAGE_FAILED = -32010
#: The shared event log: unreachable or busy (nothing written), a commit whose outcome is
#: unknown (look the event up by id), a replica not yet at the ``minSeq`` asked for.
UNAVAILABLE = -32011
OUTCOME_UNKNOWN = -32012
NOT_CAUGHT_UP = -32013


#: No error quotes more than this many characters of any value a client sent.
ECHO_LIMIT = 200
#: A value quoted in a message (``'...'`` or ``"..."``), or a run without spaces, longer than
#: :data:`ECHO_LIMIT`: what an echoed input looks like inside an error text.
_LONG = ECHO_LIMIT + 1
_LONG_ECHO = re.compile(rf"'([^'\n]{{{_LONG},}})'|\"([^\"\n]{{{_LONG},}})\"|(\S{{{_LONG},}})")
#: Longest error text at all (several violations joined stay well below it).
MAX_ERROR_TEXT = 2_000


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def clip_echoes(text: str, limit: int = MAX_ERROR_TEXT) -> str:
    """An error text with every long quoted value and every long unbroken run cut to
    :data:`ECHO_LIMIT` characters (a 20,000-character statement is not sent back), and the
    whole at most ``limit`` characters."""
    if len(text) <= ECHO_LIMIT:
        return text

    def cut(match: re.Match[str]) -> str:
        single, double, run = match.groups()
        if run is not None:
            return clip(run)
        mark = "'" if single is not None else '"'
        return f"{mark}{clip(single if single is not None else double)}{mark}"

    return clip(_LONG_ECHO.sub(cut, text), limit)


def clip_data(value: Any) -> Any:
    """Error data with each string clipped as :func:`clip_echoes` clips a message."""
    if isinstance(value, str):
        return clip_echoes(value, ECHO_LIMIT * 5)
    if isinstance(value, dict):
        return {clip(str(k)) if isinstance(k, str) else k: clip_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clip_data(item) for item in value]
    return value


class RpcError(Exception):
    """A JSON-RPC error object on its way to the client. Whatever the client sent and the
    message or data quote is cut to :data:`ECHO_LIMIT` characters on the way out
    (:func:`clip_echoes`), whichever transport carries it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": clip_echoes(self.message)}
        if self.data is not None:
            error["data"] = clip_data(self.data)
        return error


def _model_of(annotation: Any) -> type[pydantic.BaseModel] | None:
    """The pydantic model inside ``annotation`` (``X | None``, ``list[X]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def wire_field(model: type[pydantic.BaseModel] | None, field: str) -> str:
    """The wire spelling of the dotted domain path ``field`` in ``model``'s params."""
    out: list[str] = []
    for part in field.split("."):
        info = model.model_fields.get(part) if model is not None else None
        if info is None:
            out.append(part if part.isdigit() else to_camel(part))
            model = None
            continue
        alias = info.validation_alias if isinstance(info.validation_alias, str) else None
        out.append(alias or info.alias or to_camel(part))
        model = _model_of(info.annotation)
    return ".".join(out)


def domain_error(exc: DecigraphError, params: type[pydantic.BaseModel] | None = None) -> RpcError:
    """The JSON-RPC form of a domain error, its field named as the client spelled it."""
    if isinstance(exc, GuardrailBlockedError):
        refused: dict[str, Any] = {"violations": [v.to_dict() for v in exc.verdict.violations]}
        if exc.verdict.conflicts:  # the judge's pairs, so the agent can resolve each by id
            refused["conflicts"] = [c.to_view() for c in exc.verdict.conflicts]
        return RpcError(RECORD_FAILED, str(exc), refused)
    if isinstance(exc, BackendUnavailableError):  # e.g. the Chroma server is down or restarting
        logger.warning("backend unavailable: %s", exc)
        message = f"vector index unavailable, retry later: {exc}"
        return RpcError(QUERY_FAILED, message, {"retryable": True})
    if isinstance(exc, CommitOutcomeUnknownError):
        logger.warning("commit outcome unknown: %s", exc)
        data: dict[str, Any] = {"retryable": True, "eventId": exc.event_id, "seq": exc.seq}
        if exc.node_id is not None:
            data["id"] = exc.node_id
        return RpcError(OUTCOME_UNKNOWN, str(exc), data)
    if isinstance(exc, EventStoreError):  # unreachable or busy: nothing was written
        logger.warning("event store: %s", exc)
        return RpcError(UNAVAILABLE, str(exc), {"retryable": True})
    if isinstance(exc, NotCaughtUpError):
        data = {"retryable": True, "minSeq": exc.wanted, "appliedSeq": exc.applied}
        return RpcError(NOT_CAUGHT_UP, str(exc), data)
    if isinstance(exc, StoreLockedError | ReadOnlyStoreError):
        return RpcError(RECORD_FAILED, str(exc))
    if isinstance(exc, StorageError):  # e.g. a full disk: the server's problem, not the params
        cause = errno.errorcode.get(exc.errno or 0, "EIO")
        message = f"storage error, nothing was written: {exc.strerror}"
        return RpcError(STORAGE_FAILED, message, {"retryable": True, "errno": cause})
    if not isinstance(exc, FieldError):
        return RpcError(INVALID_PARAMS, str(exc))
    field = wire_field(params, exc.field)
    message = f"{field}: {exc.detail}"
    if isinstance(exc, NodeNotFoundError):
        return RpcError(NOT_FOUND, message, {"id": exc.node_id, "field": field})
    if isinstance(exc, VersionConflictError):
        return RpcError(CONFLICT, message, {"id": exc.node_id, "currentVersion": exc.current})
    if isinstance(exc, EdgeNotFoundError):
        return RpcError(NOT_FOUND, message, {"sourceId": exc.source, "targetId": exc.target})
    if isinstance(exc, CycleError):
        return RpcError(INVALID_PARAMS, message, {"field": field, "cycle": exc.path})
    return RpcError(INVALID_PARAMS, message, {"field": field})


#: What pydantic adds to an error's location for the member of a union that failed
#: (``pr.int``, ``context.function-after[...]``): not part of the field's name.
_UNION_MEMBER = re.compile(r"^(int|str|float|bool|none|function-\w+|constrained-\w+|.*\[.*\])$")


def invalid_params(exc: pydantic.ValidationError) -> RpcError:
    """The first pydantic error, its field as the client spelled it (locs are aliases)."""
    first = exc.errors(include_url=False)[0]
    loc = [part for part in first.get("loc", ()) if not _UNION_MEMBER.match(str(part))]
    field = ".".join(str(part) for part in loc) or "params"
    message = str(first.get("msg", "is invalid"))
    if first.get("type") == "missing":
        message = "is required"
    elif first.get("type") == "extra_forbidden":
        message = "is not a known parameter"
    return RpcError(INVALID_PARAMS, f"{field}: {message}", {"field": field})
