"""MCP over stdio (``decigraph mcp``): the tools call a JSON-RPC client of the store, either
in-process (the store opened here, calls made as the ``--agent``; read-only beside another
process that holds the directory) or a running server over HTTP (its bearer token decides the
agent). The client carries the process's one MCP session key (the tracker keeps its reads apart
from any other session's).

stdout carries the protocol and nothing else: while the server runs, Python's ``sys.stdout``
points at stderr, so a stray print from a library cannot corrupt a message.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from io import TextIOWrapper
from typing import Any

import anyio
import httpx

from service.client import AnalystError, Transport
from service.rpc.protocol import CallContext

from .server import Invoke, build_server

#: The code of a write refused by a read-only store (as of any refused record).
RECORD_FAILED = -32004


def transport_invoke(transport: Transport, read_only_note: str | None = None) -> Invoke:
    """Calls through a JSON-RPC client (:mod:`service.client`) as JSON-RPC responses; the client
    carries the identity (its agent in-process, its token over HTTP) and the session. A
    read-only client first applies what the writer appended since (so reads are current) and
    explains a refused write with ``read_only_note``."""

    def invoke(method: str, params: dict[str, Any], caller: CallContext | str) -> Mapping[str, Any]:
        try:
            if transport.read_only:
                transport.refresh()
            return {"result": transport.call(method, params)}
        except AnalystError as exc:
            message = exc.message
            refused = exc.code == RECORD_FAILED and "read-only" in message
            if read_only_note and transport.read_only and refused:
                message = f"{message}: {read_only_note}"
            return {"error": {"code": exc.code, "message": message, "data": exc.data}}
        except httpx.TransportError as exc:
            message = f"cannot reach the server at {transport.description}: {exc}"
            return {"error": {"code": -32003, "message": message, "data": {"retryable": True}}}

    return invoke


def serve_stdio(invoke: Invoke, agent: str) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    server = build_server(invoke, agent)
    protocol = sys.stdout
    stdout = anyio.wrap_file(TextIOWrapper(protocol.buffer, encoding="utf-8"))

    async def run() -> None:
        async with build_stdio(stdout) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    sys.stdout = sys.stderr
    try:
        anyio.run(run)
    finally:
        sys.stdout = protocol


def build_stdio(stdout: anyio.AsyncFile[str]) -> Any:
    from mcp.server.stdio import stdio_server

    return stdio_server(stdout=stdout)
