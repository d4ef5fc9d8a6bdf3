"""CSTP's shapes for ``cstp.ready`` and ``cstp.getSessionContext``, beside decigraph's.

``ready`` answers ``{actions, total, filtered, warnings?}`` with CSTP's detectors (overdue
reviews, stale pending decisions, calibration drift) and decigraph's; ``getSessionContext``
answers CSTP's keys (``agentProfile``, ``relevantDecisions``...) and decigraph's ``context``.
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
    with fake_app(tmp_path / "data", 13) as made:
        yield made


def call(app: Decigraph, method: str, params: dict[str, Any], agent: str = "ops") -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer: dict[str, Any] = Dispatcher(build_registry(app)).handle(request, CallContext(agent))
    return answer


def dated(app: Decigraph, text: str, days: int, **fields: Any) -> str:
    draft = DecisionDraft(text=text, created_at=START - timedelta(days=days), **fields)
    return app.store.record(draft, "importer").id


def review_by(days_ago: int) -> Any:
    return START - timedelta(days=days_ago)


def platform(app: Decigraph) -> dict[str, str]:
    """A platform team's open work: overdue reviews, stale decisions, one shaky bet."""
    ids = {
        "canary": dated(app, "Roll out risky changes as 5% canaries", 40, stakes="high",
                        category="process", review_by=review_by(3)),
        "flags": dated(app, "Delete stale feature flags after 60 days", 50, stakes="medium",
                       category="process", review_by=review_by(10)),
        "docs": dated(app, "Keep runbooks next to the code", 45, stakes="low",
                      category="process", review_by=review_by(1)),
        "future": dated(app, "Move logs to Loki", 10, category="tooling",
                        review_by=START + timedelta(days=20)),
        "spot": dated(app, "Run batch jobs on spot instances", 90, category="architecture"),
        "helm": dated(app, "Package services as Helm charts", 35, category="tooling"),
        "fresh": dated(app, "Adopt OpenTelemetry for traces", 5, category="tooling"),
    }  # fmt: skip
    done = dated(app, "Use PgBouncer in front of Postgres", 80, category="architecture",
                 review_by=review_by(30))  # fmt: skip
    rpc_result(app, "reviewDecision", {"id": done, "outcome": "success"})
    ids["shaky"] = rpc_result(
        app,
        "recordDecision",
        {"decision": "Migrate billing to the new ledger", "stakes": "critical",
         "confidence": 0.3, "category": "architecture"},
    )["id"]  # fmt: skip
    return ids


def test_ready_answers_cstp_shape_order_and_detectors(app: Decigraph) -> None:
    ids = platform(app)
    key = {v: k for k, v in ids.items()}
    result = rpc_result(app, "ready", {})
    assert set(result) == {"actions", "total", "filtered"}
    seen = [(a["type"], a["priority"], key[a["decisionId"]]) for a in result["actions"]]
    assert seen == [
        ("review_outcome", "high", "canary"),
        ("stale_pending", "high", "spot"),  # 90 days > 60
        ("review_outcome", "medium", "flags"),
        ("stale_pending", "medium", "helm"),  # 35 days
        ("low_confidence", "medium", "shaky"),
        ("review_outcome", "low", "docs"),
    ]
    assert (result["total"], result["filtered"]) == (6, 0)
    canary = result["actions"][0]
    assert canary["reason"] == "Decision needs outcome review (due 2026-02-26, 3d overdue)"
    assert canary["detail"] == "review by 2026-02-26 (3d overdue)"
    assert canary["date"] == "2026-01-20"
    assert canary["category"] == "process"
    assert canary["title"] == canary["text"] == "Roll out risky changes as 5% canaries"
    assert "review_outcome" in canary["suggestion"]
    spot = result["actions"][1]
    assert spot["reason"] == "Decision pending for 90 days with no outcome"
    assert spot["detail"] == "pending 90 days"

    # minPriority drops the rest, counted in ``filtered``; the limit applies after sorting.
    high = rpc_result(app, "ready", {"minPriority": "high", "limit": 1})
    assert [key[a["decisionId"]] for a in high["actions"]] == ["canary"]
    assert (high["total"], high["filtered"]) == (6, 4)
    # One detector, one category; decigraph's old name for overdue reviews still works.
    stale = rpc_result(app, "ready", {"actionTypes": ["stale_pending"], "category": "tooling"})
    assert [key[a["decisionId"]] for a in stale["actions"]] == ["helm"]
    old_name = rpc_result(app, "ready", {"actionTypes": ["review_overdue"]})
    assert {a["type"] for a in old_name["actions"]} == {"review_outcome"}
    # Unknown types match nothing and say so (CSTP only logs them).
    odd = rpc_result(app, "ready", {"actionTypes": ["stale_pending", "refactor_everything"]})
    assert {a["type"] for a in odd["actions"]} == {"stale_pending"}
    assert any("refactor_everything" in w for w in odd["warnings"])
    # The MCP tool's snake_case and agent_id are accepted.
    snake = rpc_result(
        app, "ready", {"min_priority": "medium", "action_types": [], "agent_id": "x"}
    )
    assert snake["filtered"] == 1
    assert "warnings" not in snake


def test_calibration_drift_becomes_an_action(app: Decigraph) -> None:
    for i, days in enumerate((120, 110, 100, 90, 80, 70)):
        node = dated(app, f"Integration choice {i} that held up", days, category="integration",
                     confidence=0.8)  # fmt: skip
        rpc_result(app, "reviewDecision", {"id": node, "outcome": "success"})
    for i, days in enumerate((25, 20, 15, 10, 5)):
        node = dated(app, f"Recent integration choice {i}", days, category="integration",
                     confidence=0.8)  # fmt: skip
        rpc_result(
            app, "reviewDecision", {"id": node, "outcome": "failure" if i < 4 else "success"}
        )
    actions = rpc_result(app, "ready", {"actionTypes": ["calibration_drift"]})["actions"]
    assert [(a["type"], a["priority"], a["category"]) for a in actions] == [
        ("calibration_drift", "high", "integration"),
        ("calibration_drift", "high", "integration"),
    ]
    assert all("decisionId" not in a and "date" not in a and "title" not in a for a in actions)
    assert any(a["reason"].startswith("Integration decisions: Accuracy dropped") for a in actions)
    assert rpc_result(app, "ready", {"category": "security"})["actions"] == []


def test_session_context_answers_cstp_and_decigraph_keys(app: Decigraph) -> None:
    ids = platform(app)
    for i, pattern in enumerate(["strangler fig", "strangler fig", "outbox"]):
        node = dated(app, f"Carve service {i} out of the monolith", 60 + i,
                     category="architecture", confidence=0.7, pattern=pattern)  # fmt: skip
        rpc_result(app, "reviewDecision", {"id": node, "outcome": "success"})
    result = rpc_result(
        app, "getSessionContext", {"taskDescription": "migrate billing to a new ledger"}
    )
    assert result["format"] == "json"
    assert {"relevant", "contradictions", "salient", "blocked", "guardrails"} <= set(
        result["context"]
    )
    # The profile is the caller's own: "agent" recorded one decision, the importer the rest.
    profile = result["agentProfile"]
    assert (profile["totalDecisions"], profile["reviewed"]) == (1, 0)
    assert "tendency" not in profile
    imported = call(app, "getSessionContext", {}, agent="importer")["result"]["agentProfile"]
    assert (imported["totalDecisions"], imported["reviewed"]) == (11, 4)
    assert imported["activeSince"] == "2025-12-01"  # spot, 90 days ago
    assert imported["tendency"] == "underconfident"  # all four succeeded at 0.7
    assert result["relevantDecisions"][0]["id"] == ids["shaky"]
    first = result["relevantDecisions"][0]
    assert set(first) >= {"id", "title", "category", "confidence", "stakes", "status", "date",
                          "distance"}  # fmt: skip
    assert first["date"] == "2026-03-01"
    assert "reasons" not in first
    assert len(result["relevantDecisions"]) <= 10
    assert result["calibrationByCategory"] == {  # PgBouncer has no confidence: not scored
        "architecture": {"brierScore": 0.09, "accuracy": 1.0, "totalDecisions": 3,
                         "reviewedDecisions": 3, "calibrationGap": 0.3,
                         "interpretation": "underconfident"}
    }  # fmt: skip
    queue = result["readyQueue"]
    assert [q["reason"] for q in queue] == ["overdue_review", "stale_pending", "overdue_review",
                                            "stale_pending", "overdue_review"]  # fmt: skip
    assert set(queue[0]) == {"id", "title", "reason", "date", "detail"}
    assert result["confirmedPatterns"] == [
        {"pattern": "strangler fig", "count": 2, "categories": ["architecture"],
         "exampleIds": result["confirmedPatterns"][0]["exampleIds"]}
    ]  # fmt: skip
    assert len(result["confirmedPatterns"][0]["exampleIds"]) == 2
    assert any(g["id"] for g in result["activeGuardrails"])
    assert isinstance(result["queryTimeMs"], int)
    assert "wisdom" not in result
    assert "circuitBreakers" not in result

    # Without a task: no relevant decisions, everything else as before.
    bare = rpc_result(
        app, "getSessionContext", {"include": ["decisions", "ready"], "readyLimit": 2}
    )
    assert bare["relevantDecisions"] == []
    assert len(bare["readyQueue"]) == 2
    assert bare["activeGuardrails"] == []
    assert bare["confirmedPatterns"] == []


def test_session_context_in_markdown(app: Decigraph) -> None:
    platform(app)
    result = call(app, "getSessionContext", {"format": "markdown"})["result"]
    assert set(result) == {"format", "markdown", "queryTimeMs"}  # one copy, not cut
    text = result["markdown"]
    assert text.startswith("## Session context for ops")  # the authenticated agent
    assert "### Pending Actions" in text
    assert "OVERDUE" in text
    assert "STALE" in text
    assert text.rstrip().endswith("records the decision.")
    assert "pre_action" in text
    assert text.index("### Profile") < text.index("### Pending Actions")
    named = rpc_result(
        app,
        "getSessionContext",
        {"format": "markdown", "agentId": "claude-code", "taskDescription": "retire spot",
         "maxChars": 300},
    )  # fmt: skip
    assert named["markdown"].startswith("# Context for: retire spot\n## Session context for "
                                        "claude-code")  # fmt: skip
    assert named["truncated"] is True
    assert len(named["markdown"]) <= 300
    assert "context" not in named


HOSTILE = [
    ("ready", {"minPriority": "urgent"}, "minPriority"),
    ("ready", {"actionTypes": "stale_pending"}, "actionTypes"),
    ("ready", {"actionTypes": ["x" * 500]}, "actionTypes"),
    ("ready", {"category": 7}, "category"),
    ("getSessionContext", {"include": ["everything"]}, "include"),
    ("getSessionContext", {"decisionsLimit": "10"}, "decisionsLimit"),
    ("getSessionContext", {"taskDescription": "x" * 20_000}, "taskDescription"),
    ("getSessionContext", {"format": "yaml"}, "format"),
]


@pytest.mark.parametrize(("method", "params", "field"), HOSTILE)
def test_hostile_params_are_refused_naming_the_field(
    app: Decigraph, method: str, params: dict[str, Any], field: str
) -> None:
    answer = call(app, method, params)
    assert "error" in answer, answer
    assert answer["error"]["code"] == -32602, answer
    assert answer["error"]["data"]["field"].startswith(field), answer


def test_limits_are_clamped_as_cstp_clamps(app: Decigraph) -> None:
    platform(app)
    result = rpc_result(app, "getSessionContext", {"readyLimit": 500, "decisionsLimit": 0})
    assert len(result["readyQueue"]) == 5  # clamped to 20; five to show
    assert any("readyLimit" in w for w in result["warnings"])
