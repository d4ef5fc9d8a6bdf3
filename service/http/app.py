"""The HTTP application: ``POST /cstp`` (JSON-RPC 2.0), health, the agent card, metrics, the
graph export and the explorer.

Routes are thin: the :data:`~.auth.Agent` dependency authenticates (one check for every
protected route), the body is read within the size limit, the decoded document goes to the
dispatcher. Errors never leave as a 500 or a traceback.

Only ``/health`` (liveness), ``/ready`` (readiness) and ``/.well-known/agent.json`` answer
without a token. FastAPI's ``/docs`` and ``/redoc`` are off; the OpenAPI document is served at
``/openapi.json`` to a valid token only.
"""

from __future__ import annotations

import io
import logging
import time
import zipfile
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any

import orjson
from fastapi import FastAPI, Request, Response
from starlette.concurrency import run_in_threadpool

from graph.errors import DecigraphError
from graph.export import EXPORT_FORMATS
from service.composition import Warmup, readiness
from service.mcp.http import mount_mcp
from service.methods import build_registry
from service.rpc.errors import INTERNAL_ERROR, RpcError
from service.rpc.protocol import (
    SESSION_HEADER,
    CallContext,
    Dispatcher,
    encode_response,
    parse_body,
    session_key,
)
from service.telemetry import instrument_http
from service.usecases import Decigraph
from service.usecases.history import NOW, parse_point, resolve
from service.usecases.reads import export_document, store_status

from .auth import Agent, NotAuthenticated, TokenTable
from .events import events_router
from .metrics import Metrics
from .openapi import (
    BEARER,
    CSTP_RESPONSES,
    EXPORT_PARAMETERS,
    EXPORT_RESPONSES,
    EXPORT_TABLES,
    JSON,
    UNAUTHORIZED,
    AgentCard,
    Health,
    Ready,
    install_openapi,
    schema_ref,
)
from .ui import add_ui_routes

logger = logging.getLogger(__name__)
RPC_REQUEST, RPC_BATCH = schema_ref("RpcRequest"), schema_ref("RpcBatch")


def _json(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(document), status_code=status, media_type=JSON, headers=headers)


def create_app(app: Decigraph, tokens: TokenTable, warmup: Warmup | None = None) -> FastAPI:
    """The HTTP app serving ``app``; ``warmup`` is the model's warm-up the server started (``None``:
    nothing to warm, ``/ready`` then only waits for the indexes)."""
    # No /docs, /redoc or public /openapi.json: only /health, /ready and the card are open.
    api = FastAPI(
        title="decigraph",
        version=version("decigraph"),
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        routes=events_router(app).routes,  # GET /events: the change feed (SSE)
    )
    api.state.tokens = tokens
    registry = build_registry(app)

    @api.exception_handler(NotAuthenticated)
    def refuse(request: Request, exc: NotAuthenticated) -> Response:
        return _unauthorized()

    metrics = Metrics()
    dispatcher = Dispatcher(registry, metrics.observe)
    started = time.monotonic()
    limit = app.settings.max_body_bytes

    @api.get("/health", response_model=Health)
    def health() -> dict[str, Any]:
        status = store_status(app)
        return {
            "status": "ok",
            "version": version("decigraph"),
            "uptime_seconds": round(time.monotonic() - started, 3),
            "timestamp": datetime.now(UTC).isoformat(),
            "events": status.events,
            "nodes": status.nodes,
            "edges": status.edges,
        }

    @api.get(
        "/ready",
        response_model=Ready,
        responses={503: {"model": Ready, "description": "Not ready yet (or no longer)"}},
    )
    def ready() -> Response:
        """200 once the model is warm and the indexes hold every node of the log's graph, else
        503; the body says which (liveness is ``/health``)."""
        now = readiness(app, warmup)
        body = now.model_dump(exclude_none=True)
        return _json(body, 200 if now.ready else 503)

    @api.get("/.well-known/agent.json", response_model=AgentCard)
    def agent_card(request: Request) -> dict[str, Any]:
        return {
            "name": "decigraph",
            "description": "Decision graph with dual (vector + graph) retrieval for agents",
            "version": version("decigraph"),
            "url": str(request.base_url).rstrip("/") + "/cstp",
            "capabilities": {"cstp": {"version": "1.0", "methods": registry.names()}},
            "authentication": {"schemes": ["bearer"] if tokens.enabled else []},
        }

    @api.get(
        "/metrics",
        response_class=Response,
        responses={
            200: {
                "description": "Prometheus text",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            },
            **UNAUTHORIZED,
        },
        openapi_extra={"security": BEARER},
    )
    def metrics_text(agent: Agent) -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    @api.get(
        "/graph/export",
        response_class=Response,
        responses=EXPORT_RESPONSES,
        openapi_extra={"security": BEARER, "parameters": EXPORT_PARAMETERS},
    )
    def export(request: Request, agent: Agent) -> Response:
        # Read by hand (documented in EXPORT_PARAMETERS) so a bad value gets our 400, not a 422.
        format = request.query_params.get("format", "json")
        table = request.query_params.get("table")
        if format not in EXPORT_FORMATS:
            return _json({"error": f"format must be one of {', '.join(EXPORT_FORMATS)}"}, 400)
        if table is not None and (format != "csv" or table not in EXPORT_TABLES):
            return _json({"error": "table must be nodes or edges, and only with format=csv"}, 400)
        raw = request.query_params.get("asOf")
        try:
            at, point = (NOW, None) if raw is None else resolve(app, parse_point(raw), None)
        except DecigraphError as exc:
            return _json({"error": f"asOf: {exc}"}, 400)
        files = export_document(app, format, at, None if point is None else point.wire())
        if format == "csv" and table is None:
            # Two tables, one download: a zip of nodes.csv and edges.csv (what import reads).
            return Response(
                zip_files(files),
                media_type="application/zip",
                headers={"Content-Disposition": 'attachment; filename="decigraph-csv.zip"'},
            )
        name = f"{table}.csv" if table else next(iter(files))
        media = {"graphml": "application/xml", "cypher": "text/plain", "csv": "text/csv"}
        headers = {"Content-Disposition": f'attachment; filename="{name}"'}
        return Response(files[name], media_type=media.get(format, JSON), headers=headers)

    @api.post(
        "/cstp",
        response_class=Response,
        responses=CSTP_RESPONSES,
        openapi_extra={
            "security": BEARER,
            "requestBody": {
                "required": True,
                "content": {
                    JSON: {"schema": {"anyOf": [schema_ref("RpcRequest"), schema_ref("RpcBatch")]}}
                },
            },
        },
    )
    async def cstp(request: Request, agent: Agent) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return _too_large(limit)
        raw = bytearray()
        async for chunk in request.stream():
            raw.extend(chunk)
            if len(raw) > limit:
                return _too_large(limit)
        try:
            payload = parse_body(bytes(raw))
        except RpcError as exc:
            return _json({"jsonrpc": "2.0", "error": exc.to_dict(), "id": None})
        # Handlers embed text and write to disk: keep them off the event loop.
        answer = await run_in_threadpool(dispatcher.handle, payload, _caller(agent, request))
        if answer is None:
            return Response(status_code=204)
        try:
            return Response(encode_response(answer), media_type=JSON)
        except orjson.JSONEncodeError:  # a bug (a value JSON cannot carry): log it, never show it
            logger.exception("response of %r cannot be encoded", _method_names(payload))
            error = {"code": INTERNAL_ERROR, "message": "internal error (logged on the server)"}
            return _json({"jsonrpc": "2.0", "error": error, "id": None})

    add_ui_routes(api, tokens)
    # MCP (streamable HTTP) at /mcp: the same tokens and the same dispatcher as /cstp.
    mount_mcp(api, dispatcher, tokens, limit)

    install_openapi(api, registry)
    instrument_http(api)  # a request span per HTTP request, when tracing is on
    return api


def _caller(agent: str, request: Request) -> CallContext:
    """The token's agent, in the session the client names (a deliberation-tracker scope of that
    agent's own, never an identity)."""
    return CallContext(agent, session_key(request.headers.get(SESSION_HEADER)))


def _method_names(payload: Any) -> list[Any]:
    items = payload if isinstance(payload, list) else [payload]
    return [item.get("method") if isinstance(item, dict) else None for item in items]


def zip_files(files: dict[str, str]) -> bytes:
    """``{name: text}`` as a deterministic zip archive (fixed timestamps, sorted names)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[name].encode("utf-8"))
    return buffer.getvalue()


def _unauthorized() -> Response:
    error = {"code": -32001, "message": "authentication required: send a valid Bearer token"}
    body = {"jsonrpc": "2.0", "error": error, "id": None}
    return _json(body, 401, {"WWW-Authenticate": "Bearer"})


def _too_large(limit: int) -> Response:
    error = {"code": -32600, "message": f"request body exceeds the limit of {limit} bytes"}
    return _json({"jsonrpc": "2.0", "error": error, "id": None}, 413)


__all__ = ["create_app"]
