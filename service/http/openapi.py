"""The OpenAPI document (served to a valid token only): the REST routes, and for ``POST /cstp``
one request shape per JSON-RPC method, built from its params model."""

from __future__ import annotations

from typing import Any, Literal

import orjson
from fastapi import FastAPI, Response
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from graph.export import EXPORT_FORMATS
from service.composition import Readiness
from service.rpc.protocol import MAX_BATCH, Registry

from .auth import Agent

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


Ready = Readiness  # ``GET /ready``: 200 when ``ready``, else 503 (declared once, with its use case)


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


def schema_ref(name: str) -> dict[str, str]:
    return {"$ref": SCHEMAS + name}


BEARER: list[dict[str, list[str]]] = [{"bearerAuth": []}]
UNAUTHORIZED: dict[int | str, dict[str, Any]] = {
    401: {
        "model": RpcErrorResponse,
        "description": "Missing or wrong token (with `WWW-Authenticate: Bearer`)",
        "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
    }
}
_RPC_ONE = {"anyOf": [schema_ref("RpcResultResponse"), schema_ref("RpcErrorResponse")]}
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
    {
        "name": "asOf",
        "in": "query",
        "required": False,
        "description": "The graph as it stood after this seq, or at this ISO-8601 time",
        "schema": {"type": "string"},
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
        "items": schema_ref("RpcRequest"),
    }
    return schemas


def install_openapi(api: FastAPI, registry: Registry) -> None:
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
    def openapi_json(agent: Agent) -> Response:
        return Response(orjson.dumps(api.openapi()), media_type=JSON)
