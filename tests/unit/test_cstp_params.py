"""Params as CSTP's clients send them: unknown keys ignored and reported, CSTP's limits clamped,
identity claims refused on writes, and the CSTP fields of a decision kept and returned."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from tests.support.fakes import fake_app

pytestmark = pytest.mark.unit


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", seed=13) as made:
        yield made


def call(app: Decigraph, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer: dict[str, Any] = Dispatcher(build_registry(app)).handle(request, CallContext("a"))
    return answer


def ok(app: Decigraph, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = call(app, method, params)
    assert "error" not in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


CLI_RECORD = {  # `cstp.py record` as the CLI builds it, with --project, --pr and a bridge
    "decision": "Serve product images from the CDN instead of the app servers",
    "confidence": 0.8,
    "category": "architecture",
    "stakes": "medium",
    "context": "Image traffic is 70% of egress and spikes during sales",
    "project_context": {"project": "storefront", "pr": 1287},
    "reasons": [{"type": "empirical", "text": "Egress bill doubled in November", "strength": 0.9}],
    "bridge": {
        "structure": "Images behind a CDN with a one-day TTL",
        "function": "Keep the app servers free for checkout",
        "tolerance": ["stale images for up to a day"],
        "enforcement": ["cache-control headers set by the upload service"],
        "prevention": [],
    },
}


def test_the_clis_record_is_accepted_and_its_project_context_kept(app: Decigraph) -> None:
    made = ok(app, "recordDecision", CLI_RECORD)
    assert "warnings" not in made  # every key the CLI sends is known
    got = ok(app, "getDecision", {"id": made["id"]})["decision"]
    assert (got["project"], got["pr"]) == ("storefront", "1287")
    assert got["project_context"] == {"project": "storefront", "pr": "1287"}
    assert got["bridge"]["tolerance"] == ["stale images for up to a day"]
    assert got["bridge"]["prevention"] == []
    assert got["summary"] == got["decision"] == CLI_RECORD["decision"]
    assert got["recorded_by"] == got["recordedBy"] == "a"
    assert got["created_at"] == got["createdAt"]


def test_cstp_fields_are_kept_verbatim_and_returned(app: Decigraph) -> None:
    deliberation = {
        "inputs": [{"id": "q-1a2b3c4d", "text": "Queried 'CDN': 3 results", "source": "cstp"}],
        "steps": [{"step": 1, "thought": "Egress dominates", "type": "reasoning"}],
        "total_duration_ms": 1200,
    }
    params = {
        "decision": "Move the nightly export to a read replica",
        "deliberation": deliberation,
        "trace": [{"step": 1, "thought": "The primary is at 80% CPU at 2am"}],
        "mentalState": "deliberate",
        "preDecision": {"queryRun": True, "similarFound": 2},
        "kpiIndicators": ["p95 latency", "replica lag"],
        "file": "jobs/export.py",
        "line": 42,
        "commit": "9f1c2ab",
        "agentId": "planner",
    }
    made = ok(app, "recordDecision", params)
    got = ok(app, "getDecision", {"id": made["id"]})["decision"]
    assert got["deliberation"] == deliberation
    assert got["trace"] == params["trace"]
    assert got["mental_state"] == "deliberate"
    assert got["pre_decision"] == {"queryRun": True, "similarFound": 2}
    assert got["kpi_indicators"] == ["p95 latency", "replica lag"]
    assert got["project_context"] == {"file": "jobs/export.py", "line": 42, "commit": "9f1c2ab"}
    # CSTP's quality: deliberation with a reasoning step, a location, a long statement
    assert made["quality"]["score"] == pytest.approx(0.35)


def test_unknown_keys_are_ignored_and_reported_at_every_depth(app: Decigraph) -> None:
    params = {
        "decision": "Adopt OpenTelemetry for tracing",
        "colour": "blue",
        "project_context": {"project": "obs", "repo": "platform/obs"},
        "reasons": [{"type": "analysis", "text": "Vendor neutral", "weight": 3}],
    }
    made = ok(app, "recordDecision", params)
    assert made["warnings"] == [
        "colour: not a known parameter; ignored",
        "project_context.repo: not a known parameter; ignored",
        "reasons.0.weight: not a known parameter; ignored",
    ]
    got = ok(app, "getDecision", {"id": made["id"]})["decision"]
    assert got["project"] == "obs"
    assert "colour" not in got


def test_free_form_objects_keep_their_keys(app: Decigraph) -> None:
    made = ok(app, "recordDecision", {"decision": "Keep it", "preDecision": {"anything": 1}})
    assert "warnings" not in made


def test_limits_are_clamped_as_cstp_clamps_them(app: Decigraph) -> None:
    ok(app, "recordDecision", {"decision": "Use Redis for the session store"})
    answer = ok(app, "queryDecisions", {"query": "session store", "limit": 200})
    assert answer["warnings"] == ["limit: 200 is above 50 for a search; clamped"]
    assert answer["decisions"]
    listed = ok(app, "listDecisions", {"limit": 5000, "offset": -3})
    assert (listed["limit"], listed["offset"]) == (500, 0)
    assert listed["warnings"] == [
        "limit: 5000 is out of range; clamped to 500",
        "offset: -3 is out of range; clamped to 0",
    ]


def test_a_wrong_type_is_still_refused_naming_the_field(app: Decigraph) -> None:
    answer = call(app, "listDecisions", {"limit": "5"})
    assert answer["error"]["data"]["field"] == "limit"
    answer = call(app, "recordDecision", {"decision": "x", "project_context": {"line": "ten"}})
    assert answer["error"]["data"]["field"] == "project_context.line"


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("recordDecision", {"decision": "x", "recorded_by": "b"}, "recorded_by"),
        ("recordDecision", {"decision": "x", "agent": "b"}, "agent"),
        (
            "recordDecision",
            {"decision": "x", "project_context": {"actor": "b"}},
            "project_context.actor",
        ),
        ("remember", {"text": "x", "createdBy": "b"}, "createdBy"),
        ("preAction", {"action": {"description": "x", "reviewedBy": "b"}}, "action.reviewedBy"),
    ],
)
def test_identity_claims_are_refused_on_writes(
    app: Decigraph, method: str, params: dict[str, Any], field: str
) -> None:
    before = app.store.seq
    answer = call(app, method, params)
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"]["field"] == field
    assert answer["error"]["message"] == f"{field}: is set by the bearer token and cannot be sent"
    assert app.store.seq == before


def test_reads_ignore_an_agent_they_do_not_know(app: Decigraph) -> None:
    # checkGuardrails' `agent: {id, url}` is parsed and unused by CSTP; reads only warn.
    answer = ok(
        app, "checkGuardrails", {"action": {"description": "Ship it"}, "agent": {"id": "x"}}
    )
    assert answer["paramWarnings"] == ["agent: not a known parameter; ignored"]
    assert isinstance(answer["warnings"], list)  # the guardrails' own warnings keep their key


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"decision": "x", "deliberation": {"inputs": [{"id": 10**30}]}}, "deliberation"),
        ({"decision": "x", "preDecision": {"queryRun": 2**64}}, "preDecision"),
        ({"decision": "x", "deliberation": {"steps": ["y" * 70_000]}}, "deliberation"),
        # Each fits alone; together they do not: the largest is named.
        (
            {"decision": "x", "trace": [{"t": "y" * 40_000}], "deliberation": {"s": "z" * 30_000}},
            "trace",
        ),
        ({"decision": "x", "project_context": {"pr": [412]}}, "project_context.pr"),
        ({"decision": "x", "extras": {"n": 10**30}}, "extras"),
    ],
)
def test_client_fields_that_the_log_cannot_hold_are_refused(
    app: Decigraph, params: dict[str, Any], field: str
) -> None:
    before = app.store.seq
    answer = call(app, "recordDecision", params)
    assert answer["error"]["code"] == -32602, answer
    assert answer["error"]["data"]["field"] == field
    assert app.store.seq == before  # nothing written, so nothing that would not replay
