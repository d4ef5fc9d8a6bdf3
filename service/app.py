"""The HTTP application: ``POST /cstp`` (JSON-RPC 2.0), health and the agent card.

Routes are thin: authenticate, read the body within the size limit, hand the decoded document
to the dispatcher, return what it answers. Errors never leave as a 500 or a traceback.
"""

from __future__ import annotations

import io
import time
import zipfile
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any

import orjson
from fastapi import FastAPI, Request, Response
from starlette.concurrency import run_in_threadpool

from graph.export import EXPORT_FORMATS, export_graph

from .application import Decigraph
from .auth import TokenTable
from .metrics import Metrics
from .registry import build_registry
from .rpc import PARSE_ERROR, CallContext, Dispatcher, RpcError, parse_body
from .ui_routes import add_ui_routes

JSON = "application/json"


def _json(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(document), status_code=status, media_type=JSON, headers=headers)


def create_app(app: Decigraph, tokens: TokenTable) -> FastAPI:
    api = FastAPI(title="decigraph", version=version("decigraph"))
    registry = build_registry(app)
    metrics = Metrics()
    dispatcher = Dispatcher(registry, metrics.observe)
    started = time.monotonic()
    limit = app.settings.max_body_bytes

    @api.get("/health")
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

    @api.get("/.well-known/agent.json")
    def agent_card(request: Request) -> dict[str, Any]:
        return {
            "name": "decigraph",
            "description": "Decision graph with dual (vector + graph) retrieval for agents",
            "version": version("decigraph"),
            "url": str(request.base_url).rstrip("/") + "/cstp",
            "capabilities": {"cstp": {"version": "1.0", "methods": registry.names()}},
            "authentication": {"schemes": ["bearer"] if tokens.enabled else []},
        }

    @api.get("/metrics")
    def metrics_text(request: Request) -> Response:
        if tokens.agent_for(request.headers.get("authorization")) is None:
            return _unauthorized()
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    @api.get("/graph/export")
    def export(request: Request, format: str = "json", table: str | None = None) -> Response:
        if tokens.agent_for(request.headers.get("authorization")) is None:
            return _unauthorized()
        if format not in EXPORT_FORMATS:
            return _json({"error": f"format must be one of {', '.join(EXPORT_FORMATS)}"}, 400)
        if table is not None and (format != "csv" or table not in ("nodes", "edges")):
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

    @api.post("/cstp")
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
        return _json(answer)

    add_ui_routes(api, tokens)
    return api


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
