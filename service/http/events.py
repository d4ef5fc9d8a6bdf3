"""``GET /events``: the change feed as server-sent events (``text/event-stream``).

Behind the same bearer token as ``POST /cstp``. Query parameters: ``after`` (a seq: send the
events after it; default 0, the whole log), ``op`` (repeatable or comma-separated operation
names), ``node`` (a node id: the events that name it), ``project``. A reconnecting client's
``Last-Event-ID`` header wins over ``after`` (an ``EventSource`` reconnects to the URL it was
given, whose ``after`` is where it first started).

Each event of the log is one SSE message::

    id: 42
    event: record
    data: {"actor":"agent-a","hash":"...","id":"...","op":"record","payload":{...},...}

``id`` is the seq, ``event`` the operation (``record``, ``update``, ``link``...: an
``EventSource`` listens to the ones it wants with ``addEventListener``), ``data`` the event as
the log holds it (its canonical JSON line: ``seq, id, ts, actor, op, payload, prev, hash``, so a
client can check the hash chain). A stream starts with the comment ``: decigraph events after
N (head M)``, sends ``: keep-alive`` after ``DECIGRAPH_FEED_HEARTBEAT`` seconds (default 15)
without events, and ends with

- ``event: reset`` (``data: {"head": N}``): this replica rebuilt its state from a shared log
  that diverged; the seqs already received may name other events now. Re-read what you need
  (``cstp.listEvents``) and reconnect;
- ``event: error`` (``data: {"error": ...}``): the log could not be read;
- nothing, when the server stops (reconnect with ``Last-Event-ID`` to a running server).

Guarantees: events in seq order, none skipped, each once within a stream; across reconnects
with ``Last-Event-ID`` (or ``after``) = the last id received, exactly the events after it (at
least once overall: a client that crashed before processing what it received gets it again,
and the seq lets it drop duplicates). A slow client is served from the log at its own pace;
nothing is dropped. ``after`` (or ``Last-Event-ID``) beyond the store's head, or a malformed
parameter, is answered 400 ``{"error": ..., "field": ...}`` before any stream starts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pydantic
from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from graph.errors import FieldError
from service.usecases.context import Decigraph
from service.usecases.feed import (
    Batch,
    EventFilter,
    Failed,
    FeedItem,
    Heartbeat,
    Reset,
    event_filter,
    event_json,
    follow,
    start_seq,
)

from .auth import Agent
from .openapi import BEARER, JSON, UNAUTHORIZED

STREAM = "text/event-stream"
#: Domain field -> the query parameter that gave it.
QUERY_NAMES = {"ops": "op", "node_id": "node", "project": "project"}
PARAMETERS = [
    {
        "name": "after",
        "in": "query",
        "required": False,
        "description": "Send the events after this seq (default 0: the whole log)",
        "schema": {"type": "integer", "minimum": 0},
    },
    {
        "name": "op",
        "in": "query",
        "required": False,
        "description": "Only these operations (repeat it, or separate them with commas)",
        "schema": {"type": "array", "items": {"type": "string"}},
        "style": "form",
        "explode": True,
    },
    {
        "name": "node",
        "in": "query",
        "required": False,
        "description": "Only the events that name this node",
        "schema": {"type": "string"},
    },
    {
        "name": "project",
        "in": "query",
        "required": False,
        "description": "Only the events naming a node of this project",
        "schema": {"type": "string"},
    },
    {
        "name": "Last-Event-ID",
        "in": "header",
        "required": False,
        "description": "The last seq received (a reconnection): wins over after",
        "schema": {"type": "string"},
    },
]
RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events, one per event of the log, until the client leaves",
        "content": {STREAM: {"schema": {"type": "string"}}},
    },
    400: {
        "description": "A malformed parameter, or a seq beyond the store's head",
        "content": {JSON: {"schema": {"type": "object"}}},
    },
    **UNAUTHORIZED,
}


def _bad(message: str, field: str) -> Response:
    body = orjson.dumps({"error": message, "field": field})
    return Response(body, status_code=400, media_type=JSON)


def _ops(values: list[str]) -> list[str]:
    return [op.strip() for value in values for op in value.split(",") if op.strip()]


def frame(item: FeedItem) -> bytes:
    """One item of the feed as SSE bytes."""
    if isinstance(item, Batch):
        return b"".join(
            b"id: %d\nevent: %s\ndata: %s\n\n" % (e.seq, e.op.value.encode(), event_json(e))
            for e in item.events
        )
    if isinstance(item, Heartbeat):
        return b": keep-alive\n\n"
    if isinstance(item, Reset):
        return b"event: reset\ndata: " + orjson.dumps({"head": item.head}) + b"\n\n"
    return b"event: error\ndata: " + orjson.dumps({"error": item.message}) + b"\n\n"


async def _stream(app: Decigraph, after: int, flt: EventFilter) -> AsyncIterator[bytes]:
    yield b": decigraph events after %d (head %d)\n\n" % (after, app.store.seq)
    async for item in follow(app, after, flt, app.settings.feed_heartbeat):
        yield frame(item)
        if isinstance(item, Reset | Failed):
            return


def events_router(app: Decigraph) -> APIRouter:
    """The ``GET /events`` route over ``app``'s log."""
    router = APIRouter()

    @router.get(
        "/events",
        response_class=Response,
        responses=RESPONSES,
        openapi_extra={"security": BEARER, "parameters": PARAMETERS},
    )
    async def events(request: Request, agent: Agent) -> Response:
        # Read by hand (documented in PARAMETERS) so a bad value gets our 400, not a 422.
        query = request.query_params
        try:
            after = start_seq(app, query.get("after"), request.headers.get("last-event-id"))
            flt = event_filter(_ops(query.getlist("op")), query.get("node"), query.get("project"))
        except FieldError as exc:
            return _bad(str(exc), exc.field)
        except pydantic.ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            name = str(first["loc"][0]) if first.get("loc") else "query"
            field = QUERY_NAMES.get(name, name)
            return _bad(f"{field}: {first.get('msg', 'is invalid')}", field)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(_stream(app, after, flt), media_type=STREAM, headers=headers)

    return router


def end_streams_on_exit(server: Any, app: Decigraph) -> None:
    """Make the signal that stops ``server`` (a ``uvicorn.Server``) end the ``/events``
    streams too: uvicorn waits for every response under way before it stops, and a stream
    never ends by itself (closing the hub wakes each stream, which then ends)."""
    original = server.handle_exit

    def handle_exit(sig: int, frame: Any) -> None:
        app.feed.close()
        original(sig, frame)

    server.handle_exit = handle_exit
