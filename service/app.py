"""The HTTP application: ``POST /cstp`` (JSON-RPC 2.0), health and the agent card.

Routes are thin: authenticate, read the body within the size limit, hand the decoded document
to the dispatcher, return what it answers. Errors never leave as a 500 or a traceback.

Only ``/health`` and ``/.well-known/agent.json`` answer without a token. FastAPI's ``/docs`` and
``/redoc`` are off; the OpenAPI document (every REST route, each JSON-RPC method's params) is
served at ``/openapi.json`` to a valid token only.
"""

from __future__ import annotations

import io
import logging
import time
import zipfile
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any, Literal

import orjson
from fastapi import FastAPI, Request, Response
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.concurrency import run_in_threadpool

from graph.export import EXPORT_FORMATS, export_graph

from .application import Decigraph
from .auth import TokenTable
from .metrics import Metrics
from .registry import build_registry
from .rpc import (
    INTERNAL_ERROR,
    MAX_BATCH,
    PARSE_ERROR,
    CallContext,
    Dispatcher,
    Registry,
    RpcError,
    parse_body,
)
from .ui_routes import add_ui_routes

logger = logging.getLogger(__name__)

JSON = "application/json"
EXPORT_TABLES = ("nodes", "edges")
SCHEMAS = "#/components/schemas/"


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    uptime_seconds: float
    timestamp: str
    events: int
    nodes: int
    edges: int


class CstpCapability(BaseModel):
    version: str
    methods: list[str]


class Capabilities(BaseModel):
    cstp: CstpCapability


class Authentication(BaseModel):
    schemes: list[str]


class AgentCard(BaseModel):
    name: str
    description: str
    version: str
    url: str
    capabilities: Capabilities
    authentication: Authentication


class RpcErrorObject(BaseModel):
    code: int
    message: str
    data: Any = None


class RpcErrorResponse(BaseModel):
    """A JSON-RPC error; also the body of every 401 and 413."""

    jsonrpc: Literal["2.0"]
    error: RpcErrorObject
    id: str | int | float | None


class RpcResultResponse(BaseModel):
    jsonrpc: Literal["2.0"]
    result: dict[str, Any]
    id: str | int | float | None


class ExportError(BaseModel):
    error: str


def _ref(name: str) -> dict[str, str]:
    return {"$ref": SCHEMAS + name}


BEARER: list[dict[str, list[str]]] = [{"bearerAuth": []}]
UNAUTHORIZED: dict[int | str, dict[str, Any]] = {
    401: {
        "model": RpcErrorResponse,
        "description": "Missing or wrong token (with `WWW-Authenticate: Bearer`)",
        "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
    }
}
_RPC_ONE = {"anyOf": [_ref("RpcResultResponse"), _ref("RpcErrorResponse")]}
CSTP_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The JSON-RPC response (an array for a batch); errors are in the body",
        "content": {JSON: {"schema": {"anyOf": [_RPC_ONE, {"type": "array", "items": _RPC_ONE}]}}},
    },
    204: {"description": "Every request was a notification"},
    **UNAUTHORIZED,
    413: {"model": RpcErrorResponse, "description": "Body above the size limit"},
}
EXPORT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The whole graph in the requested format",
        "content": {
            JSON: {"schema": {"type": "object"}},
            "application/xml": {"schema": {"type": "string"}},
            "text/plain": {"schema": {"type": "string"}},
            "text/csv": {"schema": {"type": "string"}},
            "application/zip": {"schema": {"type": "string", "format": "binary"}},
        },
    },
    400: {"model": ExportError, "description": "Unknown format, or a table without format=csv"},
    **UNAUTHORIZED,
}
EXPORT_PARAMETERS = [
    {
        "name": "format",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "enum": list(EXPORT_FORMATS), "default": "json"},
    },
    {
        "name": "table",
        "in": "query",
        "required": False,
        "description": "One CSV table instead of a zip of both (only with format=csv)",
        "schema": {"type": "string", "enum": list(EXPORT_TABLES)},
    },
]


def rpc_request_schemas(registry: Registry) -> dict[str, Any]:
    """Components for the ``POST /cstp`` body: one request shape per method, its params model."""
    methods = [registry.get(name) for name in registry.names()]
    models = sorted({m.params for m in methods if m is not None}, key=lambda m: m.__name__)
    refs, top = models_json_schema(
        [(model, "validation") for model in models],
        ref_template=SCHEMAS + "{model}",
        by_alias=True,
    )
    schemas: dict[str, Any] = dict(top.get("$defs", {}))
    variants = []
    for method in methods:
        if method is None:
            continue
        variants.append(
            {
                "type": "object",
                "title": method.name,
                "required": ["jsonrpc", "method"],
                "properties": {
                    "jsonrpc": {"type": "string", "enum": ["2.0"]},
                    "method": {"type": "string", "enum": [method.name]},
                    "params": refs[(method.params, "validation")],
                    "id": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
                },
                "additionalProperties": False,
            }
        )
    schemas["RpcRequest"] = {"anyOf": variants}
    schemas["RpcBatch"] = {
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_BATCH,
        "items": _ref("RpcRequest"),
    }
    return schemas


def _json(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(document), status_code=status, media_type=JSON, headers=headers)


def create_app(app: Decigraph, tokens: TokenTable) -> FastAPI:
    # No /docs, /redoc or public /openapi.json: only /health and the agent card are open.
    api = FastAPI(
        title="decigraph",
        version=version("decigraph"),
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    registry = build_registry(app)
    metrics = Metrics()
    dispatcher = Dispatcher(registry, metrics.observe)
    started = time.monotonic()
    limit = app.settings.max_body_bytes

    @api.get("/health", response_model=Health)
    def health() -> dict[str, Any]:
        store = app.store
        return {
            "status": "ok",
            "version": version("decigraph"),
            "uptime_seconds": round(time.monotonic() - started, 3),
            "timestamp": datetime.now(UTC).isoformat(),
            "events": store.seq,
            "nodes": store.graph.number_of_nodes(),
            "edges": store.graph.number_of_edges(),
        }

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
    def metrics_text(request: Request) -> Response:
        if tokens.agent_for(request.headers.get("authorization")) is None:
            return _unauthorized()
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    @api.get(
        "/graph/export",
        response_class=Response,
        responses=EXPORT_RESPONSES,
        openapi_extra={"security": BEARER, "parameters": EXPORT_PARAMETERS},
    )
    def export(request: Request) -> Response:
        if tokens.agent_for(request.headers.get("authorization")) is None:
            return _unauthorized()
        # Read by hand (documented in EXPORT_PARAMETERS) so a bad value gets our 400, not a 422.
        format = request.query_params.get("format", "json")
        table = request.query_params.get("table")
        if format not in EXPORT_FORMATS:
            return _json({"error": f"format must be one of {', '.join(EXPORT_FORMATS)}"}, 400)
        if table is not None and (format != "csv" or table not in EXPORT_TABLES):
            return _json({"error": "table must be nodes or edges, and only with format=csv"}, 400)
        with app.store.lock:
            files = export_graph(app.store.graph, format)
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
                "content": {JSON: {"schema": {"anyOf": [_ref("RpcRequest"), _ref("RpcBatch")]}}},
            },
        },
    )
    async def cstp(request: Request) -> Response:
        agent = tokens.agent_for(request.headers.get("authorization"))
        if agent is None:
            return _unauthorized()
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
        answer = await run_in_threadpool(dispatcher.handle, payload, CallContext(agent))
        if answer is None:
            return Response(status_code=204)
        try:
            return _json(answer)
        except orjson.JSONEncodeError:  # a bug (a value JSON cannot carry): log it, never show it
            logger.exception("response of %r cannot be encoded", _method_names(payload))
            error = {"code": INTERNAL_ERROR, "message": "internal error (logged on the server)"}
            return _json({"jsonrpc": "2.0", "error": error, "id": None})

    add_ui_routes(api, tokens)

    install_openapi(api, registry, tokens)
    return api


def install_openapi(api: FastAPI, registry: Registry, tokens: TokenTable) -> None:
    """``GET /openapi.json``, for a valid token only: the REST routes and the JSON-RPC body."""
    document: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not document:
            document.update(
                get_openapi(
                    title=api.title,
                    version=api.version,
                    description="CSTP JSON-RPC 2.0 at POST /cstp, plus the REST routes.",
                    routes=api.routes,
                )
            )
            components = document.setdefault("components", {})
            schemas = components.setdefault("schemas", {})
            schemas.update(rpc_request_schemas(registry))
            schemas["RpcResultResponse"] = RpcResultResponse.model_json_schema(
                ref_template=SCHEMAS + "{model}"
            )
            components["securitySchemes"] = {"bearerAuth": {"type": "http", "scheme": "bearer"}}
        return document

    api.openapi = openapi  # type: ignore[method-assign]

    @api.get("/openapi.json", include_in_schema=False)
    def openapi_json(request: Request) -> Response:
        if tokens.agent_for(request.headers.get("authorization")) is None:
            return _unauthorized()
        return _json(api.openapi())


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


__all__ = ["PARSE_ERROR", "create_app"]
