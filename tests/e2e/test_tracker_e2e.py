"""The deliberation tracker over a real ``decigraph serve`` (real model, real ChromaDB): an
agent's searches, lookups, checks and thoughts become the deliberation of the decision it
records next, debugTracker shows them as CSTP's dashboard reads them, a thought after the
decision is a logged write that survives a restart, and bad params name the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.rpc import serving, written

pytestmark = pytest.mark.e2e

TOKEN = "agent-a-token-tracker-0123456"

HISTORY = [
    "Use PostgreSQL 16 as the primary datastore for the billing service",
    "Send invoice emails through a Redis-backed job queue with retries",
    "Run nightly reconciliation of Stripe payouts against the ledger",
]


def test_reads_become_the_next_decisions_deliberation(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving(data, TOKEN) as rpc:
        ids = [
            rpc.ok("cstp.recordDecision", {"decision": t, "confidence": 0.8})["id"] for t in HISTORY
        ]
        assert rpc.ok("cstp.debugTracker", {})["sessions"] == []  # records track nothing

        found = rpc.ok("cstp.queryDecisions", {"query": "where do billing records live"})
        rpc.ok("cstp.getDecision", {"id": ids[0]})
        rpc.ok("cstp.checkGuardrails", {"action": {"description": "Keep invoices in PostgreSQL"}})
        thought = rpc.ok("cstp.recordThought", {"text": "Invoices join customers and plans"})
        assert thought["tracker_key"] == "rpc:agent-a"

        live = rpc.ok("cstp.debugTracker", {"includeConsumed": True})
        assert live["sessions"] == ["rpc:agent-a"]
        detail = live["detail"]["rpc:agent-a"]
        assert detail["inputCount"] == 4
        assert [i["type"] for i in detail["inputs"]] == [
            "query",
            "lookup",
            "guardrail",
            "reasoning",
        ]
        assert set(detail["inputs"][0]) == {"id", "type", "text", "source", "ageSeconds"}
        hits = len(found["decisions"])
        assert detail["inputs"][0]["text"].startswith(
            f"Queried 'where do billing records live': {hits} results ("
        )

        made = rpc.ok(
            "cstp.recordDecision",
            {
                "decision": "Store invoices in PostgreSQL next to the billing ledger",
                "confidence": 0.75,
            },
        )
        assert made["deliberation_auto"] is True
        assert made["deliberation_inputs_count"] == 4
        assert made["related_count"] >= 1
        decision = rpc.ok("cstp.getDecision", {"id": made["id"]})["decision"]
        assert [s["type"] for s in decision["deliberation"]["steps"]] == [
            "analysis",
            "analysis",
            "constraint",
            "reasoning",
        ]
        assert ids[0] in {r["id"] for r in decision["related_to"]}

        after = rpc.ok("cstp.debugTracker", {"includeConsumed": True})
        assert after["consumed"][0]["decisionId"] == made["id"]
        assert after["consumed"][0]["status"] == "consumed"

        step = rpc.ok("cstp.recordThought", {"id": made["id"], "text": "Reports read a replica"})
        assert written(step) == {
            "success": True,
            "mode": "post-decision",
            "decision_id": made["id"],
            "step_number": 5,
        }
        missing = rpc.call("cstp.recordThought", {"id": "0badc0de", "text": "late"})
        assert missing["error"]["data"]["field"] == "id"
        hostile: list[tuple[dict[str, Any], str]] = [
            ({}, "text"),
            ({"text": 5}, "text"),
            ({"text": "x" * 20_000}, "text"),
        ]
        for params, field in hostile:
            error = rpc.call("cstp.recordThought", params)["error"]
            assert error["code"] == -32602
            assert error["data"]["field"] == field
        error = rpc.call("cstp.debugTracker", {"includeConsumed": "yes"})["error"]
        assert error["data"]["field"] == "includeConsumed"

    with serving(data, TOKEN) as rpc:  # the appended step was logged; the tracker is memory
        steps = rpc.ok("cstp.getDecision", {"id": made["id"]})["decision"]["deliberation"]["steps"]
        assert [s["step"] for s in steps] == [1, 2, 3, 4, 5]
        assert steps[-1]["thought"] == "Reports read a replica"
        restarted = rpc.ok("cstp.debugTracker", {"includeConsumed": True})
        assert restarted["sessions"] == ["rpc:agent-a"]  # the lookup just made
        assert "consumed" not in restarted
