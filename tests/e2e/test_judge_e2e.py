"""The contradiction guardrail end to end: a real ``decigraph serve`` with the shipped judge, an
agent walked through a block, a review, each of the three resolutions (over JSON-RPC and MCP),
and a replay of the log that reproduces every verdict without judging again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from graph.store import DecisionStore, StoreOptions
from tests.support.rpc import Rpc, serving

TOKEN = "judge-e2e-token-0123456789"
SESSIONS = "Store user sessions in Redis 7, replicated across two zones"
DEPENDENTS = (
    "Set the session key TTL in Redis to 24 hours",
    "Page the platform on-call when Redis session memory passes 80 percent",
    "The login service reads session tokens from the Redis cluster",
)
MOVE = "Move user session storage off Redis to Memcached"


class Agent:
    """An agent's JSON-RPC client (one token) and the data directory it is served from."""

    def __init__(self, rpc: Rpc, data: Path) -> None:
        self.rpc, self.url, self.data = rpc, rpc.url, data

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.rpc.call(f"cstp.{method}", params)

    def ok(self, method: str, params: dict[str, Any]) -> Any:
        return self.rpc.ok(f"cstp.{method}", params)

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
    with serving(data, TOKEN) as rpc:
        yield Agent(rpc, data)


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


def test_the_graph_constraint_blocks_contradicting_a_salient_decision(tmp_path: Path) -> None:
    """In a store of its own: six decisions rely on the Redis one."""
    with serving(tmp_path / "data", TOKEN) as server:
        _blocks_contradicting_a_salient_decision(server)


def _blocks_contradicting_a_salient_decision(server: Rpc) -> None:
    redis = server.ok(
        "cstp.recordDecision", {"decision": "Use Redis for session storage", "confidence": 0.9}
    )["id"]
    for i in range(6):
        # Dependents declare themselves compatible with what they rely on: whether the judge
        # would read "relies on the session store" as a rival of Redis is its call, not this
        # test's (and a relied-on target blocks a confident reading).
        dependent = server.ok(
            "cstp.recordDecision",
            {
                "decision": f"Session feature {i} relies on the session store",
                "confidence": 0.7,
                "compatibleWith": [redis],
            },
        )["id"]
        server.ok(
            "cstp.linkDecisions",
            {"sourceId": dependent, "targetId": redis, "edgeType": "depends_on"},
        )
    negated = {"description": "Do not use Redis for session storage", "confidence": 0.8}
    verdict = server.ok("cstp.checkGuardrails", {"action": negated})
    assert verdict["allowed"] is False
    blocked = verdict["violations"][0]
    assert blocked["guardrailId"] == "graph-contradiction"
    assert blocked["severity"] == "block"
    assert redis in blocked["message"]
    assert "which others rely on (salience" in blocked["message"]
    for resolution in ("supersedes", "compatibleWith", "override"):
        assert resolution in blocked["suggestion"]
    (conflict,) = [c for c in verdict["conflicts"] if c["id"] == redis]
    assert conflict["tier"] == "block"
    assert conflict["statement"] == "Use Redis for session storage"
    assert 0 <= conflict["p"] <= 1
    assert conflict["reason"]
    # The gate refuses the same write, and nothing is written.
    before = server.ok("cstp.getStats", {})["total"]
    refused = server.call("cstp.recordDecision", {"decision": negated["description"]})
    assert refused["error"]["code"] == -32004
    assert refused["error"]["data"]["violations"][0]["guardrailId"] == "graph-contradiction"
    assert server.ok("cstp.getStats", {})["total"] == before
    unrelated = server.ok(
        "cstp.checkGuardrails",
        {"action": {"description": "Do not deploy on Fridays", "confidence": 0.8}},
    )
    assert unrelated["allowed"] is True
    assert redis not in {c["id"] for c in unrelated.get("conflicts", [])}
    explicit = server.call(
        "cstp.recordDecision",
        {"decision": "Sessions go to Postgres", "contradicts": [redis], "confidence": 0.8},
    )
    assert explicit["error"]["code"] == -32004
    assert server.ok("cstp.getStats", {})["total"] == before


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
