"""CSTP's deliberation tracker: reads tracked per agent, turned into the next decision's
deliberation and related_to, recordThought's three modes, debugTracker, TTLs and caps."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graph.deliberation import (
    DeliberationTracker,
    Related,
    TrackedInput,
    TrackerLimits,
    consume_keys,
    merge_deliberation,
    related_to,
    thought_key,
)
from service.methods import build_registry
from service.methods.tracker import make_observer
from service.methods.views import decision_view
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph, read_node
from service.usecases.rules import Check, Rule
from tests.support.fakes import fake_app
from tests.support.rpc import written

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 11) as made:
        yield made


def rpc(app: Decigraph, method: str, params: Any, agent: str = "agent") -> dict[str, Any]:
    """The whole JSON-RPC answer (result or error) of one call as ``agent``."""
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer = Dispatcher(build_registry(app)).handle(request, CallContext(agent))
    assert isinstance(answer, dict)
    return answer


def ok(app: Decigraph, method: str, params: Any, agent: str = "agent") -> dict[str, Any]:
    answer = rpc(app, method, params, agent)
    assert "error" not in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def error(app: Decigraph, method: str, params: Any, agent: str = "agent") -> dict[str, Any]:
    answer = rpc(app, method, params, agent)
    assert "error" in answer, answer
    err: dict[str, Any] = answer["error"]
    return err


def record(app: Decigraph, text: str, **more: Any) -> dict[str, Any]:
    return ok(app, "recordDecision", {"decision": text, "confidence": 0.8, **more})


def stored(app: Decigraph, node_id: str) -> dict[str, Any]:
    """A decision as getDecision shows it, read without dispatching (which tracks a lookup)."""
    read = read_node(app, node_id)
    assert read is not None
    return decision_view(read)


def session(app: Decigraph, agent: str = "agent", key: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"includeConsumed": True}
    if key is not None:
        params["key"] = key
    return ok(app, "debugTracker", params, agent)


# -- the whole loop over JSON-RPC ---------------------------------------------------------------
def test_reads_before_a_decision_become_its_deliberation(app: Decigraph) -> None:
    pg = record(app, "Use PostgreSQL 16 as the primary datastore for billing")["id"]
    queue = record(app, "Process invoice emails through a Redis-backed job queue")["id"]

    found = ok(app, "queryDecisions", {"query": "which datastore should billing use", "limit": 5})
    ok(app, "getDecision", {"id": pg})
    ok(app, "checkGuardrails", {"action": {"description": "Store invoices in PostgreSQL"}})
    thought = ok(app, "recordThought", {"text": "Invoices need joins across customers and plans"})
    assert written(thought) == {
        "success": True,
        "mode": "pre-decision",
        "tracker_key": "rpc:agent",
        "agent_id": "agent",
    }

    live = session(app)
    assert live["sessions"] == ["rpc:agent"]
    assert live["sessionCount"] == 1
    inputs = live["detail"]["rpc:agent"]["inputs"]
    assert live["detail"]["rpc:agent"]["inputCount"] == 4
    assert [i["type"] for i in inputs] == ["query", "lookup", "guardrail", "reasoning"]
    assert [i["id"][:2] for i in inputs] == ["q-", "l-", "g-", "r-"]
    assert all(len(i["id"]) == 10 for i in inputs)
    assert inputs[0]["text"] == (
        f"Queried 'which datastore should billing use': {len(found['decisions'])} results "
        f"({found['retrievalMode']})"
    )
    assert inputs[1]["text"] == (
        f"Retrieved decision {pg}: Use PostgreSQL 16 as the primary datastore for bil"
    )
    assert inputs[2]["text"] == "Checked 'Store invoices in PostgreSQL': allowed"
    assert [i["source"] for i in inputs] == [
        "cstp:queryDecisions",
        "cstp:getDecision",
        "cstp:checkGuardrails",
        "cstp:recordThought",
    ]
    assert all(i["ageSeconds"] >= 0 for i in inputs)
    assert "consumed" not in live  # nothing consumed yet

    made = record(app, "Keep invoices in PostgreSQL with a read replica for monthly reports")
    assert made["deliberation_auto"] is True
    assert made["deliberation_inputs_count"] == 4
    assert made["related_count"] == len({pg, queue} & {d["id"] for d in found["decisions"]})

    decision = stored(app, made["id"])
    deliberation = decision["deliberation"]
    assert [i["id"] for i in deliberation["inputs"]] == [i["id"] for i in inputs]
    steps = deliberation["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert [s["type"] for s in steps] == ["analysis", "analysis", "constraint", "reasoning"]
    assert all(s["inputs_used"] == [i["id"]] for s, i in zip(steps, inputs, strict=True))
    assert all(s["conclusion"] is False for s in steps)
    assert deliberation["total_duration_ms"] > 0
    related = decision["related_to"]
    assert [r["distance"] for r in related] == sorted(r["distance"] for r in related)
    assert pg in {r["id"] for r in related}
    # a reasoning step scores as CSTP scores it
    assert (
        "record a reasoning step (recordThought) before deciding"
        not in (made["quality"]["suggestions"])
    )

    after = session(app)
    assert after["sessions"] == []
    (consumed,) = after["consumed"]
    assert consumed["status"] == "consumed"
    assert consumed["decisionId"] == made["id"]
    assert consumed["agentId"] == "agent"
    assert consumed["inputCount"] == 4
    assert [s["id"] for s in consumed["inputsSummary"]] == [i["id"] for i in inputs]

    nothing = record(app, "Archive paid invoices to S3 Glacier after two years")
    assert nothing["deliberation_auto"] is False
    assert nothing["deliberation_inputs_count"] == 0
    assert nothing["related_count"] == 0


def test_an_explicit_deliberation_is_kept_and_tracked_steps_continue(app: Decigraph) -> None:
    ok(app, "recordThought", {"text": "Our p99 latency budget is 200 ms"})
    explicit = {
        "inputs": [{"id": "bench-1", "text": "Load test: 180 ms p99 at 2k rps"}],
        "steps": [{"step": 1, "thought": "The cache keeps us inside budget", "type": "analysis"}],
        "convergence_point": 1,
    }
    made = record(app, "Cache product pages in Varnish for 60 seconds", deliberation=explicit)
    assert made["deliberation_auto"] is True
    assert made["deliberation_inputs_count"] == 2
    deliberation = stored(app, made["id"])["deliberation"]
    assert deliberation["inputs"][0]["id"] == "bench-1"
    assert [s["step"] for s in deliberation["steps"]] == [1, 2]
    assert deliberation["steps"][1]["thought"] == "Our p99 latency budget is 200 ms"
    assert deliberation["convergence_point"] == 1
    assert "total_duration_ms" not in deliberation  # one tracked input: no span


def test_scoped_sessions_are_consumed_in_cstps_order(app: Decigraph) -> None:
    said = {
        "agent:planner:decision:d-42": {"agentId": "planner", "decisionId": "d-42"},
        "decision:d-42": {"decisionId": "d-42"},
        "agent:planner": {"agent_id": "planner"},
        "agent:reviewer": {"agentId": "reviewer"},
    }
    for key, scope in said.items():
        answer = ok(app, "recordThought", {"text": f"thought for {key}", **scope, "id": "x"})
        assert answer["tracker_key"] == key  # ``id`` is ignored once a scope is given
        assert answer["agent_id"] == scope.get("agentId", scope.get("agent_id", "agent"))
    ok(app, "recordThought", {"text": "thought for rpc:agent"})

    made = record(
        app, "Split the planner service out of the monolith", agentId="planner", decisionId="d-42"
    )
    assert made["deliberation_inputs_count"] == 4
    thoughts = [s["thought"] for s in stored(app, made["id"])["deliberation"]["steps"]]
    assert thoughts == [
        "thought for agent:planner:decision:d-42",
        "thought for decision:d-42",
        "thought for agent:planner",
        "thought for rpc:agent",
    ]
    assert session(app)["sessions"] == ["agent:reviewer"]  # another scope stays
    consumed = session(app)["consumed"]
    assert {c["key"] for c in consumed} == {
        "agent:planner:decision:d-42",
        "decision:d-42",
        "agent:planner",
        "rpc:agent",
    }
    assert {c["agentId"] for c in consumed} == {"planner"}


def test_a_refused_record_keeps_the_deliberation_for_the_next_attempt(app: Decigraph) -> None:
    app.rules.append(
        Rule(
            id="no-critical-without-review",
            conditions=[Check(field="stakes", value="critical")],
            action="block",
            message="critical changes need an architecture review",
        )
    )
    ok(app, "recordThought", {"text": "Dropping the legacy auth tables frees 40 GB"})
    blocked = ok(
        app,
        "checkGuardrails",
        {"action": {"description": "Drop the legacy auth tables", "stakes": "critical"}},
    )
    assert blocked["allowed"] is False
    texts = [i["text"] for i in session(app)["detail"]["rpc:agent"]["inputs"]]
    assert texts[-1] == "Checked 'Drop the legacy auth tables': blocked (1 violations)"

    refused = error(
        app,
        "recordDecision",
        {"decision": "Drop the legacy auth tables", "stakes": "critical", "confidence": 0.9},
    )
    assert refused["code"] != -32603
    bad = error(app, "recordDecision", {"decision": "Drop them", "confidence": "high"})
    assert bad["data"]["field"] == "confidence"
    assert session(app)["detail"]["rpc:agent"]["inputCount"] == 2  # nothing consumed

    made = record(app, "Archive the legacy auth tables for 90 days before dropping them")
    assert made["deliberation_inputs_count"] == 2


def test_every_agent_sees_and_consumes_only_its_own_sessions(app: Decigraph) -> None:
    ok(app, "recordThought", {"text": "Kafka retention of 7 days covers replays"}, agent="alice")
    ok(app, "recordThought", {"text": "Bob's own note", "agentId": "alice"}, agent="bob")
    assert session(app, "alice")["sessions"] == ["rpc:alice"]
    assert session(app, "bob")["sessions"] == ["agent:alice"]
    params = {"decision": "Keep Kafka retention at 7 days", "agentId": "alice"}
    made = ok(app, "recordDecision", params, agent="bob")
    assert made["deliberation_inputs_count"] == 1  # bob's only, never alice's rpc session
    assert session(app, "bob")["sessions"] == []
    assert session(app, "alice")["detail"]["rpc:alice"]["inputCount"] == 1


def test_debug_tracker_one_key(app: Decigraph) -> None:
    ok(app, "recordThought", {"text": "GraphQL federation adds a hop", "decisionId": "gw"})
    ok(app, "recordThought", {"text": "REST is enough for three clients"})
    one = ok(app, "debugTracker", {"key": "decision:gw"})
    assert one["sessions"] == ["decision:gw"]
    assert one["sessionCount"] == 1
    assert list(one["detail"]) == ["decision:gw"]
    assert "consumed" not in one
    missing = ok(app, "debugTracker", {"key": "decision:none"})
    assert missing == {"sessions": [], "sessionCount": 0, "detail": {}}
    both = ok(app, "debugTracker", {})
    assert both["sessions"] == ["decision:gw", "rpc:agent"]  # sorted by key


# -- recordThought after a decision ------------------------------------------------------------
def test_a_thought_after_the_decision_appends_a_reasoning_step(app: Decigraph) -> None:
    made = record(app, "Move CI runners to ARM instances to halve build costs")
    first = ok(app, "recordThought", {"id": made["id"], "text": "Builds got 12% faster too"})
    assert written(first) == {
        "success": True,
        "mode": "post-decision",
        "decision_id": made["id"],
        "step_number": 1,
    }
    second = ok(app, "recordThought", {"id": made["id"], "text": "Docker images need arm64"})
    assert second["step_number"] == 2
    steps = stored(app, made["id"])["deliberation"]["steps"]
    assert [(s["step"], s["type"], s["conclusion"]) for s in steps] == [
        (1, "reasoning", False),
        (2, "reasoning", False),
    ]
    assert steps[1]["thought"] == "Docker images need arm64"
    assert session(app)["sessions"] == []  # appended, not tracked


def test_a_thought_for_a_missing_decision_names_the_id(app: Decigraph) -> None:
    err = error(app, "recordThought", {"id": "deadbeef", "text": "late thought"})
    assert err["code"] == -32005
    assert err["data"]["field"] == "id"
    memory = ok(app, "remember", {"text": "The staging cluster runs in eu-west-1", "kind": "fact"})
    err = error(app, "recordThought", {"id": memory["id"], "text": "not a decision"})
    assert err["data"]["field"] == "id"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "text"),
        ({"text": ""}, "text"),
        ({"text": 42}, "text"),
        ({"text": "x" * 10_001}, "text"),
        ({"text": "ok", "agentId": {"name": "a"}}, "agentId"),
        ({"text": "ok", "decisionId": 7}, "decisionId"),
        ({"text": "ok", "id": ["a"]}, "id"),
        ({"text": "ok", "agentId": "a" * 501}, "agentId"),
    ],
)
def test_hostile_thoughts_are_refused_naming_the_field(
    app: Decigraph, params: dict[str, Any], field: str
) -> None:
    err = error(app, "recordThought", params)
    assert err["code"] == -32602
    assert err["data"]["field"] == field


@pytest.mark.parametrize(
    ("params", "field"),
    [({"key": 5}, "key"), ({"includeConsumed": "false"}, "includeConsumed")],
)
def test_hostile_debug_params_are_refused(
    app: Decigraph, params: dict[str, Any], field: str
) -> None:
    err = error(app, "debugTracker", params)
    assert err["code"] == -32602
    assert err["data"]["field"] == field


def test_a_full_decision_refuses_one_more_thought_naming_text(app: Decigraph) -> None:
    made = record(app, "Adopt trunk-based development with short-lived branches")
    for n in range(6):
        ok(app, "recordThought", {"id": made["id"], "text": f"{n} " + "long retrospective " * 500})
    err = error(app, "recordThought", {"id": made["id"], "text": "y" * 10_000})
    assert err["code"] == -32602
    assert err["data"]["field"] == "text"


def test_a_chatty_session_still_records_keeping_the_newest_inputs(app: Decigraph) -> None:
    for n in range(40):
        ok(app, "recordThought", {"text": f"note {n}: " + "capacity planning detail " * 80})
    made = record(app, "Provision 30% headroom for the Black Friday peak")
    count = made["deliberation_inputs_count"]
    assert 0 < count < 40
    steps = stored(app, made["id"])["deliberation"]["steps"]
    assert steps[-1]["thought"].startswith("note 39:")
    assert session(app)["sessions"] == []  # what did not fit is dropped with the session


# -- preAction ----------------------------------------------------------------------------------
def test_pre_action_tracks_its_search_and_check_and_feeds_its_auto_record(
    app: Decigraph,
) -> None:
    record(app, "Serve static assets from CloudFront with a one-day TTL")
    answer = ok(
        app,
        "preAction",
        {"action": {"description": "Serve user avatars from CloudFront", "confidence": 0.7}},
    )
    inputs = session(app)["detail"]["rpc:agent"]["inputs"]
    assert [i["type"] for i in inputs] == ["query", "guardrail"]
    assert inputs[0]["text"] == (
        f"Queried 'Serve user avatars from CloudFront': "
        f"{len(answer['relevantDecisions'])} results (hybrid)"
    )
    assert inputs[1]["text"] == "Checked 'Serve user avatars from CloudFront': allowed"

    auto = ok(
        app,
        "preAction",
        {
            "action": {"description": "Cache API responses at the CloudFront edge"},
            "options": {"autoRecord": True},
        },
    )
    assert auto["decisionId"]
    decision = stored(app, auto["decisionId"])
    assert decision["deliberation_auto"] is True
    assert len(decision["deliberation"]["inputs"]) == 4
    assert decision["related_to"]
    assert session(app)["sessions"] == []


# -- the domain tracker ------------------------------------------------------------------------
def _tracked(n: int) -> str:
    return f"{n:08x}"


def counter() -> Any:
    state = {"n": 0}

    def ids() -> str:
        state["n"] += 1
        return _tracked(state["n"])

    return ids


def test_inputs_expire_after_the_input_ttl_and_sessions_after_idling() -> None:
    limits = TrackerLimits(input_ttl=300, session_ttl=1800)
    tracker = DeliberationTracker(counter())
    tracker.track("a", "rpc:a", "reasoning", "old", T0, limits)
    tracker.track("a", "rpc:a", "reasoning", "new", T0 + timedelta(seconds=200), limits)
    later = T0 + timedelta(seconds=350)
    assert [i.text for i in tracker.peek("a", ["rpc:a"], later, limits)] == ["new"]
    assert tracker.sessions("a", later, limits)[0].key == "rpc:a"

    idle = T0 + timedelta(seconds=200 + 1800)
    assert tracker.sessions("a", idle, limits) == []
    (expired,) = tracker.history("a")
    assert expired.status == "expired"
    assert expired.agent_id == "a"
    assert expired.to_dict(idle + timedelta(seconds=5))["consumedAt"] == 5
    assert tracker.history("b") == []


def test_caps_bound_inputs_sessions_and_history() -> None:
    limits = TrackerLimits(max_inputs=3, max_sessions_per_agent=2, max_sessions=3, history_size=2)
    tracker = DeliberationTracker(counter())
    for n in range(5):
        tracker.track("a", "rpc:a", "reasoning", f"t{n}", T0 + timedelta(seconds=n), limits)
    texts = [i.text for i in tracker.peek("a", ["rpc:a"], T0 + timedelta(seconds=5), limits)]
    assert texts == ["t2", "t3", "t4"]

    for n, key in enumerate(["agent:x", "agent:y", "agent:z"]):
        tracker.track("a", key, "reasoning", key, T0 + timedelta(seconds=10 + n), limits)
    now = T0 + timedelta(seconds=20)
    assert [s.key for s in tracker.sessions("a", now, limits)] == ["agent:y", "agent:z"]
    assert [r.key for r in tracker.history("a")] == ["agent:x", "rpc:a"]  # newest first

    tracker.track("b", "rpc:b", "reasoning", "b1", now, limits)
    tracker.track("c", "rpc:c", "reasoning", "c1", now, limits)  # 4th session in all
    live = [s.key for agent in "abc" for s in tracker.sessions(agent, now, limits)]
    assert len(live) == 3
    assert "agent:y" not in live
    assert len(tracker.history("a")) == 2  # history_size per agent


def test_concurrent_tracking_loses_nothing() -> None:
    limits = TrackerLimits(max_inputs=1_000)
    tracker = DeliberationTracker()

    def chatter(n: int) -> None:
        for m in range(50):
            tracker.track("a", "rpc:a", "query", f"{n}-{m}", T0, limits)

    threads = [threading.Thread(target=chatter, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    found = tracker.peek("a", ["rpc:a"], T0, limits)
    assert len(found) == 400
    assert len({i.id for i in found}) == 400


def test_related_to_keeps_the_smallest_distance_and_breaks_ties_by_id() -> None:
    def query(*hits: Related) -> TrackedInput:
        return TrackedInput("q-1", "query", "q", "cstp:queryDecisions", T0, hits)

    inputs = [
        query(Related("bbbb0001", "B", 0.4), Related("aaaa0001", "A", 0.2)),
        query(Related("bbbb0001", "B", 0.2), Related("cccc0001", "C", 0.5)),
    ]
    assert related_to(inputs) == [
        {"id": "aaaa0001", "summary": "A", "distance": 0.2},
        {"id": "bbbb0001", "summary": "B", "distance": 0.2},
        {"id": "cccc0001", "summary": "C", "distance": 0.5},
    ]


def test_keys_and_merging_follow_cstp() -> None:
    assert thought_key("a", "d", "rpc:x") == "agent:a:decision:d"
    assert thought_key(None, "d", "rpc:x") == "decision:d"
    assert thought_key("a", None, "rpc:x") == "agent:a"
    assert thought_key(None, None, "rpc:x") == "rpc:x"
    assert consume_keys("a", "d", "rpc:x") == [
        "agent:a:decision:d",
        "decision:d",
        "agent:a",
        "rpc:x",
    ]
    assert consume_keys(None, None, "rpc:x") == ["rpc:x"]
    tracked = [
        TrackedInput("r-1", "reasoning", "one", "cstp:recordThought", T0),
        TrackedInput("s-2", "stats", "two", "cstp:getReasonStats", T0 + timedelta(seconds=2)),
    ]
    merged = merge_deliberation({"steps": [{"step": 7, "thought": "given"}]}, tracked)
    assert [s["step"] for s in merged["steps"]] == [7, 8, 9]
    assert merged["steps"][2]["type"] == "empirical"
    assert merged["total_duration_ms"] == 2000
    again = merge_deliberation({"inputs": [{"id": "r-1", "text": "one"}]}, tracked)
    assert [i["id"] for i in again["inputs"]] == ["r-1", "s-2"]  # not repeated


def test_a_read_made_while_the_decision_is_written_stays_for_the_next(app: Decigraph) -> None:
    ok(app, "recordThought", {"text": "Blue-green deploys double the fleet for 10 minutes"})

    def meanwhile() -> None:  # another request of the same agent, inside the write
        app.on_gated = None
        ok(app, "recordThought", {"text": "Unrelated: rotate the TLS certificates"})

    app.on_gated = meanwhile
    made = record(app, "Deploy the checkout service blue-green")
    assert made["deliberation_inputs_count"] == 1
    left = session(app)["detail"]["rpc:agent"]["inputs"]
    assert [i["text"] for i in left] == ["Unrelated: rotate the TLS certificates"]


def test_reason_stats_are_tracked_as_cstp_words_them(app: Decigraph) -> None:
    answer = {
        "byReasonType": [{"reasonType": "analysis"}, {"reasonType": "empirical"}],
        "totalDecisions": 12,
        "diversity": {"avgTypesPerDecision": 1.5},
    }
    make_observer(app)("cstp.getReasonStats", None, answer, CallContext("agent"))
    (tracked,) = session(app)["detail"]["rpc:agent"]["inputs"]
    assert tracked["type"] == "stats"
    assert tracked["source"] == "cstp:getReasonStats"
    assert tracked["text"] == "Reviewed reason stats: 2 types, 12 decisions, diversity=1.50"
