"""CSTP's analytics, ready queue and session context over a real ``decigraph serve`` (real
model, real ChromaDB), asked the way CSTP's CLI, dashboard and MCP tools ask: a history written
to the log beforehand, dated against the real clock."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from graph.drafts import DecisionDraft
from graph.store import DecisionStore, StoreOptions
from graph.timeutil import utc_now
from tests.support.rpc import serving

pytestmark = pytest.mark.e2e

TOKEN = "agent-a-token-analytics-0123"

# A data platform team: (key, statement, age in days, category, confidence, outcome, pr).
# fmt: off
HISTORY: list[tuple[str, str, int, str, float, str | None, str | None]] = [
    ("dbt", "Model the warehouse with dbt", 200, "tooling", 0.9, "success", None),
    ("airflow", "Schedule pipelines with Airflow", 180, "tooling", 0.8, "partial", None),
    ("parquet", "Store raw events as Parquet on S3", 150, "architecture", 0.85, "success", None),
    ("iceberg", "Adopt Iceberg tables for the lake", 120, "architecture", 0.9, "failure", None),
    ("cdc", "Capture Postgres changes with Debezium", 100, "architecture", 0.7, "success", None),
    ("gx", "Validate data with Great Expectations", 90, "process", 0.6, "success", None),
    ("contracts", "Require data contracts for new sources", 70, "process", 0.75, None, None),
    ("backfill", "Backfill three years of clickstream", 40, "process", 0.8, None, "812"),
]
# fmt: on


def write_history(data: Path) -> dict[str, str]:
    ids: dict[str, str] = {}
    store = DecisionStore.open(data, StoreOptions(fsync="never"))
    try:
        now = utc_now()
        for key, text, days, category, confidence, _, pr in HISTORY:
            draft = DecisionDraft(
                text=text,
                category=category,
                confidence=confidence,
                project="lakehouse",
                pr=pr,
                reasons=[{"type": "analysis", "text": "weighed against the current stack"}],
                created_at=now - timedelta(days=days),
            )
            ids[key] = store.record(draft, "data-lead").id
        for key, *_, outcome, _ in HISTORY:
            if outcome:
                store.review(ids[key], outcome, "data-lead")
    finally:
        store.close()
    return ids


def test_analytics_and_agent_context_over_the_wire(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = write_history(data)
    with serving(data, TOKEN) as rpc:
        # The CLI: top-level project, snake_case reads.
        cli = rpc.ok("cstp.getCalibration", {"project": "lakehouse"})["overall"]
        assert (cli["total_decisions"], cli["reviewed_decisions"]) == (8, 6)
        assert cli["accuracy"] == 0.75  # (1 + 0.5 + 1 + 0 + 1 + 1) / 6
        assert cli["brier_score"] == cli["brierScore"]
        # The dashboard: {} on the overview; window and drift on the calibration page.
        board = rpc.ok("cstp.getCalibration", {})
        assert {c["category"] for c in board["by_category"]} == {"architecture"}
        assert board["confidenceStats"]["count"] == 8
        windowed = rpc.ok("cstp.getCalibration", {"project": "lakehouse", "window": "30d"})
        assert windowed["overall"] is None
        assert windowed["insufficientData"]["window"] == "30d"
        drift = rpc.ok("cstp.checkDrift", {"thresholdBrier": 0.2, "thresholdAccuracy": 0.15})
        assert drift["driftDetected"] is False
        assert drift["recent"] is None
        # The CLI's reason-stats.
        stats = rpc.ok(
            "cstp.getReasonStats", {"minReviewed": 3, "filters": {"project": "lakehouse"}}
        )
        assert stats["byReasonType"][0]["reasonType"] == "analysis"
        assert stats["byReasonType"][0]["reviewedUses"] == 6

        # The ready queue: both pending decisions are stale (70 and 40 days).
        ready = rpc.ok("cstp.ready", {"actionTypes": ["stale_pending"]})
        assert [a["decisionId"] for a in ready["actions"]] == [ids["contracts"], ids["backfill"]]
        assert [a["priority"] for a in ready["actions"]] == ["high", "medium"]
        assert ready["total"] == 2

        # A stable PR becomes a logged review by the caller, and leaves the queue.
        attributed = rpc.ok("cstp.attributeOutcomes", {"project": "lakehouse"})
        assert [d["id"] for d in attributed["decisions"]] == [ids["backfill"]]
        decision = rpc.ok("cstp.getDecision", {"id": ids["backfill"]})["decision"]
        assert (decision["status"], decision["outcome"]) == ("reviewed", "success")
        ready = rpc.ok("cstp.ready", {"actionTypes": ["stale_pending"]})
        assert [a["decisionId"] for a in ready["actions"]] == [ids["contracts"]]

        # The session context, as the MCP tool asks for it and as JSON.
        text = rpc.ok("cstp.getSessionContext", {"format": "markdown"})
        assert text["markdown"].startswith("## Session context for agent-a")
        assert "STALE" in text["markdown"]
        pack = rpc.ok(
            "cstp.getSessionContext", {"taskDescription": "choose a table format for the lake"}
        )
        assert ids["iceberg"] in [d["id"] for d in pack["relevantDecisions"][:3]]
        # The profile is the caller's own: agent-a recorded none of the data lead's decisions.
        assert pack["agentProfile"] == {"totalDecisions": 0, "reviewed": 0}
        assert "architecture" in pack["calibrationByCategory"]

        # Hostile params: JSON-RPC errors naming the field, never a 500.
        for method, params, field in [
            ("cstp.getCalibration", {"filters": []}, "filters"),
            ("cstp.checkDrift", {"thresholdBrier": "high"}, "thresholdBrier"),
            ("cstp.attributeOutcomes", {"dryRun": True}, "project"),
            ("cstp.ready", {"minPriority": 3}, "minPriority"),
        ]:
            error = rpc.call(method, params)["error"]
            assert error["code"] == -32602, error
            assert error["data"]["field"].startswith(field), error
