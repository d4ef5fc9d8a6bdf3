"""The contradiction guardrail end to end: a real ``decigraph serve`` with the shipped judge, an
agent walked through a block, a review, each of the three resolutions (over JSON-RPC and MCP),
and a replay of the log that reproduces every verdict without judging again."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from graph.store import DecisionStore, StoreOptions
from tests.e2e.test_serve import start_serve, stop_serve

TOKEN = "judge-e2e-token-0123456789"
SESSIONS = "Store user sessions in Redis 7, replicated across two zones"
DEPENDENTS = (
    "Set the session key TTL in Redis to 24 hours",
    "Page the platform on-call when Redis session memory passes 80 percent",
    "The login service reads session tokens from the Redis cluster",
)
MOVE = "Move user session storage off Redis to Memcached"


class Agent:
    """An agent's JSON-RPC client (one token)."""

    def __init__(self, url: str, data: Path) -> None:
        self.url, self.data = url, data
        self.http = httpx.Client(timeout=120, headers={"Authorization": f"Bearer {TOKEN}"})

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
        reply = self.http.post(f"{self.url}/cstp", json=body)
        assert reply.status_code == 200, reply.text
        answer: dict[str, Any] = reply.json()
        return answer

    def ok(self, method: str, params: dict[str, Any]) -> Any:
        answer = self.call(method, params)
        assert "error" not in answer, answer
        return answer["result"]

    def record(self, text: str, **extra: Any) -> dict[str, Any]:
        made: dict[str, Any] = self.ok("recordDecision", {"decision": text, **extra})
        return made

    def events(self) -> int:
        return int(httpx.get(f"{self.url}/health").json()["events"])

    def contradictions(self) -> dict[frozenset[str], str]:
        rows = self.ok("findContradictions", {})["contradictions"]
        return {frozenset((r["a"], r["b"])): r["status"] for r in rows}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    data = tmp_path_factory.mktemp("judge") / "data"
    env = {**os.environ, "CSTP_AUTH_TOKENS": f"agent-a:{TOKEN}", "DECIGRAPH_FSYNC": "never"}
    proc, url = start_serve(data, env)
    try:
        yield Agent(url, data)
    finally:
        stop_serve(proc)


@pytest.fixture(scope="module")
def sessions(agent: Agent) -> str:
    """The session-store decision, relied on by three others (salience above the threshold)."""
    target = str(agent.record(SESSIONS, category="architecture")["id"])
    for text in DEPENDENTS:
        dependent = agent.record(text)["id"]
        agent.ok(
            "linkDecisions", {"sourceId": dependent, "targetId": target, "edgeType": "depends_on"}
        )
    return target


def tiers(answer: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["tier"] for c in answer.get("conflicts", [])}


def test_a_confident_contradiction_of_a_relied_on_decision_is_blocked(
    agent: Agent, sessions: str
) -> None:
    checked = agent.ok("checkGuardrails", {"action": {"description": MOVE, "stakes": "high"}})
    assert checked["allowed"] is False
    assert tiers(checked)[sessions] == "block"
    (violation,) = [v for v in checked["violations"] if sessions in v["message"]]
    assert violation["guardrailId"] == "graph-contradiction"
    for word in ("supersedes", "compatibleWith", "override"):
        assert word in violation["suggestion"]
    conflict = next(c for c in checked["conflicts"] if c["id"] == sessions)
    assert conflict["statement"] == SESSIONS
    assert conflict["p"] >= 0.9
    assert conflict["reason"]
    before = agent.events()
    refused = agent.call("recordDecision", {"decision": MOVE})
    assert refused["error"]["code"] == -32004
    assert agent.events() == before  # nothing written
    pre = agent.ok("preAction", {"action": {"description": MOVE}, "options": {"autoRecord": True}})
    assert pre["allowed"] is False
    assert pre["decisionId"] is None
    assert agent.events() == before


def test_a_review_is_written_and_shown_as_suspected(agent: Agent) -> None:
    # A confident contradiction of a decision nothing relies on yet: written, kept for review.
    limiter = agent.record("Host the marketing site on Netlify")["id"]
    made = agent.record("Move the marketing site from Netlify to GitHub Pages")
    assert made["success"] is True
    assert tiers(made).get(limiter) == "review"
    assert any(w["severity"] == "warn" for w in made["guardrail_warnings"])
    assert agent.contradictions()[frozenset((made["id"], limiter))] == "suspected"
    # Declared compatible afterwards (one call): the suspicion is withdrawn for good.
    agent.ok("updateDecision", {"id": made["id"], "compatibleWith": [limiter]})
    assert frozenset((made["id"], limiter)) not in agent.contradictions()


def test_compatible_with_resolves_a_block_and_is_never_raised_again(
    agent: Agent, sessions: str
) -> None:
    made = agent.record(MOVE, compatibleWith=[sessions])
    assert sessions not in tiers(made)
    again = agent.ok("checkGuardrails", {"action": {"description": MOVE}})
    assert sessions not in tiers(again)
    neighbours = agent.ok("getNeighbors", {"nodeId": made["id"], "direction": "outgoing"})
    rows = neighbours["neighbors"]
    kinds = {n["edge"]["edgeType"] for n in rows if n["node"]["id"] == sessions}
    assert "relates_to" in kinds
    assert "contradicts" not in kinds


def test_an_override_is_written_with_its_reason_and_kept_as_suspected(
    agent: Agent, sessions: str
) -> None:
    text = "Store user sessions in MongoDB, replicated across two zones"
    assert agent.call("recordDecision", {"decision": text})["error"]["code"] == -32004
    made = agent.record(text, override={"reason": "ADR-31 moves sessions to the main database"})
    assert made["guardrail_override"] is True
    assert tiers(made)[sessions] == "block"
    assert agent.contradictions()[frozenset((made["id"], sessions))] == "suspected"
    # Linking the pair as contradicting confirms it.
    agent.ok(
        "linkDecisions", {"sourceId": made["id"], "targetId": sessions, "edgeType": "contradicts"}
    )
    assert agent.contradictions()[frozenset((made["id"], sessions))] == "confirmed"


def test_over_mcp_an_agent_resolves_a_block_by_superseding(agent: Agent, sessions: str) -> None:
    text = "Store user sessions in DynamoDB, replicated across two zones"

    async def session() -> tuple[Any, Any, Any]:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx.AsyncClient(headers=auth, timeout=120) as http,
            streamable_http_client(f"{agent.url}/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            checked = await client.call_tool("check_action", {"description": text})
            blocked = await client.call_tool(
                "log_decision", {"decision": text, "confidence": 0.8, "category": "architecture"}
            )
            made = await client.call_tool(
                "log_decision",
                {
                    "decision": text,
                    "confidence": 0.8,
                    "category": "architecture",
                    "supersedes": [sessions],
                },
            )
            return checked, blocked, made

    checked, blocked, made = anyio.run(session)

    def payload(result: types.CallToolResult) -> Any:
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        return json.loads(block.text)

    assert payload(checked)["allowed"] is False
    assert tiers(payload(checked))[sessions] == "block"
    assert blocked.isError
    made_view = payload(made)
    assert not made.isError, made_view
    lineage = agent.ok("getDecision", {"id": sessions})["decision"]
    assert lineage["lifecycle"] == "superseded"
    assert sessions not in agent.contradictions().__repr__()  # a superseded side settles it
    del made_view


def test_replay_reproduces_every_verdict_without_judging(agent: Agent) -> None:
    """The judge's verdicts are in the events (notes and edges): the log replayed from its
    first event gives the same graph as the running server's, suspected edges included."""
    live = agent.ok("findContradictions", {"status": "all"})["contradictions"]
    store = DecisionStore.open(agent.data, StoreOptions(read_only=True, use_snapshot=False))
    try:
        events = store.read_events(1, store.seq)
        judged = [e for e in events if "judgement" in json.dumps(e.payload)]
        assert judged, "the judgement is written into the events"
        note = json.dumps(judged[0].payload)
        assert '"judge"' in note
        replayed = {
            frozenset((u, v))
            for u, v, k, d in store.graph.edges(keys=True, data=True)
            if k == "contradicts" and (d.get("meta") or {}).get("signal") == "suspected"
        }
    finally:
        store.close()
    suspected = {frozenset((r["a"], r["b"])) for r in live if r["status"] == "suspected"}
    assert suspected <= replayed
