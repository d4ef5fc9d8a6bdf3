"""CSTP's analytics through the dispatcher: ``getCalibration``, ``checkDrift``,
``getReasonStats`` and ``attributeOutcomes`` (fakes for the model and ChromaDB).

The history below is imported with its real dates (the store clock starts at ``START``, so
"today" is 2026-03-01); the expected figures are worked out by hand from CSTP's formulas.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from graph.drafts import DecisionDraft
from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from tests.conftest import START
from tests.support.fakes import fake_app, rpc_result

pytestmark = pytest.mark.unit


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 11) as made:
        yield made


def call(app: Decigraph, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer: dict[str, Any] = Dispatcher(build_registry(app)).handle(request, CallContext("ana"))
    return answer


def dated(app: Decigraph, text: str, days: int, **fields: Any) -> str:
    """A decision made ``days`` before the store clock starts (imported history)."""
    draft = DecisionDraft(text=text, created_at=START - timedelta(days=days), **fields)
    return app.store.record(draft, "importer").id


# A payments company's history: statement, category, confidence, outcome (None: pending),
# age in days, project.
# fmt: off
HISTORY: list[tuple[str, str, float | None, str | None, int, str]] = [
    ("Use PostgreSQL 16 for the ledger", "architecture", 0.9, "success", 200, "payments"),
    ("Shard the ledger by merchant id", "architecture", 0.9, "failure", 150, "payments"),
    ("Move payouts to an event-sourced model", "architecture", 0.8, "success", 120, "payments"),
    ("Cache FX rates in Redis for 60 seconds", "architecture", 0.7, "partial", 100, "payments"),
    ("Talk gRPC between the billing services", "architecture", 0.6, "success", 80, "payments"),
    ("Keep invoicing inside the monolith", "architecture", 0.5, "failure", 70, "payments"),
    ("Rotate merchant API keys every 90 days", "security", 0.95, "success", 60, "payments"),
    ("Require hardware keys for production access", "security", 0.9, "success", 50, "payments"),
    ("Allow SMS as a second factor for support staff", "security", 0.8, "failure", 40,
     "payments"),
    ("Hold a weekly incident review", "process", 0.7, None, 20, "payments"),
    ("Adopt trunk-based development", "process", None, "success", 10, "payments"),
    ("Serve product search from OpenSearch", "tooling", 0.85, "success", 30, "search"),
]
# fmt: on


def play(app: Decigraph) -> dict[str, str]:
    ids = {}
    for text, category, confidence, outcome, days, project in HISTORY:
        ids[text] = dated(
            app, text, days, category=category, confidence=confidence, project=project
        )
        if outcome is not None:
            rpc_result(app, "reviewDecision", {"id": ids[text], "outcome": outcome})
    return ids


def test_calibration_follows_cstp_formulas_and_serves_both_casings(app: Decigraph) -> None:
    play(app)
    # A memory item is not a decision: it changes nothing below.
    rpc_result(app, "remember", {"text": "The ledger team prefers boring technology"})
    # The CLI sends the project at the top level (CSTP ignores it; decigraph honours it).
    result = rpc_result(app, "getCalibration", {"project": "payments"})
    overall = result["overall"]
    assert overall["totalDecisions"] == overall["total_decisions"] == 11
    assert overall["reviewedDecisions"] == overall["reviewed_decisions"] == 9
    assert overall["accuracy"] == 0.611  # 5.5 / 9
    assert overall["brierScore"] == overall["brier_score"] == 0.218  # 1.9625 / 9
    assert overall["calibrationGap"] == -0.172  # 0.611 - 0.783
    assert overall["interpretation"] == "overconfident"
    assert "window" not in overall
    assert "periodStart" not in overall
    assert result["unscoredDecisions"] == 1  # trunk-based: reviewed, no confidence
    assert result["byConfidenceBucket"] == [
        {"bucket": "0.9-1.0", "decisions": 4, "successRate": 0.75, "expectedRate": 0.95,
         "gap": -0.2, "interpretation": "overconfident"},
        {"bucket": "0.7-0.9", "decisions": 3, "successRate": 0.5, "expectedRate": 0.8,
         "gap": -0.3, "interpretation": "overconfident"},
    ]  # fmt: skip
    assert result["confidenceStats"] == {
        "mean": 0.775, "stdDev": 0.14, "min": 0.5, "max": 0.95, "count": 10,
        "bucketCounts": {"0.5-0.6": 1, "0.6-0.7": 1, "0.7-0.8": 2, "0.8-0.9": 2, "0.9-1.0": 4},
    }  # fmt: skip
    kinds = [(r["type"], r["severity"]) for r in result["recommendations"]]
    assert kinds == [
        ("confidence_adjustment", "warning"),
        ("bucket_warning", "warning"),
        ("bucket_warning", "warning"),
    ]
    assert all(r["message"] for r in result["recommendations"])
    # The dashboard reads by_category: per-category calibration, both casings.
    by_category = {c["category"]: c for c in result["by_category"]}
    assert result["byCategory"] == result["by_category"]
    assert sorted(by_category) == ["architecture", "security"]
    architecture = by_category["architecture"]
    assert (architecture["reviewedDecisions"], architecture["accuracy"]) == (6, 0.583)
    assert (architecture["brier_score"], architecture["calibrationGap"]) == (0.218, -0.15)
    assert result["queryTime"].startswith("2026-03-01T")

    # ``filters`` wins over the top-level spelling of the same filter.
    both = rpc_result(
        app, "getCalibration", {"project": "search", "filters": {"project": "payments"}}
    )
    assert both["overall"]["reviewedDecisions"] == 9
    everything = rpc_result(app, "getCalibration", {})
    assert everything["overall"]["totalDecisions"] == 12


def test_too_little_data_keeps_overall_null_and_says_why(app: Decigraph) -> None:
    play(app)
    result = rpc_result(app, "getCalibration", {"filters": {"category": "tooling"}})
    assert result["overall"] is None
    assert result["insufficientData"]["reviewedDecisions"] == 1
    assert result["insufficientData"]["minDecisions"] == 5
    assert [r["type"] for r in result["recommendations"]] == ["insufficient_data"]
    assert result["byConfidenceBucket"] == []
    # minDecisions below CSTP's floor of 3 still needs 3.
    low = rpc_result(app, "getCalibration", {"filters": {"project": "search", "minDecisions": 1}})
    assert low["overall"] is None
    assert low["insufficientData"]["minDecisions"] == 3


def test_windows_and_date_filters_are_applied(app: Decigraph) -> None:
    play(app)
    result = rpc_result(app, "getCalibration", {"window": "60d", "filters": {"minDecisions": 3}})
    overall = result["overall"]
    assert (overall["window"], overall["periodStart"], overall["periodEnd"]) == (
        "60d",
        "2025-12-31",
        "2026-03-01",
    )
    assert overall["period_start"] == "2025-12-31"
    assert overall["period_end"] == "2026-03-01"
    assert overall["reviewedDecisions"] == 4  # keys, hardware keys, SMS, OpenSearch
    # An unknown window applies no range but is echoed.
    assert rpc_result(app, "getCalibration", {"window": "all"})["overall"]["window"] == "all"
    # since/until (and queryDecisions' dateAfter/dateBefore); a bare until is the whole day.
    # Ages 150 to 70 days; the 70-day one was made at 09:00 on 2025-12-21.
    ranged = {"filters": {"since": "2025-09-01", "until": "2025-12-21", "minDecisions": 3}}
    assert rpc_result(app, "getCalibration", ranged)["overall"]["reviewedDecisions"] == 5
    ranged["filters"]["until"] = "2025-12-21T08:00:00Z"
    assert rpc_result(app, "getCalibration", ranged)["overall"]["reviewedDecisions"] == 4
    aliased = {
        "filters": {"dateAfter": "2025-09-01", "dateBefore": "2025-12-21", "minDecisions": 3}
    }
    assert rpc_result(app, "getCalibration", aliased)["overall"]["reviewedDecisions"] == 5


def test_drift_compares_the_last_30_days_with_before(app: Decigraph) -> None:
    # Integration decisions were reliable until a month ago, then went wrong.
    older = [("Retry Stripe webhooks with backoff", 120, "success"),
             ("Verify PayPal IPN signatures before processing", 110, "success"),
             ("Poll Adyen settlement reports hourly", 100, "success"),
             ("Consume bank statements idempotently", 90, "success"),
             ("Queue outbound SEPA files through one worker", 80, "success"),
             ("Call the tax provider synchronously at checkout", 70, "failure")]  # fmt: skip
    recent = [("Switch card tokenisation to the new vault API", 25, "failure"),
              ("Stream refunds through the new event bus", 20, "failure"),
              ("Call the fraud scorer with a 300 ms timeout", 15, "success"),
              ("Batch chargeback uploads nightly", 10, "failure"),
              ("Cache BIN lookups for a day", 5, "success")]  # fmt: skip
    for text, days, outcome in [*older, *recent]:
        node = dated(app, text, days, category="integration", confidence=0.8)
        rpc_result(app, "reviewDecision", {"id": node, "outcome": outcome})
    result = rpc_result(app, "checkDrift", {"thresholdBrier": 0.2, "thresholdAccuracy": 0.15})
    assert result["driftDetected"] is True
    assert result["historical"] == {"window": "90d+", "brierScore": 0.14, "accuracy": 0.833,
                                    "decisions": 6}  # fmt: skip
    assert result["recent"] == {"window": "30d", "brierScore": 0.4, "accuracy": 0.4,
                                "decisions": 5}  # fmt: skip
    alerts = {a["type"]: a for a in result["alerts"]}
    assert alerts["brier_degradation"]["changePct"] == 185.7
    assert alerts["brier_degradation"]["severity"] == "error"
    assert alerts["accuracy_drop"]["changePct"] == -52.0
    assert alerts["accuracy_drop"]["severity"] == "error"
    assert "Accuracy dropped" in alerts["accuracy_drop"]["message"]
    assert {r["type"] for r in result["recommendations"]} == {"recalibrate", "review_process"}
    # Another category has no history at all.
    quiet = rpc_result(app, "checkDrift", {"category": "security"})
    assert quiet["driftDetected"] is False
    assert quiet["recent"] is None
    assert quiet["historical"] is None
    assert [r["type"] for r in quiet["recommendations"]] == ["insufficient_data"]


def test_reason_stats_count_each_type_once_per_decision(app: Decigraph) -> None:
    def reasons(*kinds: str) -> list[dict[str, Any]]:
        return [{"type": k, "text": f"{k} backs this"} for k in kinds]

    rows = [
        ("Pick Kafka for the order events", ["empirical", "analysis"], 0.8, "success"),
        ("Pick Flink for stream joins", ["analysis", "analysis"], 0.7, "partial"),
        ("Adopt Bazel for the monorepo", ["authority"], 0.9, "failure"),
        ("Move CI to self-hosted runners", ["empirical"], 0.6, "success"),
        ("Adopt a service mesh", ["intuition"], 0.85, None),
    ]
    for text, kinds, confidence, outcome in rows:
        node = dated(app, text, 40, category="tooling", confidence=confidence,
                     reasons=reasons(*kinds))  # fmt: skip
        if outcome:
            rpc_result(app, "reviewDecision", {"id": node, "outcome": outcome})
    dated(app, "Decide nothing about logging yet", 40, category="tooling")  # no reasons
    result = rpc_result(app, "getReasonStats", {"minReviewed": 0})  # CSTP divides by zero
    assert (result["totalDecisions"], result["reviewedDecisions"]) == (5, 4)
    by_type = {e["reasonType"]: e for e in result["byReasonType"]}
    assert by_type["analysis"]["totalUses"] == 2  # Flink lists it twice: one use
    assert by_type["analysis"]["successRate"] == 0.75  # (1 + 0.5) / 2
    assert by_type["intuition"]["reviewedUses"] == 0
    assert by_type["empirical"]["successRate"] == 1.0
    assert result["byReasonType"][0]["reasonType"] == "empirical"
    assert result["diversity"]["avgReasonsPerDecision"] == 1.4
    advice = {r["type"] for r in result["recommendations"]}
    assert {"best_reason_type", "low_diversity", "unused_types"} <= advice
    filtered = rpc_result(app, "getReasonStats", {"filters": {"category": "security"}})
    assert filtered["totalDecisions"] == 0
    assert filtered["byReasonType"] == []


def test_stable_pull_requests_are_reviewed_through_the_log(app: Decigraph) -> None:
    stable = dated(app, "Ship the one-page checkout", 20, project="checkout", pr="482")
    young = dated(app, "Add Apple Pay to checkout", 5, project="checkout", pr="#497")
    no_pr = dated(app, "Drop the guest checkout captcha", 30, project="checkout")
    done = dated(app, "Show totals with tax", 40, project="checkout", pr="301")
    rpc_result(app, "reviewDecision", {"id": done, "outcome": "failure"})
    dated(app, "Index products nightly", 60, project="search", pr="77")
    before = app.store.seq
    dry = rpc_result(app, "attributeOutcomes", {"project": "checkout", "dryRun": True})
    assert app.store.seq == before  # nothing written
    assert dry["processed"] == 3
    assert dry["attributed"]["stable"] == 1
    assert [d["id"] for d in dry["decisions"]] == [stable]
    assert dry["decisions"][0]["reason"] == "PR #482 stable for 20 days"
    assert dry["decisions"][0]["outcome"] == "success"
    assert dry["decisions"][0]["path"] is None

    done_now = rpc_result(app, "attributeOutcomes", {"project": "checkout", "stabilityDays": 14})
    assert app.store.seq == before + 1  # one review event
    assert [d["id"] for d in done_now["decisions"]] == [stable]
    assert done_now["decisions"][0]["updated"] is True
    node = app.store.get(stable)
    assert (node.status, node.outcome) == ("reviewed", "success")
    assert node.review_notes == "PR #482 stable for 20 days"
    assert node.reviewed_by == "agent"
    assert app.store.get(young).status == "pending"
    assert app.store.get(no_pr).status == "pending"
    # Run again: the reviewed one is not pending any more.
    again = rpc_result(app, "attributeOutcomes", {"project": "checkout"})
    assert again["decisions"] == []
    assert app.store.seq == before + 1


HOSTILE = [
    ("getCalibration", {"filters": "payments"}, "filters"),
    ("getCalibration", {"filters": {"since": "last tuesday"}}, "filters.since"),
    ("getCalibration", {"filters": {"until": 20260101}}, "filters.until"),
    ("getCalibration", {"window": 30}, "window"),
    ("getCalibration", {"category": "marketing"}, "category"),
    ("getCalibration", {"since": "x" * 5000}, "since"),
    ("checkDrift", {"thresholdBrier": "0.2"}, "thresholdBrier"),
    ("checkDrift", {"thresholdAccuracy": -1}, "thresholdAccuracy"),
    ("checkDrift", {"thresholdBrier": 1e300}, "thresholdBrier"),
    ("getReasonStats", {"minReviewed": "3"}, "minReviewed"),
    ("getReasonStats", {"filters": {"stakes": ["high"]}}, "filters.stakes"),
    ("attributeOutcomes", {}, "project"),
    ("attributeOutcomes", {"project": ""}, "project"),
    ("attributeOutcomes", {"project": "checkout", "stabilityDays": "14"}, "stabilityDays"),
    ("attributeOutcomes", {"project": "checkout", "dryRun": "false"}, "dryRun"),
    ("attributeOutcomes", {"project": "checkout", "since": "soon"}, "since"),
]


@pytest.mark.parametrize(("method", "params", "field"), HOSTILE)
def test_hostile_params_are_refused_naming_the_field(
    app: Decigraph, method: str, params: dict[str, Any], field: str
) -> None:
    before = app.store.seq
    answer = call(app, method, params)
    assert "error" in answer, answer
    assert answer["error"]["code"] == -32602, answer
    assert answer["error"]["data"]["field"].startswith(field), answer
    assert app.store.seq == before


def test_clamped_and_empty_inputs_answer(app: Decigraph) -> None:
    # An empty store, minimums at zero or past the range: answers, never a division by zero.
    assert rpc_result(app, "getCalibration", {})["overall"] is None
    assert "confidenceStats" not in rpc_result(app, "getCalibration", {})
    assert rpc_result(app, "getReasonStats", {"minReviewed": 0})["byReasonType"] == []
    drift = rpc_result(app, "checkDrift", {"minDecisions": 10**9})
    assert drift["driftDetected"] is False
    answer = rpc_result(app, "getCalibration", {"filters": {"minDecisions": 10**6}})
    assert answer["overall"] is None
