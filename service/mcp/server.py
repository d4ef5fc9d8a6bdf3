"""The MCP server (the SDK's low-level ``Server``, MCP Python SDK 1.x) over the tool table.

One server object serves any transport: :mod:`.http` (streamable HTTP at ``/mcp``, the agent
from the bearer token) and :mod:`.stdio` (the agent given on the command line). Each tool call
runs :func:`~.tools.run_tool` in a worker thread (the dispatcher embeds text and writes to disk:
never on the event loop), as the agent and in the MCP session it came in (each session gets its
own key, ``mcp:<8 hex>``: the deliberation tracker attaches only that session's reads to the
decision it records). A result is one compact JSON text block and nothing else (no
``structuredContent`` copy: no tool declares an output schema).
"""

from __future__ import annotations

import logging
import secrets
import weakref
from collections.abc import Callable, Mapping
from functools import partial
from importlib.metadata import version
from typing import Any

import anyio
import jsonschema
from jsonschema.exceptions import best_match
from mcp import types
from mcp.server.lowlevel import Server

from service.rpc.errors import clip_echoes
from service.rpc.protocol import CallContext, Dispatcher

from .results import Outcome, error_outcome
from .tools import Tool, build_tools, misspelt_argument, run_tool

logger = logging.getLogger(__name__)

NAME = "decigraph"
#: The ASGI scope key under which :mod:`.http` leaves the authenticated agent for the tools.
AGENT_KEY = "decigraph.agent"
INSTRUCTIONS = (
    "decigraph keeps a team's decisions as a graph. Start a task with get_session_context; "
    "call pre_action before any significant action (it finds similar decisions, checks the "
    "guardrails and records the action); review_outcome when you learn how a decision turned "
    "out; recall searches decisions and memory together."
)

#: Longest schema-violation text (the SDK's wording quotes the offending value).
MAX_SCHEMA_ERROR = 400

#: ``(method, params, caller) -> JSON-RPC response`` (``{"result": ...}`` or ``{"error": ...}``);
#: the caller is the agent and the MCP session the call came in (an agent id alone: no session).
Invoke = Callable[[str, dict[str, Any], CallContext | str], Mapping[str, Any]]


def dispatcher_invoke(dispatcher: Dispatcher) -> Invoke:
    """Calls through the service's own JSON-RPC dispatcher (what ``POST /cstp`` runs)."""

    def invoke(method: str, params: dict[str, Any], caller: CallContext | str) -> Mapping[str, Any]:
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        context = caller if isinstance(caller, CallContext) else CallContext(caller)
        answer = dispatcher.handle(request, context)
        return answer if isinstance(answer, Mapping) else {"error": {"code": -32603}}

    return invoke


class SessionKeys:
    """One tracker key per MCP session (``mcp:<8 hex>``), kept as long as the session is."""

    def __init__(self) -> None:
        self._keys: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def of(self, session: Any) -> str | None:
        if session is None:
            return None
        key = self._keys.get(session)
        if key is None:
            key = self._keys[session] = f"mcp:{secrets.token_hex(4)}"
        return key


def mcp_tool(tool: Tool) -> types.Tool:
    return types.Tool(name=tool.name, description=tool.description, inputSchema=tool.input_schema)


def build_server(invoke: Invoke, agent: str | None = None) -> Server[Any, Any]:
    """An MCP server whose tools call ``invoke`` as the request's agent (the bearer token's,
    left in the ASGI scope by :mod:`.http`) or else as ``agent`` (stdio)."""
    server: Server[Any, Any] = Server(NAME, version=version("decigraph"), instructions=INSTRUCTIONS)
    tools = build_tools()
    by_name = {tool.name: tool for tool in tools}
    listed = [mcp_tool(tool) for tool in tools]
    # The SDK checks arguments with jsonschema.validate, which checks the schema itself against
    # its metaschema on every call (16 ms for query_decisions' schema); validators built once
    # give the same verdict and message in well under a millisecond.
    validators = {
        tool.name: jsonschema.validators.validator_for(tool.input_schema)(tool.input_schema)
        for tool in tools
    }
    sessions = SessionKeys()

    async def list_tools() -> list[types.Tool]:
        return listed

    async def call_tool(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        caller = _agent(server) or agent
        tool = by_name.get(name)
        refused = misspelt_argument(tool, arguments) if tool is not None else None
        if refused is not None:
            return _result(refused)
        if tool is not None:
            error = best_match(validators[name].iter_errors(arguments or {}))
            if error is not None:  # the SDK's own wording, its quoted value clipped
                said = clip_echoes(error.message, MAX_SCHEMA_ERROR)
                text = f"Input validation error: {said}"
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=text)], isError=True
                )
        if tool is None:
            outcome = error_outcome({"code": -32601, "message": f"unknown tool {name!r}"})
        elif caller is None:  # not reachable through http.py (it refuses first): fail closed
            outcome = error_outcome({"code": -32001, "message": "no authenticated agent"})
        else:
            context = CallContext(caller, sessions.of(_session(server)))
            call = partial(_call, invoke, context)
            outcome = await anyio.to_thread.run_sync(run_tool, tool, arguments, call)
        return _result(outcome)

    # The SDK's decorators are untyped; registering through them keeps our functions typed.
    server.list_tools()(list_tools)  # type: ignore[no-untyped-call]
    server.call_tool(validate_input=False)(call_tool)  # call_tool validates, with built validators
    return server


def _result(outcome: Outcome) -> types.CallToolResult:
    """A tool's answer as MCP carries it: one compact JSON text block."""
    text = types.TextContent(type="text", text=outcome.text())
    return types.CallToolResult(content=[text], isError=outcome.is_error)


def _call(
    invoke: Invoke, caller: CallContext, method: str, params: dict[str, Any]
) -> Mapping[str, Any]:
    return invoke(method, params, caller)


def _session(server: Server[Any, Any]) -> Any:
    """The MCP session this request belongs to (``None`` outside a request)."""
    try:
        return server.request_context.session
    except LookupError:
        return None


def _agent(server: Server[Any, Any]) -> str | None:
    """The agent :mod:`.http` authenticated for this request (``None`` over stdio)."""
    try:
        request = server.request_context.request
    except LookupError:
        return None
    scope = getattr(request, "scope", None)
    value = scope.get(AGENT_KEY) if isinstance(scope, Mapping) else None
    return value if isinstance(value, str) else None
