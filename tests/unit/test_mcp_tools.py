"""The MCP tools: CSTP's 17 in CSTP's order with lean flat schemas, decigraph's own after them,
each mapping its arguments onto a ``cstp.*`` method and shaping the answer; served by the SDK
(in memory and over HTTP at ``/mcp``, behind the bearer tokens)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import types
from mcp.shared.memory import create_connected_server_and_client_session

from graph.enums import EdgeType
from service.http.app import create_app
from service.http.auth import TokenTable
from service.mcp.server import build_server, dispatcher_invoke
from service.mcp.tools import (
    build_tools,
    context_params,
    log_params,
    pre_action_params,
    query_params,
    review_params,
    run_tool,
)
from service.methods import build_registry
from service.rpc.protocol import Dispatcher
from service.usecases import Decigraph
from tests.support.fakes import fake_app

pytestmark = pytest.mark.unit

CSTP_ORDER = [
    "query_decisions",
    "check_action",
    "log_decision",
    "review_outcome",
    "get_stats",
    "get_decision",
    "get_reason_stats",
    "update_decision",
    "record_thought",
    "pre_action",
    "get_session_context",
    "ready",
    "link_decisions",
    "get_graph",
    "get_neighbors",
    "get_circuit_state",
    "list_breakers",
]
DECIGRAPH_TOOLS = [
    "recall",
    "remember",
    "unlink",
    "find_path",
    "get_ancestors",
    "get_descendants",
    "find_contradictions",
    "get_blocked_chain",
    "get_high_salience",
    "get_decision_history",
    "list_events",
    "set_lifecycle",
    "forget",
    "supersede",
]
TOOLS = {tool.name: tool for tool in build_tools()}
TOKEN = "mcp-unit-token-0123456789"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 11) as made:
        yield made


def walk(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


# --- the table ---------------------------------------------------------------------------


def test_cstp_tools_come_first_in_cstp_order_then_decigraphs() -> None:
    assert [tool.name for tool in build_tools()] == CSTP_ORDER + DECIGRAPH_TOOLS


@pytest.mark.parametrize("name", CSTP_ORDER + DECIGRAPH_TOOLS)
def test_every_schema_is_flat_and_lean(name: str) -> None:
    schema = TOOLS[name].input_schema
    assert schema["type"] == "object"
    nodes = [n for n in walk(schema) if isinstance(n, dict)]
    assert not any("$ref" in n or "$defs" in n for n in nodes)
    # unknown keys are named in the answer, not refused by the schema
    assert not any(n.get("additionalProperties") is False for n in nodes)
    assert not any("title" in n or "default" in n or "anyOf" in n for n in nodes)
    for key in schema.get("required", []):
        assert key in schema["properties"], key
    for key, prop in schema["properties"].items():
        assert key == key.lower(), key  # snake_case
        assert prop["type"], key
    assert 0 < len(TOOLS[name].description) <= 300
    # every listed argument is accepted (the known tree may hold more: hidden ones)
    assert set(schema["properties"]) <= set(TOOLS[name].known)


def test_cstp_schemas_keep_cstps_required_arguments_and_enums() -> None:
    query = TOOLS["query_decisions"].input_schema
    assert query["required"] == ["query"]
    assert query["properties"]["retrieval_mode"]["enum"] == ["semantic", "keyword", "hybrid"]
    assert query["properties"]["filters"]["type"] == "object"  # its keys, in one line
    assert "min_confidence" in query["properties"]["filters"]["description"]
    log = TOOLS["log_decision"].input_schema
    assert log["required"] == ["decision", "confidence", "category"]
    assert (
        log["properties"]["confidence"]["minimum"],
        log["properties"]["confidence"]["maximum"],
    ) == (0, 1)
    assert {"supersedes", "compatible_with", "override_reason", "contradicts"} <= set(
        log["properties"]
    )
    reasons = log["properties"]["reasons"]["description"]
    assert "type:authority|analogy" in reasons
    # accepted, not listed: CSTP's tracker scopes, location, deliberation, bridge
    assert {"agent_id", "decision_id", "pr", "deliberation", "bridge"} <= set(
        TOOLS["log_decision"].known
    )
    assert "deliberation" not in log["properties"]
    link = TOOLS["link_decisions"].input_schema
    assert set(link["properties"]["edge_type"]["enum"]) == {t.value for t in EdgeType}
    assert link["properties"]["edge_type"]["enum"][:3] == ["relates_to", "supersedes", "depends_on"]
    assert link["required"] == ["source_id", "target_id", "edge_type"]
    context = TOOLS["get_session_context"].input_schema["properties"]
    assert context["format"]["enum"] == ["json", "markdown"]
    assert TOOLS["list_breakers"].input_schema["properties"] == {}
    assert TOOLS["get_circuit_state"].input_schema["required"] == ["scope"]
    assert TOOLS["get_stats"].method == "cstp.getCalibration"  # not getStats: CSTP's meaning
    assert TOOLS["supersede"].input_schema["required"] == ["id", "superseded_by"]
    assert TOOLS["set_lifecycle"].input_schema["properties"]["lifecycle"]["enum"] == [
        "proposed",
        "accepted",
        "rejected",
    ]


def test_decigraph_tool_schemas_list_the_arguments_worth_listing() -> None:
    recall = TOOLS["recall"].input_schema["properties"]
    assert "limit" in recall  # bounds are the method's: it refuses, naming the field
    unlink = TOOLS["unlink"].input_schema
    assert unlink["required"] == ["source_id", "target_id"]  # named as link_decisions names them
    assert unlink["properties"]["edge_type"] == {"type": "string"}  # eleven values: not listed
    assert "as_of" not in recall
    assert "as_of" in TOOLS["recall"].known  # accepted, not listed


# --- argument mapping --------------------------------------------------------------------


def test_query_sends_the_tools_defaults_and_camel_cases_filters() -> None:
    assert query_params({"query": "postgres"}) == {
        "query": "postgres",
        "limit": 5,
        "retrievalMode": "hybrid",
    }
    mapped = query_params(
        {
            "query": "q",
            "filters": {"min_confidence": 0.6, "project": None},
            "bridge_side": "function",
        }
    )
    assert mapped["filters"] == {"minConfidence": 0.6}
    assert mapped["bridgeSide"] == "function"


def test_log_decision_maps_tracker_scopes_and_defaults_stakes() -> None:
    mapped = log_params(
        {
            "decision": "Use Redis for sessions",
            "confidence": 0.8,
            "category": "architecture",
            "agent_id": "planner",
            "decision_id": "feedbeef",
            "tags": None,
            "contradicts": ["0badc0de"],
            "supersedes": ["a1b2c3d4"],
            "override_reason": "ADR-7",
            "include_suggestions": True,
        }
    )
    assert mapped == {
        "decision": "Use Redis for sessions",
        "confidence": 0.8,
        "category": "architecture",
        "stakes": "medium",
        "agentId": "planner",
        "decisionId": "feedbeef",
        "contradicts": ["0badc0de"],
        "supersedes": ["a1b2c3d4"],
        "override": {"reason": "ADR-7"},
        "includeSuggestions": True,
    }


def test_pre_action_records_by_default_and_context_defaults_to_markdown() -> None:
    mapped = pre_action_params({"action": {"description": "Drop the legacy queue"}})
    assert mapped["action"] == {"description": "Drop the legacy queue", "stakes": "medium"}
    assert mapped["options"] == {"queryLimit": 5, "autoRecord": True, "view": "brief"}
    no_record = pre_action_params(
        {"action": {"description": "x"}, "options": {"auto_record": False}}
    )
    assert no_record["options"] == {"queryLimit": 5, "autoRecord": False, "view": "brief"}
    assert context_params({"task_description": "migrate auth"}) == {
        "taskDescription": "migrate auth",
        "format": "markdown",
    }
    assert review_params({"id": "a1b2c3d4", "outcome": "success", "actual_result": "fine"}) == {
        "id": "a1b2c3d4",
        "outcome": "success",
        "actualResult": "fine",
    }


class Recorder:
    """A fake JSON-RPC call: answers from a table, remembers what was asked."""

    def __init__(self, **answers: Mapping[str, Any]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, method: str, params: dict[str, Any]) -> Mapping[str, Any]:
        self.calls.append((method, params))
        return self.answers.get(method.removeprefix("cstp."), {"result": {}})


def test_results_are_shaped_as_cstps_tools_answer() -> None:
    check = Recorder(
        checkGuardrails={
            "result": {
                "allowed": False,
                "violations": [
                    {"guardrailId": "no-friday", "name": "n", "message": "m", "severity": "block"}
                ],
                "warnings": [],
                "evaluated": 2,
                "evaluatedAt": "2026-03-01T09:00:00Z",
            }
        }
    )
    out = run_tool(TOOLS["check_action"], {"description": "Deploy on Friday"}, check)
    assert out.payload == {
        "allowed": False,
        "violations": [
            {"guardrail_id": "no-friday", "name": "n", "message": "m", "severity": "block"}
        ],
        "warnings": [],
        "evaluated": 2,
    }
    breakers = Recorder(listBreakers={"result": {"breakers": [{"scope": "a"}, {"scope": "b"}]}})
    assert run_tool(TOOLS["list_breakers"], {}, breakers).payload["total"] == 2
    state = Recorder(
        getCircuitState={
            "result": {
                "scope": "stakes:high",
                "state": "open",
                "failureCount": 3,
                "openedAt": "1795445412.5",
                "cooldownRemainingMs": 1000,
            }
        }
    )
    raw = run_tool(TOOLS["get_circuit_state"], {"scope": "stakes:high"}, state).payload
    assert raw["failure_count"] == 3
    assert raw["opened_at"] == 1795445412.5
    assert raw["cooldown_remaining_ms"] == 1000


def test_errors_are_flagged_and_two_not_founds_are_results() -> None:
    missing = {"error": {"code": -32005, "message": "id: not found", "data": {"id": "0badc0de"}}}
    calls = Recorder(getDecision=missing, reviewDecision=missing, getNeighbors=missing)
    got = run_tool(TOOLS["get_decision"], {"id": "0badc0de"}, calls)
    assert (got.is_error, got.payload["found"]) == (False, False)
    assert got.payload["error"] == "Decision not found: 0badc0de"
    reviewed = run_tool(TOOLS["review_outcome"], {"id": "0badc0de", "outcome": "success"}, calls)
    assert (reviewed.is_error, reviewed.payload["status"]) == (False, "not_found")
    neighbours = run_tool(TOOLS["get_neighbors"], {"node_id": "0badc0de"}, calls)
    assert neighbours.is_error
    assert neighbours.payload["error"] == "not_found"
    blocked = {"code": -32004, "message": "blocked", "data": {"violations": [{"x": 1}]}}
    out = run_tool(
        TOOLS["log_decision"], {"decision": "d"}, Recorder(recordDecision={"error": blocked})
    )
    assert (out.is_error, out.payload["error"]) == (True, "guardrail_blocked")
    assert json.loads(out.text()) == out.payload


def test_update_without_fields_is_refused_before_any_call_and_unknown_keys_are_named() -> None:
    calls = Recorder()
    out = run_tool(TOOLS["update_decision"], {"id": "a1b2c3d4", "colour": "red"}, calls)
    assert out.is_error
    assert out.payload["error"] == "validation_error"
    assert out.payload["warnings"] == ["colour: not a known argument; ignored"]
    assert calls.calls == []
    args = {"id": "a1b2c3d4", "tags": ["db"], "colour": "red"}
    done = run_tool(TOOLS["update_decision"], args, calls)
    assert calls.calls == [("cstp.updateDecision", {"id": "a1b2c3d4", "updates": {"tags": ["db"]}})]
    assert done.payload["warnings"] == ["colour: not a known argument; ignored"]
    superseding = {"id": "a1b2c3d4", "supersedes": ["0badc0de"]}  # a declaration alone
    run_tool(TOOLS["update_decision"], superseding, calls)
    assert calls.calls[-1][1] == {"id": "a1b2c3d4", "updates": {}, "supersedes": ["0badc0de"]}


def test_record_thought_appends_to_a_recorded_decision_else_tracks_it() -> None:
    appended = Recorder(recordThought={"result": {"mode": "post-decision"}})
    out = run_tool(TOOLS["record_thought"], {"text": "t", "decision_id": "a1b2c3d4"}, appended)
    assert out.payload == {"mode": "post-decision"}
    assert appended.calls == [("cstp.recordThought", {"text": "t", "id": "a1b2c3d4"})]

    class Unknown(Recorder):
        def __call__(self, method: str, params: dict[str, Any]) -> Mapping[str, Any]:
            super().__call__(method, params)
            if "id" in params:
                return {"error": {"code": -32005, "message": "id: not found"}}
            return {"result": {"mode": "pre-decision"}}

    fallback = Unknown()
    out = run_tool(TOOLS["record_thought"], {"text": "t", "decision_id": "a1b2c3d4"}, fallback)
    assert out.payload == {"mode": "pre-decision"}
    assert fallback.calls[-1] == ("cstp.recordThought", {"text": "t", "decisionId": "a1b2c3d4"})


# --- live, through the real dispatcher ---------------------------------------------------


def dispatch(app: Decigraph, agent: str = "planner") -> Any:
    invoke = dispatcher_invoke(Dispatcher(build_registry(app)))
    return lambda method, params: invoke(method, params, agent)


def live(tool: str, app: Decigraph, args: dict[str, Any]) -> Any:
    if build_registry(app).get(TOOLS[tool].method) is None:
        pytest.skip(f"{TOOLS[tool].method} is not registered yet")
    return run_tool(TOOLS[tool], args, dispatch(app))


def test_log_get_query_recall_and_remember_through_the_dispatcher(app: Decigraph) -> None:
    made = live(
        "log_decision",
        app,
        {
            "decision": "Serve the billing API through Envoy with 2 second upstream timeouts",
            "confidence": 0.8,
            "category": "architecture",
            "stakes": "high",
            "tags": ["billing", "envoy"],
            "reasons": [{"type": "empirical", "text": "p99 upstream latency is 700 ms"}],
        },
    )
    assert not made.is_error, made.payload
    node = made.payload["id"]
    got = live("get_decision", app, {"id": node}).payload
    assert got["found"] is True
    assert got["decision"]["id"] == node
    found = live("query_decisions", app, {"query": "Envoy upstream timeouts billing"}).payload
    assert node in [d["id"] for d in found["decisions"]]
    assert found["retrievalMode"] == "hybrid"
    kept = live(
        "remember",
        app,
        {"text": "The billing team saw Envoy retries double the load during the March outage"},
    )
    assert not kept.is_error, kept.payload
    recalled = live("recall", app, {"query": "Envoy billing load", "limit": 5}).payload
    assert {node, kept.payload["id"]} <= {hit["id"] for hit in recalled["results"]}


def test_hostile_arguments_name_the_field_and_never_crash(app: Decigraph) -> None:
    # The SDK checks the schema first; these reach the method's own strict validation.
    wrong = live(
        "log_decision", app, {"decision": "x" * 50, "confidence": "0.8", "category": "process"}
    )
    assert wrong.is_error
    assert wrong.payload["error"] == "validation_error"
    assert "confidence" in wrong.payload["message"]
    typed = live("recall", app, {"query": ["cache"]})
    assert (typed.is_error, typed.payload["error"]) == (True, "validation_error")
    assert "query" in typed.payload["message"]
    # a huge limit is refused or clamped (as the method decides), naming the field either way
    huge = live("recall", app, {"query": "cache", "limit": 10**30})
    said = huge.payload.get("message", "") + " ".join(huge.payload.get("warnings", []))
    assert "limit" in said
    missing = live("get_neighbors", app, {})
    assert missing.is_error
    assert "nodeId" in missing.payload["message"]


def test_the_sdk_serves_every_tool_and_checks_arguments_against_the_schema(
    app: Decigraph,
) -> None:
    server = build_server(dispatcher_invoke(Dispatcher(build_registry(app))), agent="stdio-agent")

    async def session() -> tuple[list[types.Tool], types.CallToolResult, types.CallToolResult]:
        async with create_connected_server_and_client_session(server) as client:
            listed = await client.list_tools()
            made = await client.call_tool(
                "log_decision",
                {
                    "decision": "Pin Terraform providers to exact versions in every module",
                    "confidence": 0.7,
                    "category": "tooling",
                },
            )
            bad = await client.call_tool("get_decision", {"id": 12})
            return listed.tools, made, bad

    tools, made, bad = anyio.run(session)
    assert [t.name for t in tools] == CSTP_ORDER + DECIGRAPH_TOOLS
    assert made.isError is False
    assert isinstance(made.content[0], types.TextContent)
    assert made.structuredContent is None  # one compact text block, no second copy
    recorded = json.loads(made.content[0].text)
    assert made.content[0].text == json.dumps(recorded, separators=(",", ":"), ensure_ascii=False)
    assert app.store.graph.nodes[recorded["id"]]["recorded_by"] == "stdio-agent"
    assert len(recorded["quality"]["suggestions"]) == 1  # the most useful one, unless asked
    assert bad.isError is True
    assert "Input validation error" in bad.content[0].text  # type: ignore[union-attr]


# --- over HTTP: /mcp behind the bearer tokens --------------------------------------------

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "unit", "version": "0"},
    },
}


def test_mcp_over_http_needs_the_token_and_records_as_its_agent(app: Decigraph) -> None:
    api = create_app(app, TokenTable({TOKEN: "reviewer"}))
    with TestClient(api) as http:
        refused = http.post("/mcp/", json=INIT, headers=HEADERS)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        wrong = http.post("/mcp", json=INIT, headers={**HEADERS, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        auth = {**HEADERS, "Authorization": f"Bearer {TOKEN}"}
        started = http.post("/mcp", json=INIT, headers=auth)  # the bare path is served too
        assert started.status_code == 200, started.text
        assert started.json()["result"]["serverInfo"]["name"] == "decigraph"
        session = {**auth, "mcp-session-id": started.headers["mcp-session-id"]}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post("/mcp/", json=note, headers=session).status_code == 202
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "remember",
                "arguments": {"text": "Finance closes the books on the third working day"},
            },
        }
        answer = http.post("/mcp/", json=call, headers=session).json()["result"]
        assert answer["isError"] is False
        assert "structuredContent" not in answer
        node = json.loads(answer["content"][0]["text"])["id"]
        # the same session without the token is refused, and nothing more is written
        seq = app.store.seq
        again = http.post(
            "/mcp/", json=call, headers={**HEADERS, "mcp-session-id": session["mcp-session-id"]}
        )
        assert again.status_code == 401
        assert app.store.seq == seq
    stored = app.store.graph.nodes[node]
    assert (stored["recorded_by"], stored["text"][:14]) == ("reviewer", "Finance closes")
