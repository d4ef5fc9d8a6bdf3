"""Circuit breakers over a real ``decigraph serve`` (real model, real ChromaDB): breakers
configured in ``<data-dir>/guardrails/circuit_breakers.yaml``, tripped by failed reviews,
blocking ``checkGuardrails``, ``preAction`` and ``recordDecision``; a short cooldown half-opens
one and lets one probe through; the state is in the log, so a restarted server has it, and
``resetCircuit`` (a ledger event) answers both casings CSTP's clients read."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from graph.store import DecisionStore, StoreOptions
from tests.support.rpc import Rpc, serving

pytestmark = pytest.mark.e2e

TOKEN = "agent-a-token-breakers-0123456"

CONFIG = """\
# Two failed high-stakes outcomes a day pause high-stakes work for an hour; one failed
# security decision pauses security work for a second (so the test sees it half-open).
circuit_breakers:
  - {scope: "stakes:high", failure_threshold: 2, window_ms: 86400000, cooldown_ms: 3600000}
  - {scope: "category:security", failure_threshold: 1, cooldown_ms: 1000}
"""


def record(rpc: Rpc, text: str, **fields: Any) -> str:
    node_id: str = rpc.ok("cstp.recordDecision", {"decision": text, **fields})["id"]
    return node_id


def check(rpc: Rpc, text: str, **fields: Any) -> dict[str, Any]:
    return rpc.ok("cstp.checkGuardrails", {"action": {"description": text, **fields}})


def test_breakers_over_the_wire(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "guardrails").mkdir(parents=True)
    (data / "guardrails" / "circuit_breakers.yaml").write_text(CONFIG)
    with serving(data, TOKEN) as rpc:
        listed = rpc.ok("cstp.listBreakers", {})["breakers"]
        assert [(b["scope"], b["state"], b["failure_threshold"]) for b in listed] == [
            ("category:security", "closed", 1),
            ("stakes:high", "closed", 2),
        ]
        assert rpc.ok("cstp.listGuardrails", {})["count"] == 1  # only the graph guardrail

        first = record(rpc, "Shard the events table by tenant id in one migration", stakes="high")
        second = record(rpc, "Upgrade Kafka from 2.8 to 3.7 without a staging soak", stakes="high")
        for node_id in (first, second):
            rpc.ok("cstp.reviewDecision", {"id": node_id, "outcome": "failure"})
        state = rpc.ok("cstp.getCircuitState", {"scope": "stakes:high"})
        assert (state["state"], state["failureCount"]) == ("open", 2)
        assert [f["decisionId"] for f in state["failures"]] == [first, second]
        assert float(state["openedAt"]) > 1.7e9

        blocked = check(rpc, "Drop the legacy orders table", stakes="high")
        assert blocked["allowed"] is False
        assert blocked["violations"][0]["guardrailId"] == "circuit_breaker:stakes:high"
        assert blocked["violations"][0]["resetAt"]
        assert check(rpc, "Drop the legacy orders table", stakes="medium")["allowed"] is True
        pre = rpc.ok(
            "cstp.preAction",
            {"action": {"description": "Drop the legacy orders table", "stakes": "high"}},
        )
        assert (pre["allowed"], pre["decisionId"]) == (False, None)
        refused = rpc.call(
            "cstp.recordDecision", {"decision": "Drop the legacy orders table", "stakes": "high"}
        )["error"]
        assert refused["data"]["violations"][0]["type"] == "circuit_breaker"

        # A one-second cooldown: open, then half-open with one probe.
        leak = record(rpc, "Log full JWTs at debug level in the auth service", category="security")
        rpc.ok("cstp.reviewDecision", {"id": leak, "outcome": "abandoned"})
        assert check(rpc, "Rotate the signing keys", category="security")["allowed"] is False
        time.sleep(1.2)
        probe = check(rpc, "Rotate the signing keys", category="security")
        assert probe["allowed"] is True
        second_try = check(rpc, "Disable MFA for the CI service account", category="security")
        assert second_try["violations"][0]["state"] == "half_open"

        hostile: list[tuple[dict[str, Any], str]] = [
            ({"scope": 42}, "scope"),
            ({"scope": "stakes:high", "probeFirst": "true"}, "probeFirst"),
            ({}, "scope"),
        ]
        for params, field in hostile:
            error = rpc.call("cstp.resetCircuit", params)["error"]
            assert (error["code"], error["data"]["field"]) == (-32602, field), error
        unknown = rpc.call("cstp.getCircuitState", {"scope": "tag:nothing"})["error"]
        assert unknown["code"] == -32602
        assert "No circuit breaker found for scope: tag:nothing" in unknown["message"]

    # Derived from the log: a restarted server has the open breaker; the reset is logged.
    with serving(data, TOKEN) as rpc:
        assert rpc.ok("cstp.getCircuitState", {"scope": "stakes:high"})["state"] == "open"
        reset = rpc.ok("cstp.resetCircuit", {"scope": "stakes:high", "probeFirst": True})
        assert (reset["previousState"], reset["newState"]) == ("open", "half_open")
        assert (reset["previous_state"], reset["new_state"]) == ("open", "half_open")
        rows = {b["scope"]: b for b in rpc.ok("cstp.listBreakers", {})["breakers"]}
        assert rows["stakes:high"]["state"] == "half_open"
        assert rows["stakes:high"]["cooldown_remaining_ms"] is None
        closed = rpc.call("cstp.resetCircuit", {"scope": "category:security"})["error"]
        assert "Can only reset OPEN breakers, current state: half_open" in closed["message"]

    store = DecisionStore.open(data, StoreOptions(fsync="never", read_only=True))
    try:
        assert store.verify().ok
    finally:
        store.close()
