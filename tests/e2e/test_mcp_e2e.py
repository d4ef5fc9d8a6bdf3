"""MCP end to end with the SDK's own clients: streamable HTTP at ``/mcp`` of a real
``decigraph serve`` (with and without the token), ``decigraph mcp --url`` proxying to it (as the
token's agent, never as another ``--agent``), and ``decigraph mcp --data-dir`` serving a store
itself on stdio (a second one on the same directory serves it read-only)."""

from __future__ import annotations

import json
import os
import subprocess
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
    tools = (await session.list_tools()).tools
    seen: dict[str, Any] = {"tools": [t.name for t in tools]}
    seen["tool_bytes"] = len(json.dumps([t.model_dump(exclude_none=True) for t in tools]))
    # a misspelt argument is refused (nothing written); an unknown one is named
    typo = await session.call_tool(
        "log_decision", {"decision": "Use gzip", "confidnce": 0.9, "category": "tooling"}
    )
    seen["typo"] = (typo.isError, payload(typo))
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
    extra = await session.call_tool("get_decision", {"id": node, "verbose": True})
    seen["extra"] = payload(extra)
    seen["text"] = extra.content[0].text  # type: ignore[union-attr]
    seen["structured"] = extra.structuredContent
    # the session's own read goes with the decision it records next
    await session.call_tool("query_decisions", {"query": "restore drills for Postgres"})
    followed = await session.call_tool(
        "log_decision",
        {"decision": "Run a restore drill every quarter", "confidence": 0.8, "category": "process"},
    )
    seen["followed"] = payload(followed)
    return seen


def check(seen: dict[str, Any], agent: str) -> None:
    assert seen["tools"][:5] == CSTP_FIRST
    assert {"recall", "set_lifecycle", "forget", "supersede"} <= set(seen["tools"])
    assert seen["tool_bytes"] <= 12_000
    assert seen["typo"][0] is True
    assert seen["typo"][1]["data"] == {"field": "confidnce", "suggestion": "confidence"}
    node = seen["made"]["id"]
    assert seen["got"]["found"] is True
    assert seen["got"]["decision"]["id"] == node
    assert seen["missing"]["found"] is False
    assert node in [d["id"] for d in seen["found"]["decisions"]]
    assert {node, seen["kept"]["id"]} <= {hit["id"] for hit in seen["recalled"]["results"]}
    assert seen["bad"][0] is True  # the SDK refused it against the schema (confidence <= 1)
    assert "Input validation error" in seen["bad"][1]
    assert agent in json.dumps(seen["got"]["decision"])  # recorded as the caller's agent
    assert seen["extra"]["warnings"] == ["verbose: not a known argument; ignored"]
    assert seen["structured"] is None  # one compact text block
    assert seen["text"] == json.dumps(seen["extra"], separators=(",", ":"), ensure_ascii=False)
    assert len(seen["made"]["quality"]["suggestions"]) <= 1
    # a decision takes this session's own reads only: none before the first (the /cstp query
    # made as the same agent just before stays /cstp's), the four made since before the next
    assert seen["made"]["deliberation_inputs_count"] == 0, seen["made"]
    assert seen["followed"]["deliberation_inputs_count"] == 4, seen["followed"]


def test_mcp_over_http_with_and_without_the_token_and_proxied_on_stdio(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = tmp_path / "serve.log"
    with serving(data, TOKEN, log=log) as rpc:
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

        rpc.ok("cstp.queryDecisions", {"query": "Postgres backups"})  # /cstp's own session
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

        rpc.ok("cstp.queryDecisions", {"query": "Postgres backups"})
        check(anyio.run(over_proxy), "agent-a")
        assert (
            rpc.ok("cstp.recordDecision", {"decision": "Keep WAL for 7 days"})[
                "deliberation_inputs_count"
            ]
            == 2
        )  # /cstp's two queries stayed /cstp's

        # --agent through a server: the token's agent is honoured, another one refused
        async def as_agent(agent: str) -> dict[str, Any]:
            named = StdioServerParameters(
                command=sys.executable,
                args=[*proxy.args, "--agent", agent],
                env={**os.environ},
                cwd=str(ROOT),
            )
            async with stdio_client(named) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                args = {"decision": "Vacuum nightly", "confidence": 0.6, "category": "process"}
                return dict(payload(await s.call_tool("log_decision", args)))

        honoured = anyio.run(as_agent, "agent-a")
        got = rpc.ok("cstp.getDecision", {"id": honoured["id"]})["decision"]
        assert "agent-a" in json.dumps(got)
        events = httpx.get(f"{url}/health").json()["events"]
        other = subprocess.run(
            [sys.executable, *proxy.args, "--agent", "desk-agent"],
            check=False,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert other.returncode == 2, other.stderr
        assert "--agent 'desk-agent' cannot be honoured" in other.stderr
        assert "'agent-a'" in other.stderr
        assert httpx.get(f"{url}/health").json()["events"] == events
    # every MCP session above ended (DELETE) without a traceback in the server's log
    said = log.read_text()
    assert "POST /mcp" in said
    assert "Traceback" not in said
    assert "ClosedResourceError" not in said


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


def test_a_second_stdio_client_on_the_same_directory_serves_it_read_only(tmp_path: Path) -> None:
    data = tmp_path / "shared"

    def client(agent: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "service.cli", "mcp", "--data-dir", str(data), "--agent", agent],
            env={**os.environ, "DECIGRAPH_FSYNC": "never"},
            cwd=str(ROOT),
        )

    def log_args(text: str) -> dict[str, Any]:
        return {"decision": text, "confidence": 0.7, "category": "architecture"}

    async def run() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with (
            stdio_client(client("first")) as (read, write),
            ClientSession(read, write) as first,
        ):
            await first.initialize()
            early = payload(await first.call_tool("log_decision", log_args(EARLY)))
            async with (
                stdio_client(client("second")) as (read2, write2),
                ClientSession(read2, write2) as second,
            ):
                await second.initialize()
                seen["tools"] = len((await second.list_tools()).tools)
                got = await second.call_tool("get_decision", {"id": early["id"]})
                seen["early"] = payload(got)
                late = payload(await first.call_tool("log_decision", log_args(LATE)))
                got = await second.call_tool("get_decision", {"id": late["id"]})
                seen["late"] = payload(got)  # the writer's later decision is seen too
                refused = await second.call_tool("log_decision", log_args("Use Kafka"))
                seen["refused"] = (refused.isError, payload(refused))
                again = await second.call_tool("query_decisions", {"query": "nightly backups"})
                seen["again"] = payload(again)  # still serving after the refusal
        return seen

    seen = anyio.run(run)
    assert seen["tools"] > 17
    assert seen["early"]["found"] is True
    assert seen["late"]["found"] is True
    is_error, refusal = seen["refused"]
    assert is_error is True
    assert "read-only" in refusal["message"]
    assert "decigraph serve" in refusal["message"]
    assert seen["again"]["decisions"]


EARLY = "Take nightly backups of the billing database to S3"
LATE = "Keep thirty days of nightly backups"
