"""The agent's loop over MCP, end to end: the SDK's client at ``/mcp`` of a real server,
driving the session a coding agent has while building a small web app, and asserting what the
agent is told at each step (issue 28's session).

1. A task briefing on an empty store names nothing.
2. JWT authentication is decided and two decisions come to rely on it.
3. RQ is tried for background jobs, fails (jobs lost on worker restarts) and is replaced by
   Celery; proposing RQ again is answered with the failure, its lesson and its replacement.
4. Server-side sessions instead of JWT: pre_action raises the conflict and says how to settle
   it; log_decision refuses it naming the arguments; one call with ``supersedes`` records it.
5. A blocked proposal (Heroku instead of Fly.io, which two decisions rely on) recorded with
   ``override_reason``; a pair the judge flags (JWTs kept for one service beside server-side
   sessions) declared ``compatible_with``.
6. The session context for the next task names what matters and stays within its budget.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from tests.support.rpc import serving

TOKEN = "mcp-agent-loop-token-0123456789"


def payload(result: types.CallToolResult) -> Any:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return json.loads(block.text)


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


class Agent:
    """The calls a coding agent makes, each answer kept for the assertions."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def log(self, decision: str, **more: Any) -> types.CallToolResult:
        args = {"decision": decision, "confidence": 0.8, "category": "architecture", **more}
        return await self.session.call_tool("log_decision", args)

    async def made(self, decision: str, **more: Any) -> str:
        answer = await self.log(decision, **more)
        assert answer.isError is False, text_of(answer)
        node: str = payload(answer)["id"]
        return node

    async def depends(self, source: str, target: str) -> None:
        args = {"source_id": source, "target_id": target, "edge_type": "depends_on"}
        linked = await self.session.call_tool("link_decisions", args)
        assert linked.isError is False, text_of(linked)

    async def ask(self, description: str) -> tuple[dict[str, Any], int]:
        args = {"action": {"description": description}, "options": {"auto_record": False}}
        answer = await self.session.call_tool("pre_action", args)
        assert answer.isError is False, text_of(answer)
        return payload(answer), len(text_of(answer).encode())


def named(brief: dict[str, Any]) -> list[str]:
    return [row["id"] for row in brief["relevantDecisions"]]


async def session(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx.AsyncClient(headers=auth, timeout=120) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        agent = Agent(client)
        empty = await client.call_tool(
            "get_session_context", {"task_description": "Build the booking API for the clinic"}
        )
        seen["empty"] = payload(empty)["markdown"]

        ids = seen["ids"] = {}
        ids["jwt"] = await agent.made(
            "Authenticate API requests with stateless JWT access tokens signed with RS256",
            category="security",
            stakes="high",
            reasons=[
                {"type": "analysis", "text": "No session store to run: any replica checks it"}
            ],
        )
        ids["gateway"] = await agent.made(
            "The API gateway verifies JWT signatures before requests reach the services"
        )
        ids["mobile"] = await agent.made("The mobile app refreshes its JWT every 15 minutes")
        for dependent in ("gateway", "mobile"):
            await agent.depends(ids[dependent], ids["jwt"])
        ids["rq"] = await agent.made("Run background jobs with RQ on Redis", category="tooling")
        reviewed = await client.call_tool(
            "review_outcome",
            {
                "id": ids["rq"],
                "outcome": "failure",
                "actual_result": "RQ lost jobs on worker restarts",
                "lessons": "Use a broker that acknowledges jobs and retries them",
            },
        )
        assert reviewed.isError is False, text_of(reviewed)
        ids["celery"] = await agent.made(
            "Run background jobs on Celery with RabbitMQ acknowledgements and retries",
            category="tooling",
            supersedes=[ids["rq"]],
        )
        seen["rq_again"] = await agent.ask("Use RQ on Redis for the appointment reminder jobs")

        sessions = "Replace JWT authentication with server-side sessions stored in Redis"
        seen["sessions_asked"] = await agent.ask(sessions)
        refused = await agent.log(sessions, category="security")
        seen["refused"] = (refused.isError, text_of(refused))
        ids["sessions"] = await agent.made(sessions, category="security", supersedes=[ids["jwt"]])
        got = await client.call_tool("get_decision", {"id": ids["jwt"]})
        seen["jwt_after"] = payload(got)["decision"]

        # A choice two decisions rely on, a proposal against it, recorded with an override.
        ids["fly"] = await agent.made("Deploy the booking API on Fly.io in the fra region")
        for text in (
            "Database migrations run as a Fly.io release command before each deploy",
            "Preview environments are Fly.io apps created per pull request",
        ):
            await agent.depends(await agent.made(text), ids["fly"])
        heroku = "Deploy the booking API on Heroku instead of Fly.io"
        seen["heroku_asked"] = await agent.ask(heroku)
        blocked = await agent.log(heroku)
        seen["heroku_blocked"] = (blocked.isError, text_of(blocked))
        overridden = await agent.log(
            heroku, override_reason="The clinic's IT contract only covers Heroku; agreed with them"
        )
        seen["overridden"] = (overridden.isError, payload(overridden))

        # A pair that may read as a contradiction, declared compatible: recorded, linked.
        ids["compatible"] = await agent.made(
            "Keep issuing short-lived JWTs to the push-notification service only",
            category="security",
            compatible_with=[ids["sessions"]],
        )
        neighbours = await client.call_tool(
            "get_neighbors", {"node_id": ids["compatible"], "direction": "outgoing"}
        )
        seen["compatible_edges"] = payload(neighbours)

        context = await client.call_tool(
            "get_session_context",
            {"task_description": "Add the appointment reminder jobs to the booking API"},
        )
        seen["context"] = text_of(context)
        small = await client.call_tool(
            "get_session_context",
            {"task_description": "Add the appointment reminder jobs", "max_chars": 600},
        )
        seen["small"] = payload(small)
    return seen


def test_mcp_agent_loop(tmp_path: Path) -> None:
    with serving(tmp_path / "data", TOKEN) as rpc:
        seen = anyio.run(session, rpc.url)
    ids = seen["ids"]

    # 1. Nothing recorded: the briefing names nothing.
    assert "Relevant decisions" not in seen["empty"]

    # 3. RQ again: the failure, its lesson and what replaced it, in one small answer.
    brief, size = seen["rq_again"]
    rows = {row["id"]: row for row in brief["relevantDecisions"]}
    assert ids["rq"] in rows, brief
    assert "failure" in rows[ids["rq"]]["why"]
    assert "acknowledges" in rows[ids["rq"]]["lesson"]
    assert ids["celery"] in json.dumps(brief)  # the replacement is named
    assert size <= 2048
    assert ids["jwt"] not in rows  # authentication is not what this is about
    for row in brief["relevantDecisions"]:
        assert 0.0 <= row["relevance"] <= 1.0

    # 4. Sessions instead of JWT: raised, blocked (two decisions rely on JWT), settled in one
    # call with supersedes.
    brief, size = seen["sessions_asked"]
    assert brief["allowed"] is False
    assert ids["jwt"] in [c["id"] for c in brief["conflicts"]]
    row = next(r for r in brief["relevantDecisions"] if r["id"] == ids["jwt"])
    assert "2 decisions rely on it" in row["why"]
    assert row["because"] == "No session store to run: any replica checks it"  # why it was made
    assert "supersedes" in brief["resolve"]
    assert "override_reason" in brief["resolve"]
    is_error, text = seen["refused"]
    assert is_error is True
    assert "guardrail_blocked" in text
    assert ids["jwt"] in text
    assert "supersedes" in text
    assert seen["jwt_after"]["lifecycle"] == "superseded"

    # 5. Override and compatible declaration.
    brief, _ = seen["heroku_asked"]
    assert brief["allowed"] is False
    assert ids["fly"] in [c["id"] for c in brief["conflicts"]]
    is_error, text = seen["heroku_blocked"]
    assert is_error is True
    assert ids["fly"] in text
    is_error, made = seen["overridden"]
    assert is_error is False
    assert made["id"]
    edges = seen["compatible_edges"]["neighbors"]
    assert any(n["node"]["id"] == ids["sessions"] for n in edges), edges

    # 6. The next task's context: the reminder work names Celery and RQ's lesson; nothing about
    # authentication.
    context = json.loads(seen["context"])["markdown"]
    assert len(seen["context"].encode()) <= 4096
    assert ids["celery"] in context
    assert ids["rq"] in context
    assert "acknowledges jobs" in context
    assert ids["jwt"] not in context
    assert len(seen["small"]["markdown"]) <= 600
    assert seen["small"]["truncated"] is True
