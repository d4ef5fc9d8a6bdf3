"""queryDecisions, listDecisions, getStats, listGuardrails and reindex in the shapes CSTP's CLI
and dashboard send and read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from service.usecases.rules import Rule
from tests.support.fakes import fake_app

pytestmark = pytest.mark.unit

DECISIONS: list[dict[str, Any]] = [
    {
        "decision": "Use PostgreSQL for the order service",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.9,
        "project_context": {"project": "orders"},
        "bridge": {"structure": "A relational database", "function": "Keep orders consistent"},
        "tags": ["database"],
    },
    {
        "decision": "Page the on-call engineer only for customer-facing alerts",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.6,
        "project_context": {"project": "ops"},
        "bridge": {"structure": "Alert routing rules", "function": "Reduce alert fatigue"},
    },
    {
        "decision": "Run database migrations in a separate deploy step",
        "category": "process",
        "stakes": "high",
        "confidence": 0.75,
        "project_context": {"project": "orders"},
        "context": "Two outages came from migrations racing the rollout",
    },
    {
        "decision": "Adopt Renovate for dependency updates",
        "category": "tooling",
        "stakes": "low",
        "confidence": 0.8,
        "project_context": {"project": "platform"},
    },
]


def call(app: Decigraph, method: str, params: dict[str, Any], agent: str = "a") -> Any:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer = Dispatcher(build_registry(app)).handle(request, CallContext(agent))
    assert "error" not in answer, answer
    return answer["result"]


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[Decigraph, list[str]]]:
    with fake_app(tmp_path / "data", seed=21) as made:
        ids = [
            call(made, "recordDecision", params, agent="b" if n == 3 else "a")["id"]
            for n, params in enumerate(DECISIONS)
        ]
        call(made, "reviewDecision", {"id": ids[0], "outcome": "success"})
        yield made, ids


def test_an_empty_query_lists_the_newest_decisions(app: tuple[Decigraph, list[str]]) -> None:
    made, ids = app
    answer = call(made, "queryDecisions", {"query": "", "limit": 3})
    assert answer["retrievalMode"] == "list"
    assert [d["id"] for d in answer["decisions"]] == ids[::-1][:3]
    assert {d["distance"] for d in answer["decisions"]} == {0.0}


def test_the_dashboards_top_level_filters_are_honoured(app: tuple[Decigraph, list[str]]) -> None:
    made, _ = app
    answer = call(
        made, "queryDecisions", {"query": "database", "limit": 200, "category": "process"}
    )
    assert answer["decisions"]
    assert {d["category"] for d in answer["decisions"]} == {"process"}
    reviewed = call(made, "queryDecisions", {"query": "database", "hasOutcome": True})
    assert [d["outcome"] for d in reviewed["decisions"]] == ["success"]


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
def test_every_mode_answers_a_numeric_distance(app: tuple[Decigraph, list[str]], mode: str) -> None:
    made, _ = app
    answer = call(made, "queryDecisions", {"query": "database migrations", "retrievalMode": mode})
    assert answer["decisions"]
    for row in answer["decisions"]:
        assert isinstance(row["distance"], float)
        assert 0.0 <= row["distance"] <= 1.0
    distances = [row["distance"] for row in answer["decisions"]]
    assert distances == sorted(distances)


def test_bridge_side_searches_that_side(app: tuple[Decigraph, list[str]]) -> None:
    made, ids = app
    answer = call(
        made, "queryDecisions", {"query": "reduce alert fatigue", "bridgeSide": "function"}
    )
    assert answer["bridgeSide"] == "function"
    # Only decisions describing that side, the matching one first.
    assert [d["id"] for d in answer["decisions"]] == [ids[1], ids[0]]
    structure = call(
        made, "queryDecisions", {"query": "a relational database", "bridgeSide": "structure"}
    )
    assert structure["decisions"][0]["id"] == ids[0]


def test_list_decisions_sorts_searches_and_filters_as_the_dashboard_asks(
    app: tuple[Decigraph, list[str]],
) -> None:
    made, ids = app
    by_confidence = call(made, "listDecisions", {"sort": "confidence", "order": "ASC"})
    confidences = [d["confidence"] for d in by_confidence["decisions"]]
    assert confidences == sorted(confidences)
    by_category = call(made, "listDecisions", {"sort": "category", "order": "asc"})
    categories = [d["category"] for d in by_category["decisions"]]
    assert categories == sorted(categories)
    oldest = call(made, "listDecisions", {"sort": "created_at", "order": "asc"})
    assert [d["id"] for d in oldest["decisions"]] == ids
    found = call(made, "listDecisions", {"search": "migrat outages"})  # words, prefix, context
    assert [d["id"] for d in found["decisions"]] == [ids[2]]
    mine = call(made, "listDecisions", {"agent": "b"})
    assert [d["id"] for d in mine["decisions"]] == [ids[3]]
    day = call(made, "getDecision", {"id": ids[0]})["decision"]["created_at"][:10]
    whole_day = call(made, "listDecisions", {"dateFrom": day, "dateTo": day})
    assert whole_day["total"] == 4  # a bare dateTo is the whole day


def test_get_stats_counts_recent_activity_and_days(app: tuple[Decigraph, list[str]]) -> None:
    made, _ = app
    stats = call(made, "getStats", {})
    assert stats["total"] == 4
    assert stats["recentActivity"] == {"last24h": 4, "last7d": 4, "last30d": 4}
    assert stats["byDay"] == [{"date": stats["byDay"][0]["date"], "count": 4}]
    later = call(made, "getStats", {"dateFrom": "2100-01-01"})
    assert later["total"] == 0


def test_list_guardrails_reads_as_the_cli_reads_it(tmp_path: Path) -> None:
    rule = Rule.model_validate(
        {
            "id": "orders-need-reasons",
            "description": "Orders decisions need a reason",
            "scope": {"project": ["orders"]},
            "conditions": [{"field": "stakes", "op": "eq", "value": "high"}],
            "requirements": [{"field": "reasons", "op": "min_count", "value": 1}],
            "action": "block",
        }
    )
    with fake_app(tmp_path / "data", seed=3) as made:
        made.rules = [rule]
        listed = call(made, "listGuardrails", {})
        first = listed["guardrails"][0]
        assert first["scope"] == ["orders"]
        assert first["conditions"][0]["operator"] == "eq"
        assert first["requirements"][0]["expected"] == 1
        elsewhere = call(made, "listGuardrails", {"scope": "ops"})
        assert "orders-need-reasons" not in {g["id"] for g in elsewhere["guardrails"]}
        assert elsewhere["count"] == len(elsewhere["guardrails"]) == 1  # the graph rule


def test_reindex_rebuilds_and_search_still_answers(app: tuple[Decigraph, list[str]]) -> None:
    made, ids = app
    done = call(made, "reindex", {})
    assert done["success"] is True
    assert done["decisionsIndexed"] == 4
    assert done["message"].startswith("Indexed 4 decisions")
    answer = call(made, "queryDecisions", {"query": "PostgreSQL order service"})
    assert answer["decisions"][0]["id"] == ids[0]
