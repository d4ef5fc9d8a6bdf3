"""The MCP server (the SDK's low-level ``Server``, MCP Python SDK 1.x) over the tool table.

One server object serves any transport: :mod:`.http` (streamable HTTP at ``/mcp``, the agent
from the bearer token) and :mod:`.stdio` (the agent given on the command line). Each tool call
runs :func:`~.tools.run_tool` in a worker thread (the dispatcher embeds text and writes to disk:
never on the event loop).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from importlib.metadata import version
from typing import Any

import anyio
import jsonschema
from jsonschema.exceptions import best_match
from mcp import types
from mcp.server.lowlevel import Server

from service.rpc.protocol import CallContext, Dispatcher

from .tools import Tool, build_tools, error_outcome, run_tool

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

#: ``(method, params, agent) -> JSON-RPC response`` (``{"result": ...}`` or ``{"error": ...}``).
Invoke = Callable[[str, dict[str, Any], str], Mapping[str, Any]]


def dispatcher_invoke(dispatcher: Dispatcher) -> Invoke:
    """Calls through the service's own JSON-RPC dispatcher (what ``POST /cstp`` runs)."""

    def invoke(method: str, params: dict[str, Any], agent: str) -> Mapping[str, Any]:
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = dispatcher.handle(request, CallContext(agent))
        return answer if isinstance(answer, Mapping) else {"error": {"code": -32603}}

    return invoke


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

    async def list_tools() -> list[types.Tool]:
        return listed

    async def call_tool(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        caller = _agent(server) or agent
        tool = by_name.get(name)
        if tool is not None:
            error = best_match(validators[name].iter_errors(arguments or {}))
            if error is not None:  # the SDK's own wording for a schema violation
                return types.CallToolResult(
                    content=[
                        types.TextContent(
                            type="text", text=f"Input validation error: {error.message}"
                        )
                    ],
                    isError=True,
                )
        if tool is None:
            outcome = error_outcome({"code": -32601, "message": f"unknown tool {name!r}"})
        elif caller is None:  # not reachable through http.py (it refuses first): fail closed
            outcome = error_outcome({"code": -32001, "message": "no authenticated agent"})
        else:
            call = partial(_call, invoke, caller)
            outcome = await anyio.to_thread.run_sync(run_tool, tool, arguments, call)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.text())],
            structuredContent=outcome.payload,
            isError=outcome.is_error,
        )

    # The SDK's decorators are untyped; registering through them keeps our functions typed.
    server.list_tools()(list_tools)  # type: ignore[no-untyped-call]
    server.call_tool(validate_input=False)(call_tool)  # call_tool validates, with built validators
    return server


def _call(invoke: Invoke, agent: str, method: str, params: dict[str, Any]) -> Mapping[str, Any]:
    return invoke(method, params, agent)


def _agent(server: Server[Any, Any]) -> str | None:
    """The agent :mod:`.http` authenticated for this request (``None`` over stdio)."""
    try:
        request = server.request_context.request
    except LookupError:
        return None
    scope = getattr(request, "scope", None)
    value = scope.get(AGENT_KEY) if isinstance(scope, Mapping) else None
    return value if isinstance(value, str) else None
