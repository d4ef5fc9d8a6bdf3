"""``cstp.setLifecycle`` and ``cstp.forget`` through the dispatcher (fakes for the model and
ChromaDB): logged writes; bringing a rejected decision back is gated like recording it, with
``override``; errors name the field as the client sent it and write nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from tests.support.fakes import fake_app
from tests.support.rpc import written

POSTGRES = "Use PostgreSQL as the primary datastore for the payments ledger"
MYSQL = "Use MySQL as the primary datastore for the payments ledger"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def call(app: Decigraph, method: str, params: dict[str, Any], agent: str = "a") -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer: dict[str, Any] = Dispatcher(build_registry(app)).handle(request, CallContext(agent))
    return answer


def ok(app: Decigraph, method: str, params: dict[str, Any], agent: str = "a") -> dict[str, Any]:
    answer = call(app, method, params, agent)
    assert "error" not in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def record(app: Decigraph, text: str, **extra: Any) -> str:
    return str(ok(app, "recordDecision", {"decision": text, **extra})["id"])


def salient(app: Decigraph) -> str:
    """PostgreSQL with four dependents: a decision the graph guardrail protects."""
    pg = record(app, POSTGRES, category="architecture")
    for name in ("ledger service", "billing jobs", "refund worker", "audit export"):
        dependent = record(app, f"The {name} stores its rows in the primary datastore")
        ok(app, "linkDecisions", {"sourceId": dependent, "targetId": pg, "edgeType": "depends_on"})
    return pg


def events(app: Decigraph) -> list[dict[str, Any]]:
    log = app.settings.data_dir / "events.jsonl"
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


def test_set_lifecycle_is_logged_and_reported(app: Decigraph) -> None:
    node = record(app, "Cache product pages for five minutes")
    made = ok(app, "setLifecycle", {"id": node, "lifecycle": "rejected", "reason": "stale"}, "b")
    assert written(made) == {
        "success": True,
        "id": node,
        "lifecycle": "rejected",
        "previousLifecycle": "accepted",
        "version": 2,
        "gated": False,
        "guardrailWarnings": [],
        "guardrailOverride": False,
    }
    last = events(app)[-1]
    assert (last["op"], last["actor"], last["payload"]["reason"]) == ("set_lifecycle", "b", "stale")
    assert ok(app, "getDecision", {"id": node})["decision"]["lifecycle"] == "rejected"
    proposed = ok(app, "setLifecycle", {"decisionId": node, "lifecycle": "proposed"})
    assert (proposed["lifecycle"], proposed["gated"]) == ("proposed", True)
    accepted = ok(app, "setLifecycle", {"id": node, "lifecycle": "accepted"})
    assert (accepted["previousLifecycle"], accepted["gated"]) == ("proposed", False)


def test_bringing_back_a_rejected_contradiction_is_gated(app: Decigraph) -> None:
    pg = salient(app)
    mysql = record(app, MYSQL, contradicts=[pg], override={"reason": "legacy ledger, ADR-3"})
    ok(app, "setLifecycle", {"id": mysql, "lifecycle": "rejected"})  # never gated
    before = app.store.seq
    for lifecycle in ("accepted", "proposed"):
        refused = call(app, "setLifecycle", {"id": mysql, "lifecycle": lifecycle})["error"]
        assert refused["code"] == -32004
        violation = refused["data"]["violations"][0]
        assert violation["guardrailId"] == "graph-contradiction"
        assert pg in violation["message"]
    assert app.store.seq == before  # nothing written
    assert ok(app, "getDecision", {"id": mysql})["decision"]["lifecycle"] == "rejected"
    forced = ok(
        app,
        "setLifecycle",
        {"id": mysql, "lifecycle": "accepted", "override": {"reason": "dual-write migration"}},
    )
    assert (forced["lifecycle"], forced["gated"], forced["guardrailOverride"]) == (
        "accepted",
        True,
        True,
    )
    note = events(app)[-1]["payload"]["note"]["guardrailOverride"]
    assert note["reason"] == "dual-write migration"
    assert note["violations"][0]["guardrailId"] == "graph-contradiction"


def test_bringing_back_an_unrelated_decision_passes_the_gate(app: Decigraph) -> None:
    salient(app)
    other = record(app, "Deploy the web tier on Fridays only with a rollback plan")
    ok(app, "setLifecycle", {"id": other, "lifecycle": "rejected"})
    back = ok(app, "setLifecycle", {"id": other, "lifecycle": "accepted"})
    assert (back["gated"], back["guardrailOverride"], back["lifecycle"]) == (
        True,
        False,
        "accepted",
    )


def test_a_superseded_decision_stays_superseded(app: Decigraph) -> None:
    old = record(app, "Run the batch jobs on cron")
    record(app, "Run the batch jobs on Airflow", supersedes=[old])
    made = ok(app, "setLifecycle", {"id": old, "lifecycle": "accepted"})
    assert (made["lifecycle"], made["previousLifecycle"]) == ("superseded", "superseded")


def test_forget_removes_the_node_and_its_edges(app: Decigraph) -> None:
    a = record(app, "Adopt Kafka for the event pipeline")
    b = record(app, "Run Kafka on Kubernetes")
    ok(app, "linkDecisions", {"sourceId": b, "targetId": a, "edgeType": "depends_on"})
    touching = app.store.graph.degree(a)  # the explicit edge and any derived ones
    gone = ok(app, "forget", {"id": a, "reason": "duplicate"}, "c")
    assert written(gone) == {"success": True, "id": a, "kind": "decision", "edgesRemoved": touching}
    assert touching >= 1
    assert ok(app, "getDecision", {"id": a}) == {"found": False, "id": a}
    neighbours = ok(app, "getNeighbors", {"nodeId": b})["neighbors"]
    assert a not in {n["node"]["id"] for n in neighbours}
    last = events(app)[-1]
    assert (last["op"], last["actor"], last["payload"]) == (
        "forget",
        "c",
        {"id": a, "reason": "duplicate"},
    )
    memory = ok(app, "remember", {"text": "The nightly export failed"})["id"]
    assert ok(app, "forget", {"decision_id": memory})["kind"] == "observation"


@pytest.mark.parametrize(
    ("method", "params", "code", "field"),
    [
        ("setLifecycle", {"id": "0000dead", "lifecycle": "accepted"}, -32005, "id"),
        ("setLifecycle", {"decisionId": "0000dead", "lifecycle": "accepted"}, -32005, "id"),
        ("setLifecycle", {"lifecycle": "accepted"}, -32602, "id"),
        ("setLifecycle", {"id": "KNOWN", "lifecycle": "superseded"}, -32602, "lifecycle"),
        ("setLifecycle", {"id": "KNOWN", "lifecycle": "done"}, -32602, "lifecycle"),
        ("setLifecycle", {"id": "KNOWN", "lifecycle": True}, -32602, "lifecycle"),
        ("setLifecycle", {"id": "KNOWN"}, -32602, "lifecycle"),
        ("setLifecycle", {"id": "KNOWN", "lifecycle": "rejected", "actor": "b"}, -32602, "actor"),
        (
            "setLifecycle",
            {"id": "KNOWN", "lifecycle": "rejected", "expectedVersion": 9},
            -32009,
            None,
        ),
        (
            "setLifecycle",
            {"id": "KNOWN", "lifecycle": "rejected", "expectedVersion": "1"},
            -32602,
            "expectedVersion",
        ),
        ("setLifecycle", {"id": "not-an-id", "lifecycle": "accepted"}, -32602, "id"),
        ("forget", {"id": "0000dead"}, -32005, "id"),
        ("forget", {"id": "x" * 10_000}, -32602, "id"),
        ("forget", {}, -32602, "id"),
        ("forget", {"id": "KNOWN", "expectedVersion": 9}, -32009, None),
        ("forget", {"id": "KNOWN", "reason": 5}, -32602, "reason"),
    ],
)
def test_errors_name_the_field_and_write_nothing(
    app: Decigraph, method: str, params: dict[str, Any], code: int, field: str | None
) -> None:
    known = record(app, "Use Redis for session storage")
    params = {k: known if v == "KNOWN" else v for k, v in params.items()}
    before = app.store.seq
    error = call(app, method, params)["error"]
    assert error["code"] == code, error
    if field is not None:
        assert error["data"]["field"] == field
        assert error["message"].startswith(f"{field}: ")
    assert app.store.seq == before


def test_the_methods_are_listed(app: Decigraph) -> None:
    names = build_registry(app).names()
    assert {"cstp.setLifecycle", "cstp.forget"} <= set(names)
