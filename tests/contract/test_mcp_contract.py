"""Every MCP tool of the table (:mod:`tests.contract.mcp_tools`), through the tool layer and
the same JSON-RPC dispatcher ``/mcp`` uses, on a store seeded as the client contract seeds it
(the SDK over real sockets and stdio is ``tests/e2e/test_mcp_e2e.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from service.mcp.server import dispatcher_invoke
from service.mcp.tools import build_tools, run_tool
from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases.rules import load_rules
from tests.contract.clients import Row
from tests.contract.mcp_tools import TOOL_ROWS
from tests.contract.test_contract import RULES, check, fill, seed
from tests.support.fakes import fake_app

pytestmark = pytest.mark.unit

TOOLS = {tool.name: tool for tool in build_tools()}


class InProcess:
    """The contract's seeding client, in-process."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer: dict[str, Any] = self.dispatcher.handle(request, CallContext("agent-a"))
        return answer

    def ok(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.call(method, params)
        assert "error" not in answer, answer
        result: dict[str, Any] = answer["result"]
        return result


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Dispatcher, dict[str, Any]]]:
    data = tmp_path_factory.mktemp("mcp-contract") / "data"
    (data / "guardrails").mkdir(parents=True)
    (data / "guardrails" / "billing.yaml").write_text(RULES)
    with fake_app(data, seed=5) as app:
        app.rules = load_rules([data / "guardrails"])
        dispatcher = Dispatcher(build_registry(app))
        yield dispatcher, seed(InProcess(dispatcher))  # type: ignore[arg-type]


def test_every_tool_has_a_row() -> None:
    assert {row.method for row in TOOL_ROWS} == set(TOOLS)


@pytest.mark.parametrize("row", TOOL_ROWS, ids=[f"{r.method}-{n}" for n, r in enumerate(TOOL_ROWS)])
def test_tool_shapes(seeded: tuple[Dispatcher, dict[str, Any]], row: Row) -> None:
    dispatcher, values = seeded
    invoke = dispatcher_invoke(dispatcher)
    outcome = run_tool(
        TOOLS[row.method],
        fill(row.params, values),
        lambda method, params: invoke(method, params, "agent-a"),
    )
    assert not outcome.is_error, outcome.payload
    problems = [p for spec in row.reads if (p := check(outcome.payload, spec)) is not None]
    assert not problems, (row.method, problems, outcome.payload)


# -- the contradiction guardrail's resolutions through the tools --------------------------------
#: A decision two others rely on, and a statement the fake judge reads as confidently
#: contradicting it (so the tools' resolution arguments are what is under test, not judgment).
RELIED_ON = "Store user sessions in Redis"
RIVAL = "Store user sessions in Memcached"
#: More such statements: a statement declared compatible with a decision is never raised
#: against it again, so each resolution of a write gets its own.
RIVALS = (RIVAL, "Store user sessions in Hazelcast", "Store user sessions in DynamoDB")


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[Callable[[str, dict[str, Any]], Any], str, Any, Any]]:
    """Tools on a fresh store where RIVAL is blocked by RELIED_ON: the tools, RELIED_ON's id,
    a JSON-RPC client and the app (its fake judge)."""
    with fake_app(tmp_path / "data", seed=9) as app:
        dispatcher = Dispatcher(build_registry(app))
        client = InProcess(dispatcher)
        target = client.ok("cstp.recordDecision", {"decision": RELIED_ON})["id"]
        for n in range(2):
            made = client.ok("cstp.recordDecision", {"decision": f"Session reader {n}"})
            link = {"sourceId": made["id"], "targetId": target, "edgeType": "depends_on"}
            client.ok("cstp.linkDecisions", link)
        for rival in RIVALS:
            app.pair_judge.set(RELIED_ON, rival, 0.99)  # type: ignore[attr-defined]
        invoke = dispatcher_invoke(dispatcher)

        def tool(name: str, args: dict[str, Any]) -> Any:
            return run_tool(TOOLS[name], args, lambda m, p: invoke(m, p, "agent-a"))

        yield tool, target, client, app


def tiers(payload: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["tier"] for c in payload.get("conflicts", [])}


def log_args(**extra: Any) -> dict[str, Any]:
    return {"decision": RIVAL, "confidence": 0.8, "category": "architecture", **extra}


def test_check_action_reports_the_block_and_each_resolution_clears_it(guarded: Any) -> None:
    tool, target, _, _ = guarded
    blocked = tool("check_action", {"description": RIVAL})
    assert blocked.payload["allowed"] is False
    assert tiers(blocked.payload) == {target: "block"}
    assert target in blocked.payload["violations"][0]["message"]
    for resolution in ({"compatible_with": [target]}, {"supersedes": [target]}):
        cleared = tool("check_action", {"description": RIVAL, **resolution})
        assert cleared.payload["allowed"] is True, (resolution, cleared.payload)
        assert target not in tiers(cleared.payload)


def test_log_decision_is_refused_then_admitted_by_each_resolution(guarded: Any) -> None:
    tool, target, client, _ = guarded
    before = client.ok("cstp.getStats", {})["total"]
    refused = tool("log_decision", log_args())
    assert refused.is_error
    assert client.ok("cstp.getStats", {})["total"] == before  # nothing written
    compatible = tool("log_decision", log_args(compatible_with=[target]))
    assert not compatible.is_error, compatible.payload
    assert target not in tiers(compatible.payload)
    links = client.ok("cstp.getNeighbors", {"nodeId": compatible.payload["id"]})["neighbors"]
    assert {n["edge"]["edgeType"] for n in links if n["node"]["id"] == target} == {"relates_to"}
    assert tool("log_decision", log_args(decision=RIVALS[1])).is_error
    forced = tool("log_decision", log_args(decision=RIVALS[1], override_reason="ADR-9 says so"))
    assert not forced.is_error, forced.payload
    assert forced.payload["guardrail_override"] is True
    assert tiers(forced.payload) == {target: "block"}
    assert tool("log_decision", log_args(decision=RIVALS[2])).is_error
    replaced = tool("log_decision", log_args(decision=RIVALS[2], supersedes=[target]))
    assert not replaced.is_error, replaced.payload
    old = client.ok("cstp.getDecision", {"id": target})["decision"]
    assert old["lifecycle"] == "superseded"
    assert old["supersededBy"] == [replaced.payload["id"]]


def test_pre_action_passes_the_action_resolutions_on(guarded: Any) -> None:
    tool, target, _, _ = guarded
    options = {"auto_record": True}
    blocked = tool("pre_action", {"action": {"description": RIVAL}, "options": options})
    assert blocked.payload["allowed"] is False
    assert blocked.payload.get("decisionId") is None
    action = {"description": RIVAL, "compatible_with": [target]}
    admitted = tool("pre_action", {"action": action, "options": options})
    assert admitted.payload["allowed"] is True, admitted.payload
    assert admitted.payload["decisionId"]


def test_update_decision_passes_compatible_with_on_with_a_new_statement(guarded: Any) -> None:
    tool, target, client, _ = guarded
    note = client.ok("cstp.recordDecision", {"decision": "Keep sessions for a day"})["id"]
    refused = tool("update_decision", {"id": note, "decision": RIVAL})
    assert refused.is_error
    changed = tool("update_decision", {"id": note, "decision": RIVAL, "compatible_with": [target]})
    assert not changed.is_error, changed.payload
    assert client.ok("cstp.getDecision", {"id": note})["decision"]["decision"] == RIVAL


def test_update_decision_with_compatible_with_alone_withdraws_a_suspicion(guarded: Any) -> None:
    tool, _, client, app = guarded
    lone = client.ok("cstp.recordDecision", {"decision": "Expire idle sessions after a week"})
    text = "Expire idle sessions after an hour"
    app.pair_judge.set("Expire idle sessions after a week", text, 0.8)
    made = client.ok("cstp.recordDecision", {"decision": text})
    assert tiers(made) == {lone["id"]: "review"}
    rows = client.ok("cstp.findContradictions", {})["contradictions"]
    assert [r["status"] for r in rows if {r["a"], r["b"]} == {lone["id"], made["id"]}] == [
        "suspected"
    ]
    alone = tool("update_decision", {"id": made["id"], "compatible_with": [lone["id"]]})
    assert not alone.is_error, alone.payload
    rows = client.ok("cstp.findContradictions", {})["contradictions"]
    assert not [r for r in rows if {r["a"], r["b"]} == {lone["id"], made["id"]}]
    links = client.ok("cstp.getNeighbors", {"nodeId": made["id"]})["neighbors"]
    assert {n["edge"]["edgeType"] for n in links if n["node"]["id"] == lone["id"]} == {"relates_to"}


def test_a_refused_write_names_the_tools_own_arguments_and_the_ids(guarded: Any) -> None:
    tool, target, _, _ = guarded
    refused = tool("log_decision", log_args())
    assert (refused.is_error, refused.payload["error"]) == (True, "guardrail_blocked")
    said = refused.payload["resolve"]
    for argument in (f'supersedes:["{target}"]', f'compatible_with:["{target}"]'):
        assert argument in said, said
    assert "override_reason" in said
    suggestion = refused.payload["data"]["violations"][0]["suggestion"]
    assert f'supersedes:["{target}"]' in suggestion
    assert "compatibleWith" not in refused.text()
    assert "override:" not in refused.text()
    # a misspelt resolution is refused, naming the argument meant; nothing is written
    typo = tool("log_decision", log_args(supersede=[target]))
    assert (typo.is_error, typo.payload["error"]) == (True, "validation_error")
    assert typo.payload["data"] == {"field": "supersede", "suggestion": "supersedes"}
    assert "did you mean supersedes" in typo.payload["message"]


def test_update_decision_supersedes_in_the_same_call(guarded: Any) -> None:
    tool, target, client, _ = guarded
    note = client.ok("cstp.recordDecision", {"decision": "Keep sessions for a day"})["id"]
    refused = tool("update_decision", {"id": note, "decision": RIVAL})
    assert refused.is_error
    assert f'supersedes:["{target}"]' in refused.payload["resolve"]
    replaced = tool("update_decision", {"id": note, "decision": RIVAL, "supersedes": [target]})
    assert not replaced.is_error, replaced.payload
    old = client.ok("cstp.getDecision", {"id": target})["decision"]
    assert (old["lifecycle"], old["supersededBy"]) == ("superseded", [note])
    # a supersession alone, after the fact
    later = client.ok("cstp.recordDecision", {"decision": "Keep sessions for a week"})["id"]
    alone = tool("update_decision", {"id": later, "supersedes": [note]})
    assert (alone.is_error, alone.payload["updated_fields"]) == (False, [])
    assert client.ok("cstp.getDecision", {"id": note})["decision"]["supersededBy"] == [later]
    itself = tool("update_decision", {"id": later, "supersedes": [later]})
    assert itself.payload["data"]["field"] == "supersedes"


def test_pre_action_with_supersedes_is_allowed_and_records_the_replacement(guarded: Any) -> None:
    tool, target, client, _ = guarded
    action = {"description": RIVAL, "supersedes": [target]}
    admitted = tool("pre_action", {"action": action, "options": {"auto_record": True}})
    assert admitted.payload["allowed"] is True, admitted.payload
    old = client.ok("cstp.getDecision", {"id": target})["decision"]
    assert old["supersededBy"] == [admitted.payload["decisionId"]]


def test_lifecycle_tools_and_a_refused_revival_resolved_by_override(guarded: Any) -> None:
    tool, target, client, _ = guarded
    made = tool("log_decision", log_args(override_reason="ADR-9 says so"))
    assert not made.is_error, made.payload
    rejected = tool("set_lifecycle", {"id": made.payload["id"], "lifecycle": "rejected"})
    assert rejected.payload["lifecycle"] == "rejected", rejected.payload
    revived = tool("set_lifecycle", {"id": made.payload["id"], "lifecycle": "accepted"})
    assert (revived.is_error, revived.payload["error"]) == (True, "guardrail_blocked")
    assert "override_reason" in revived.payload["resolve"]
    assert "supersedes" not in revived.payload["resolve"]  # setLifecycle takes no supersedes
    forced = tool(
        "set_lifecycle",
        {"id": made.payload["id"], "lifecycle": "accepted", "override_reason": "ADR-9 again"},
    )
    assert forced.payload["lifecycle"] == "accepted", forced.payload
    replaced = tool("supersede", {"id": target, "superseded_by": made.payload["id"]})
    assert not replaced.is_error, replaced.payload
    assert client.ok("cstp.getDecision", {"id": target})["decision"]["lifecycle"] == "superseded"
    gone = tool("forget", {"id": made.payload["id"], "reason": "a test"})
    assert gone.payload["success"] is True
    assert client.ok("cstp.getDecision", {"id": made.payload["id"]})["found"] is False
