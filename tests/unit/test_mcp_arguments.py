"""What an agent's call carries besides its values: misspelt and unknown arguments (named on
both transports), echoed input (clipped), quality suggestions (one unless asked), the lean
schemas, the tracker's per-session scope and the quiet end of an MCP HTTP session."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.shared.memory import create_connected_server_and_client_session

from service.mcp.http import QuietClose
from service.mcp.results import blocked_outcome, resolution
from service.mcp.schemas import LogDecisionInput, lean_schema
from service.mcp.server import build_server, dispatcher_invoke
from service.mcp.tools import build_tools, run_tool
from service.methods import build_registry
from service.rpc.errors import ECHO_LIMIT, RpcError, clip_echoes
from service.rpc.lenient import close_match
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from tests.support.fakes import fake_app

pytestmark = pytest.mark.unit

TOOLS = {tool.name: tool for tool in build_tools()}
#: What every tool description and schema may cost a session's context window, together.
TOOL_LIST_BUDGET = 12_000
LONG = "x" * 20_038


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 13) as made:
        yield made


def rpc(app: Decigraph, method: str, params: dict[str, Any], **ctx: Any) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    caller = CallContext(ctx.get("agent", "agent-a"), ctx.get("session"))
    answer: dict[str, Any] = Dispatcher(build_registry(app)).handle(request, caller)
    return answer


# --- misspelt and unknown keys -----------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("confidnce", "confidence"),
        ("supersede", "supersedes"),
        ("overide", "override"),
        ("CompatibleWith", "compatibleWith"),
        ("compatible-with", "compatible_with"),
        ("tag", "tags"),
        ("limt", "limit"),
    ],
)
def test_a_close_key_is_read_as_a_misspelling(key: str, meant: str) -> None:
    known = ["confidence", "supersedes", "override", "compatibleWith", "compatible_with"]
    assert close_match(key, [*known, "tags", "limit", "text"]) == meant


@pytest.mark.parametrize("key", ["repo", "sort", "order", "colour", "agent", "weight", "id"])
def test_cstp_clients_own_extra_keys_and_identities_are_not_misspellings(key: str) -> None:
    known = ["project", "pr", "status", "offset", "category", "agentId", "agent_id", "ids"]
    assert close_match(key, [*known, "strength", "type", "text"]) is None


def test_cstp_refuses_a_misspelt_field_without_writing_and_warns_of_an_unknown_one(
    app: Decigraph,
) -> None:
    seq = app.store.seq
    typo = rpc(app, "recordDecision", {"decision": "Use Postgres for billing", "confidnce": 0.9})
    assert typo["error"]["code"] == -32602
    assert typo["error"]["message"] == "confidnce: not a known parameter; did you mean confidence?"
    assert typo["error"]["data"] == {"field": "confidnce", "suggestion": "confidence"}
    nested = rpc(
        app,
        "recordDecision",
        {"decision": "Use Postgres", "reasons": [{"type": "analysis", "txt": "fast"}]},
    )
    assert nested["error"]["data"] == {"field": "reasons.0.txt", "suggestion": "reasons.0.text"}
    action = rpc(app, "checkGuardrails", {"action": {"description": "x", "supersede": ["a"]}})
    assert action["error"]["data"]["suggestion"] == "action.supersedes"  # extras allowed there
    assert app.store.seq == seq  # nothing written
    made = rpc(app, "recordDecision", {"decision": "Use Postgres for billing", "colour": "red"})
    assert made["result"]["warnings"] == ["colour: not a known parameter; ignored"]


class Recorder:
    """A fake JSON-RPC call: answers from a table, remembers what was asked."""

    def __init__(self, **answers: Mapping[str, Any]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, method: str, params: dict[str, Any]) -> Mapping[str, Any]:
        self.calls.append((method, params))
        return self.answers.get(method.removeprefix("cstp."), {"result": {}})


@pytest.mark.parametrize(
    ("tool", "args", "field", "meant"),
    [
        ("log_decision", {"decision": "d", "confidnce": 0.8}, "confidnce", "confidence"),
        (
            "log_decision",
            {"decision": "d", "overide_reason": "x"},
            "overide_reason",
            "override_reason",
        ),
        (
            "log_decision",
            {"decision": "d", "CompatibleWith": ["a"]},
            "CompatibleWith",
            "compatible_with",
        ),
        ("update_decision", {"id": "a1b2c3d4", "supersede": ["b"]}, "supersede", "supersedes"),
        (
            "pre_action",
            {"action": {"description": "d", "supersede": ["b"]}},
            "action.supersede",
            "action.supersedes",
        ),
        (
            "query_decisions",
            {"query": "q", "filters": {"min_confidnce": 0.5}},
            "filters.min_confidnce",
            "filters.min_confidence",
        ),
        ("recall", {"query": "q", "includeReasons": True}, "includeReasons", "include_reasons"),
    ],
)
def test_a_misspelt_argument_is_refused_before_any_call(
    tool: str, args: dict[str, Any], field: str, meant: str
) -> None:
    calls = Recorder()
    out = run_tool(TOOLS[tool], args, calls)
    assert (out.is_error, out.payload["error"], out.payload["code"]) == (
        True,
        "validation_error",
        -32602,
    )
    assert out.payload["data"] == {"field": field, "suggestion": meant}
    assert out.payload["message"] == f"{field}: not a known argument; did you mean {meant}?"
    assert calls.calls == []  # nothing called, nothing written


def test_unknown_arguments_are_dropped_and_named_at_any_depth() -> None:
    calls = Recorder(checkGuardrails={"result": {"allowed": True, "warnings": []}})
    args = {"query": "q", "colour": "red", "filters": {"project": "p", "shape": "round"}}
    out = run_tool(TOOLS["query_decisions"], args, calls)
    assert calls.calls[0][1]["filters"] == {"project": "p"}
    assert out.payload["warnings"] == [
        "colour: not a known argument; ignored",
        "filters.shape: not a known argument; ignored",
    ]
    # check_action's own warnings are the guardrails': ignored arguments go beside them
    checked = run_tool(TOOLS["check_action"], {"description": "d", "colour": "red"}, calls)
    assert checked.payload["warnings"] == []
    assert checked.payload["paramWarnings"] == ["colour: not a known argument; ignored"]
    # results are compact JSON
    assert checked.text() == json.dumps(checked.payload, separators=(",", ":"))


# --- echoed input ------------------------------------------------------------------------


def test_an_error_never_echoes_more_than_200_characters_of_a_value() -> None:
    said = clip_echoes(f"text: got {LONG!r}; and a key {'k' * 5000} too")
    assert len(said) < 3 * ECHO_LIMIT + 100
    assert "(20038 characters)" in said
    error = RpcError(-32602, "x", {"field": "y" * 900, "nested": [{"v": "z" * 900}]}).to_dict()
    assert len(json.dumps(error)) < 4 * ECHO_LIMIT
    assert clip_echoes("short stays as it is") == "short stays as it is"


def test_a_huge_value_is_clipped_on_every_transport(app: Decigraph) -> None:
    direct = rpc(app, "remember", {"text": LONG, LONG: 1})
    assert len(json.dumps(direct)) < 1_000
    invoke = dispatcher_invoke(Dispatcher(build_registry(app)))
    tool = run_tool(TOOLS["remember"], {"text": LONG}, lambda m, p: invoke(m, p, "agent-a"))
    assert tool.is_error
    assert len(tool.text()) < 1_000
    server = build_server(invoke, agent="agent-a")

    async def schema_refusal() -> types.CallToolResult:
        async with create_connected_server_and_client_session(server) as client:
            return await client.call_tool("recall", {"query": [LONG]})  # not a string

    refused = anyio.run(schema_refusal)
    assert refused.isError is True
    text = refused.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Input validation error")
    assert len(text) < 500


# --- quality suggestions -----------------------------------------------------------------


def test_a_write_answers_the_most_useful_suggestion_unless_asked_for_all(app: Decigraph) -> None:
    made = rpc(app, "recordDecision", {"decision": "Use Postgres for billing", "tags": ["db"]})
    assert made["result"]["quality"]["suggestions"] == ["give reasons of two or more types"]
    every = rpc(app, "recordDecision", {"decision": "Use Redis", "includeSuggestions": True})
    assert len(every["result"]["quality"]["suggestions"]) == 9
    assert every["result"]["quality"]["score"] == 0


# --- lean schemas and a refusal's resolution ---------------------------------------------


def test_the_tool_list_fits_its_budget_as_a_client_receives_it(app: Decigraph) -> None:
    server = build_server(dispatcher_invoke(Dispatcher(build_registry(app))), agent="budget")

    async def listed() -> list[types.Tool]:
        async with create_connected_server_and_client_session(server) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(listed)
    size = len(json.dumps([t.model_dump(exclude_none=True) for t in tools]))
    assert size <= TOOL_LIST_BUDGET, size


def test_a_lean_schema_has_plain_optional_types_and_one_line_nested_objects() -> None:
    schema = lean_schema(LogDecisionInput)
    props = schema["properties"]
    assert props["context"] == {"type": "string"}  # was anyOf [string, null] with default null
    assert props["confidence"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert props["bridge"] == {
        "type": "object",
        "description": "{structure,function,tolerance[],enforcement[],prevention[]}",
    }
    assert props["reasons"]["items"] == {"type": "object"}


def test_a_refusal_names_the_resolutions_the_tool_takes() -> None:
    error = {
        "code": -32004,
        "message": "blocked by guardrails: contradicts accepted decision 4462ebfc",
        "data": {
            "violations": [
                {
                    "guardrailId": "graph-contradiction",
                    "suggestion": "if it replaces 4462ebfc: supersedes: ['4462ebfc']; if both "
                    "hold: compatibleWith: ['4462ebfc']; else override: {reason: ...}",
                },
                {"guardrailId": "no-friday", "message": "not on Fridays"},
            ],
            "conflicts": [
                {"id": "4462ebfc", "tier": "block"},
                {"id": "0badc0de", "tier": "review"},
            ],
        },
    }
    out = blocked_outcome(
        "log_decision", error, ("supersedes", "compatible_with", "override_reason")
    )
    assert out.payload["resolve"] == (
        'Call log_decision again with supersedes:["4462ebfc"] if it replaces them, or '
        'compatible_with:["4462ebfc"] if both hold, or override_reason:"<why>" to record it '
        "anyway."
    )
    violations = out.payload["data"]["violations"]
    assert violations[0]["suggestion"] == out.payload["resolve"]
    assert violations[1] == {"guardrailId": "no-friday", "message": "not on Fridays"}
    assert resolution("set_lifecycle", ["4462ebfc"], ("override_reason",)) == (
        'Call set_lifecycle again with override_reason:"<why>" to record it anyway.'
    )


# --- the tracker keeps each session's reads apart ----------------------------------------


def test_a_decision_takes_only_its_own_mcp_sessions_reads(app: Decigraph) -> None:
    invoke = dispatcher_invoke(Dispatcher(build_registry(app)))
    server = build_server(invoke, agent="agent-a")
    statement = {"confidence": 0.7, "category": "architecture"}

    async def session(query: str | None, decision: str | None) -> dict[str, Any]:
        async with create_connected_server_and_client_session(server) as client:
            if query is not None:
                await client.call_tool("query_decisions", {"query": query})
            if decision is None:
                return {}
            made = await client.call_tool("log_decision", {"decision": decision, **statement})
            return dict(json.loads(made.content[0].text))  # type: ignore[union-attr]

    # reads over /cstp as the same agent, and in an earlier MCP session: neither is attached
    rpc(app, "queryDecisions", {"query": "queue for the reminder jobs"})
    anyio.run(session, "background job queue", None)
    alone = anyio.run(session, None, "Use RQ on Redis for the reminder jobs")
    assert alone["deliberation_auto"] is False
    assert alone["deliberation_inputs_count"] == 0
    # a session's own read is
    own = anyio.run(session, "reminder jobs queue", "Use Celery for the reminder jobs")
    assert own["deliberation_auto"] is True
    assert own["deliberation_inputs_count"] == 1
    # and /cstp's own session still has its query for /cstp's next record
    made = rpc(app, "recordDecision", {"decision": "Use cron for the nightly export"})
    assert made["result"]["deliberation_inputs_count"] == 1
    other = rpc(app, "debugTracker", {}, agent="agent-b")["result"]
    assert other["sessions"] == []  # another agent never sees any of it


# --- the end of an MCP HTTP session ------------------------------------------------------


def test_a_closed_session_stream_is_not_logged_as_an_error() -> None:
    quiet = QuietClose()

    def record(exc: BaseException | None) -> logging.LogRecord:
        info = (type(exc), exc, None) if exc is not None else None
        return logging.LogRecord("mcp", logging.ERROR, __file__, 1, "Error", None, info)

    assert quiet.filter(record(anyio.ClosedResourceError())) is False
    assert quiet.filter(record(ExceptionGroup("g", [anyio.ClosedResourceError()]))) is False
    assert quiet.filter(record(RuntimeError("a real failure"))) is True
    assert quiet.filter(record(None)) is True
