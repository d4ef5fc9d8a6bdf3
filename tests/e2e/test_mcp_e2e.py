"""MCP end to end with the SDK's own clients: streamable HTTP at ``/mcp`` of a real
``decigraph serve`` (with and without the token), ``decigraph mcp --url`` proxying to it, and
``decigraph mcp --data-dir`` serving a store itself on stdio."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.rpc import serving

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "mcp-e2e-token-0123456789abcdef"
CSTP_FIRST = ["query_decisions", "check_action", "log_decision", "review_outcome", "get_stats"]


def payload(result: types.CallToolResult) -> Any:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return json.loads(block.text)


async def drive(session: ClientSession) -> dict[str, Any]:
    """The calls an agent makes in a session; what each answered."""
    await session.initialize()
    seen: dict[str, Any] = {"tools": [t.name for t in (await session.list_tools()).tools]}
    made = await session.call_tool(
        "log_decision",
        {
            "decision": "Run nightly Postgres backups with pgBackRest to S3 with 35 day retention",
            "confidence": 0.85,
            "category": "architecture",
            "stakes": "high",
            "tags": ["postgres", "backup"],
            "reasons": [
                {"type": "empirical", "text": "The March restore drill took 40 minutes"},
                {"type": "constraint", "text": "Auditors require 30 days of restore points"},
            ],
        },
    )
    assert made.isError is False, made.content
    seen["made"] = payload(made)
    node = seen["made"]["id"]
    seen["got"] = payload(await session.call_tool("get_decision", {"id": node}))
    seen["missing"] = payload(await session.call_tool("get_decision", {"id": "0badc0de"}))
    found = await session.call_tool("query_decisions", {"query": "Postgres backup retention"})
    seen["found"] = payload(found)
    kept = await session.call_tool(
        "remember", {"text": "The on-call engineer said S3 restores from Glacier took 5 hours"}
    )
    seen["kept"] = payload(kept)
    recalled = await session.call_tool("recall", {"query": "Postgres backup restores", "limit": 5})
    seen["recalled"] = payload(recalled)
    bad = await session.call_tool("log_decision", {"decision": "x", "confidence": 7})
    seen["bad"] = (bad.isError, bad.content[0].text if bad.content else "")  # type: ignore[union-attr]
    return seen


def check(seen: dict[str, Any], agent: str) -> None:
    assert seen["tools"][:5] == CSTP_FIRST
    assert "recall" in seen["tools"]
    node = seen["made"]["id"]
    assert seen["got"]["found"] is True
    assert seen["got"]["decision"]["id"] == node
    assert seen["missing"]["found"] is False
    assert node in [d["id"] for d in seen["found"]["decisions"]]
    assert {node, seen["kept"]["id"]} <= {hit["id"] for hit in seen["recalled"]["results"]}
    assert seen["bad"][0] is True  # the SDK refused it against the schema (confidence <= 1)
    assert "Input validation error" in seen["bad"][1]
    assert agent in json.dumps(seen["got"]["decision"])  # recorded as the caller's agent


def test_mcp_over_http_with_and_without_the_token_and_proxied_on_stdio(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving(data, TOKEN) as rpc:
        url = rpc.url
        # Without a token (or with a wrong one): 401 and nothing written.
        before = httpx.get(f"{url}/health").json()["events"]
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "e2e", "version": "0"},
            },
        }
        accept = {"Accept": "application/json, text/event-stream"}
        for headers in (accept, {**accept, "Authorization": "Bearer not-the-token"}):
            refused = httpx.post(f"{url}/mcp/", json=init, headers=headers)
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"] == "Bearer"
        assert httpx.get(f"{url}/health").json()["events"] == before

        async def over_http() -> dict[str, Any]:
            auth = {"Authorization": f"Bearer {TOKEN}"}
            async with (
                httpx.AsyncClient(headers=auth, timeout=120) as http,
                streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                return await drive(session)

        check(anyio.run(over_http), "agent-a")  # the token's agent

        # decigraph mcp --url: the same tools on stdio, each call proxied to the server.
        proxy = StdioServerParameters(
            command=sys.executable,
            args=["-m", "service.cli", "mcp", "--url", url, "--token", TOKEN],
            env={**os.environ},
            cwd=str(ROOT),
        )

        async def over_proxy() -> dict[str, Any]:
            async with stdio_client(proxy) as (read, write), ClientSession(read, write) as session:
                return await drive(session)

        check(anyio.run(over_proxy), "agent-a")


def test_mcp_on_stdio_serves_a_store_itself(tmp_path: Path) -> None:
    data = tmp_path / "alone"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "service.cli", "mcp", "--data-dir", str(data), "--agent", "desk-agent"],
        env={**os.environ, "DECIGRAPH_FSYNC": "never"},
        cwd=str(ROOT),
    )

    async def run() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await drive(session)

    seen = anyio.run(run)
    check(seen, "desk-agent")
