"""MCP over streamable HTTP at ``/mcp``, on the service's own app and port, behind the same
bearer tokens as ``POST /cstp``.

CSTP mounts ``/mcp`` with no authentication at all; here a request without a valid token is
answered 401 with ``WWW-Authenticate: Bearer`` before the MCP transport sees it, and the agent
the token maps to is the identity of every tool call in that request. Sessions are stateful and
answers are JSON (``json_response=True``), as in CSTP. Both ``/mcp`` and ``/mcp/`` are served
(CSTP redirects the bare path; a client that does not follow redirects works here too).

The SDK's session manager runs inside the app's lifespan (a fresh one each time the app
starts: the SDK's manager runs only once). When a client ends its session (``DELETE``), the SDK
logs the closing of the session's event stream as an error with a traceback
(``anyio.ClosedResourceError``); that is a session ending as it should, so :class:`QuietClose`
keeps it to a debug line.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import orjson
from fastapi import FastAPI
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.datastructures import Headers
from starlette.routing import Mount, Route
from starlette.types import Receive, Scope, Send

from service.http.auth import TokenTable
from service.rpc.protocol import Dispatcher

from .server import AGENT_KEY, build_server, dispatcher_invoke

logger = logging.getLogger(__name__)
PATH = "/mcp"
#: The SDK's streamable-HTTP logger (it logs a closed session stream as an error).
SDK_LOGGER = "mcp.server.streamable_http"
_CLOSED = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


def _closed_stream(exc: BaseException | None) -> bool:
    """Whether ``exc`` is (only) a stream that was closed: a session ended."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_closed_stream(inner) for inner in exc.exceptions)
    return isinstance(exc, _CLOSED)


class QuietClose(logging.Filter):
    """Keep the SDK's tracebacks of a closed session stream out of the server log (one debug
    line instead); every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or not _closed_stream(exc):
            return True
        logger.debug("MCP session stream closed (%s): %s", type(exc).__name__, record.getMessage())
        return False


def quiet_session_close() -> None:
    """Install :class:`QuietClose` on the SDK's logger (once)."""
    sdk = logging.getLogger(SDK_LOGGER)
    if not any(isinstance(f, QuietClose) for f in sdk.filters):
        sdk.addFilter(QuietClose())


class McpEndpoint:
    """The ASGI app at ``/mcp``: authenticate, then hand the request to the MCP transport."""

    def __init__(self, server: Server[Any, Any], tokens: TokenTable, max_body: int) -> None:
        self.server = server
        self.tokens = tokens
        self.max_body = max_body
        self.manager: StreamableHTTPSessionManager | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # websockets are not an MCP transport
            return
        agent = self.tokens.agent_for(Headers(scope=scope).get("authorization"))
        if agent is None:
            message = "authentication required: send a valid Bearer token"  # as /cstp says it
            error = {"code": -32001, "message": message}
            body = {"jsonrpc": "2.0", "error": error, "id": None}
            await _answer(send, 401, body, [(b"www-authenticate", b"Bearer")])
            return
        manager = self.manager
        if manager is None:  # the app's lifespan did not run (or has ended)
            await _answer(send, 503, {"error": "MCP transport not running"})
            return
        # The SDK builds each message's request from this scope; the tools read the agent here.
        await manager.handle_request({**scope, AGENT_KEY: agent}, receive, send)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            stateless=False,
            max_request_body_size=self.max_body,
        )
        async with manager.run():
            self.manager = manager
            try:
                yield
            finally:
                self.manager = None


async def _answer(
    send: Send, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = orjson.dumps(body)
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": head + (headers or [])})
    await send({"type": "http.response.body", "body": payload})


def mount_mcp(api: FastAPI, dispatcher: Dispatcher, tokens: TokenTable, max_body: int) -> None:
    """Serve MCP at ``/mcp`` on ``api``, its tools calling ``dispatcher`` (the one ``/cstp``
    uses), and run its session manager within ``api``'s lifespan."""
    quiet_session_close()
    endpoint = McpEndpoint(build_server(dispatcher_invoke(dispatcher)), tokens, max_body)
    api.router.routes.append(Route(PATH, endpoint=endpoint))
    api.router.routes.append(Mount(PATH, app=endpoint))
    outer = api.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with endpoint.running():
            context: AbstractAsyncContextManager[Any] = outer(app)
            async with context as state:
                yield state

    api.router.lifespan_context = lifespan
