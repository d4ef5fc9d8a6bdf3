"""The HTTP application. For now only ``GET /health``; the JSON-RPC API comes with the service."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any

from fastapi import FastAPI

from graph.store import DecisionStore


def create_app(store: DecisionStore) -> FastAPI:
    app = FastAPI(title="decigraph", version=version("decigraph"))
    started = time.monotonic()

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "version": version("decigraph"),
            "uptime_seconds": round(time.monotonic() - started, 3),
            "timestamp": datetime.now(UTC).isoformat(),
            "events": store.seq,
            "nodes": store.graph.number_of_nodes(),
            "edges": store.graph.number_of_edges(),
        }

    return app
