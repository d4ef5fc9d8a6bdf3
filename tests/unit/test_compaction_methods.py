"""Compaction (CSTP F041) on decigraph's salience: ``cstp.compact``, ``cstp.getCompacted``,
``cstp.setPreserve`` and ``cstp.getWisdom`` through the dispatcher (fakes for the model and
ChromaDB).

CSTP's age rule (reviewed decisions: < 7 days full, < 30 summary, < 90 digest, else wisdom;
preserved or pending ones full) holds, except that a decision whose salience reaches the
structural threshold stays full however old it is. Only ``setPreserve`` writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph.drafts import DecisionDraft
from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from service.usecases.compaction import compaction_level, compaction_levels, wisdom
from tests.conftest import START
from tests.support.fakes import fake_app
from tests.support.rpc import written

pytestmark = pytest.mark.unit


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


def dated(app: Decigraph, text: str, days: int, **fields: Any) -> str:
    """A decision made ``days`` before the store clock starts (imported history)."""
    draft = DecisionDraft(text=text, created_at=START - timedelta(days=days), **fields)
    return app.store.record(draft, "importer").id


def review(app: Decigraph, node: str, outcome: str) -> None:
    ok(app, "reviewDecision", {"id": node, "outcome": outcome})


def events(app: Decigraph) -> list[dict[str, Any]]:
    log = app.settings.data_dir / "events.jsonl"
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


# A payments team's history: (key, statement, age in days, category, confidence, pattern,
# outcome). None as outcome: still pending.
# fmt: off
HISTORY: list[tuple[str, str, int, str, float, str | None, str | None]] = [
    ("pg", "Use PostgreSQL 16 as the primary datastore", 400, "architecture", 0.9, None, "success"),
    ("fresh", "Cap API pagination at 200 items", 3, "architecture", 0.8, None, "success"),
    ("summ", "Serve product images through the CDN", 12, "architecture", 0.75, None, "partial"),
    ("dig", "Split the monolith's billing module into a service", 45, "architecture", 0.6,
     "strangler fig migration", "success"),
    ("open", "Evaluate Temporal for payment workflows", 150, "architecture", 0.5, None, None),
    # Old and reviewed: the wisdom of the integration team.
    ("w1", "Retry Stripe webhooks with exponential backoff and jitter", 100, "integration", 0.8,
     "retry with backoff", "success"),
    ("w2", "Retry PayPal IPN callbacks with exponential backoff", 130, "integration", 0.7,
     "retry with backoff", "success"),
    ("w3", "Consume bank statements idempotently keyed by statement id", 160, "integration", 0.9,
     "idempotency keys", "success"),
    ("w4", "Poll the FX rates provider every minute", 210, "integration", 0.6,
     "polling instead of push", "failure"),
    ("w5", "Poll the KYC vendor for verification results", 250, "integration", 0.65,
     "polling instead of push", "partial"),
    ("w6", "Dedupe card-network chargeback files with idempotency keys", 300, "integration", 0.85,
     "idempotency keys", "success"),
    ("w7", "Retry ledger exports to the data warehouse with backoff", 95, "integration", 0.75,
     "retry with backoff", "abandoned"),
    ("sec", "Rotate payment API keys every 90 days", 365, "security", 0.95, None, "success"),
]
# fmt: on
# Recent decisions that rely on PostgreSQL: it becomes structurally important.
DEPENDENTS = ["ledger service", "billing jobs", "refund worker", "audit export"]


def play(app: Decigraph) -> dict[str, str]:
    ids: dict[str, str] = {}
    for key, text, days, category, confidence, pattern, _ in HISTORY:
        fields: dict[str, Any] = {"category": category, "confidence": confidence}
        if pattern:
            fields["pattern"] = pattern
        ids[key] = dated(app, text, days, **fields)
    for name in DEPENDENTS:
        made = ok(app, "recordDecision", {"decision": f"The {name} stores its rows in PostgreSQL"})
        link = {"sourceId": made["id"], "targetId": ids["pg"], "edgeType": "depends_on"}
        ok(app, "linkDecisions", link)
        ids[name] = made["id"]
    for key, *_, outcome in HISTORY:
        if outcome:
            review(app, ids[key], outcome)
    ok(app, "remember", {"text": "Finance asked for daily reconciliation reports", "kind": "fact"})
    return ids


def test_compact_counts_levels_and_salience_keeps_structure_whole(app: Decigraph) -> None:
    ids = play(app)
    assert app.store.salience()[ids["pg"]] >= app.settings.salience_threshold
    before = app.store.seq
    counted = ok(app, "compact", {"dryRun": True})
    assert counted == {
        "compacted": 17,  # 13 dated + 4 dependents; the memory item is no decision
        "preserved": 0,
        "levels": {"full": 7, "summary": 1, "digest": 1, "wisdom": 8},
        "dryRun": True,
        "structural": 1,  # PostgreSQL, 400 days old: wisdom by age alone
        "salienceThreshold": 0.5,
    }
    assert app.store.seq == before  # a recount writes nothing
    assert ok(app, "compact", {"category": "integration"})["levels"] == {
        "full": 0,
        "summary": 0,
        "digest": 0,
        "wisdom": 7,
    }
    assert ok(app, "compact", {"dry_run": False})["dryRun"] is False
    levels = compaction_levels(app, [*ids.values(), "0000dead"])
    assert "0000dead" not in levels
    assert (levels[ids["pg"]], levels[ids["sec"]], levels[ids["open"]]) == (
        "full",
        "wisdom",
        "full",
    )
    assert compaction_level(app, app.store.get(ids["dig"])) == "digest"


def test_structure_lost_is_compaction_regained(app: Decigraph) -> None:
    """Salience is read as the graph stands: once nothing relies on PostgreSQL any more, its
    age decides, as for any other decision."""
    ids = play(app)
    for name in DEPENDENTS[1:]:
        ok(app, "unlinkDecisions", {"sourceId": ids[name], "targetId": ids["pg"]})
    assert app.store.salience()[ids["pg"]] < app.settings.salience_threshold
    assert compaction_level(app, app.store.get(ids["pg"])) == "wisdom"
    counted = ok(app, "compact", {})
    assert (counted["structural"], counted["levels"]["wisdom"]) == (0, 9)


def test_get_compacted_shapes_each_level_newest_first(app: Decigraph) -> None:
    ids = play(app)
    page = ok(app, "getCompacted", {"category": "architecture"})
    assert [d["id"] for d in page["decisions"]] == [
        ids[k] for k in ("fresh", "summ", "dig", "open", "pg")
    ]
    assert page["total"] == 5
    assert page["levels"] == {"full": 3, "summary": 1, "digest": 1, "wisdom": 0}
    by_id = {d["id"]: d for d in page["decisions"]}
    assert by_id[ids["dig"]] == {
        "id": ids["dig"],
        "level": "digest",
        "decision": "Split the monolith's billing module into a service",
        "category": "architecture",
        "date": "2026-01-15",
        "oneLine": "Split the monolith's billing module into a service",
    }
    assert by_id[ids["summ"]] == {
        "id": ids["summ"],
        "level": "summary",
        "decision": "Serve product images through the CDN",
        "category": "architecture",
        "date": "2026-02-17",
        "outcome": "partial",
        "confidence": 0.75,
        "actualConfidence": 0.5,
    }
    structural = by_id[ids["pg"]]
    assert (structural["level"], structural["structural"], structural["date"]) == (
        "full",
        True,
        "2025-01-25",
    )
    assert structural["actualConfidence"] == 1.0
    assert "structural" not in by_id[ids["open"]]
    assert "outcome" not in by_id[ids["open"]]


def test_wisdom_age_decisions_only_when_asked_for(app: Decigraph) -> None:
    ids = play(app)
    default = ok(app, "getCompacted", {})
    assert all(d["level"] != "wisdom" for d in default["decisions"])
    assert default["levels"]["wisdom"] == 8  # counted, though left out
    old = ok(app, "getCompacted", {"level": "wisdom", "limit": 2})
    assert old["total"] == 2
    assert old["levels"] == {
        "full": 0,
        "summary": 0,
        "digest": 0,
        "wisdom": 8,
    }
    assert [d["id"] for d in old["decisions"]] == [ids["w7"], ids["w1"]]
    first = old["decisions"][0]
    assert first["level"] == "full"  # CSTP: forced wisdom comes in the full shape
    assert (first["pattern"], first["actualConfidence"]) == ("retry with backoff", 0.0)
    digests = ok(app, "getCompacted", {"level": "DIGEST"})
    assert [d["id"] for d in digests["decisions"]] == [ids["dig"]]


def test_an_unknown_level_is_ignored_with_a_warning_and_limits_are_clamped(app: Decigraph) -> None:
    play(app)
    page = ok(app, "getCompacted", {"level": "archived", "limit": 0})
    assert page["total"] == 1
    assert page["levels"]["wisdom"] == 8
    assert any(w.startswith("level: 'archived'") for w in page["warnings"])
    assert any(w.startswith("limit") for w in page["warnings"])
    assert ok(app, "getCompacted", {"limit": 10**9})["total"] == 9


def test_set_preserve_writes_once_and_keeps_old_decisions_whole(app: Decigraph) -> None:
    ids = play(app)
    before = app.store.seq
    made = ok(app, "setPreserve", {"decisionId": ids["sec"]}, agent="carol")
    assert written(made) == {
        "success": True,
        "decisionId": ids["sec"],
        "preserve": True,
        "changed": True,
        "version": 3,
    }
    last = events(app)[-1]
    assert (last["op"], last["actor"], last["payload"]["changes"]) == (
        "update",
        "carol",
        {"preserve": True},
    )
    again = ok(app, "setPreserve", {"decision_id": ids["sec"], "preserve": True})
    assert (again["changed"], app.store.seq) == (False, before + 1)  # a no-op writes nothing
    assert ok(app, "getDecision", {"id": ids["sec"]})["decision"]["preserve"] is True
    counted = ok(app, "compact", {})
    assert (counted["preserved"], counted["levels"]["wisdom"]) == (1, 7)
    shown = {d["id"]: d for d in ok(app, "getCompacted", {"level": "full"})["decisions"]}
    assert shown[ids["sec"]]["preserved"] is True
    without = ok(app, "getCompacted", {"includePreserved": False})["decisions"]
    assert ids["sec"] not in {d["id"] for d in without}

    removed = ok(app, "setPreserve", {"id": ids["sec"], "preserve": False})
    assert (removed["preserve"], removed["changed"]) == (False, True)
    assert "preserve" not in app.store.graph.nodes[ids["sec"]]  # removed, not stored as false
    assert "preserve" not in ok(app, "getDecision", {"id": ids["sec"]})["decision"]
    assert ok(app, "compact", {})["levels"]["wisdom"] == 8


def test_set_preserve_reports_unknown_ids_as_a_result(app: Decigraph) -> None:
    play(app)
    fact = ok(app, "remember", {"text": "The auditors visit in June", "kind": "fact"})["id"]
    before = app.store.seq
    for missing in ("0000dead", fact):
        assert written(ok(app, "setPreserve", {"decisionId": missing})) == {
            "success": False,
            "decisionId": missing,
            "preserve": True,
            "error": f"Decision not found: {missing}",
        }
    assert app.store.seq == before


def test_get_wisdom_distils_old_reviewed_decisions(app: Decigraph) -> None:
    ids = play(app)
    found = ok(app, "getWisdom", {})
    entry = {
        "category": "integration",
        "decisions": 7,
        "successRate": 0.571,  # 4 of 7; partial counts as 0
        "keyPrinciples": [
            {
                "text": "retry with backoff",
                "confirmations": 3,
                "exampleIds": [ids["w7"], ids["w1"], ids["w2"]],  # newest first
            },
            {"text": "idempotency keys", "confirmations": 2, "exampleIds": [ids["w3"], ids["w6"]]},
            {
                "text": "polling instead of push",
                "confirmations": 2,
                "exampleIds": [ids["w4"], ids["w5"]],
            },
        ],
        "commonFailureMode": "polling instead of push",
        "avgConfidence": 0.75,
        # (0.2² + 0.3² + 0.1² + 0.6² + 0.15² + 0.15² + 0.75²) / 7
        "brierScore": 0.1582,  # 1.1075 / 7
    }
    assert found == {"wisdom": [entry], "totalDecisions": 7, "categoriesAnalyzed": 1}
    # security has one wisdom-age decision; PostgreSQL is structural, so not wisdom.
    low = ok(app, "getWisdom", {"min_decisions": 1})
    assert [(e["category"], e["decisions"]) for e in low["wisdom"]] == [
        ("integration", 7),
        ("security", 1),
    ]
    assert low["wisdom"][1] == {
        "category": "security",
        "decisions": 1,
        "successRate": 1.0,
        "avgConfidence": 0.95,
        "brierScore": 0.0025,
    }
    assert ok(app, "getWisdom", {"category": "security"})["wisdom"] == []
    assert ok(app, "getWisdom", {"minDecisions": 8})["categoriesAnalyzed"] == 0
    assert wisdom(app, "integration", 7) == [entry]
    assert wisdom(app, min_decisions=1)[1]["category"] == "security"


def test_the_date_is_when_it_happened_if_known(app: Decigraph) -> None:
    node = dated(app, "Adopt trunk-based development", 2, category="process")
    review(app, node, "success")
    assert compaction_level(app, app.store.get(node)) == "full"
    # Recorded two days ago about something decided in the autumn (a trusted backfill).
    app.store.update(node, {"occurred_at": START - timedelta(days=40)}, "importer")
    assert compaction_level(app, app.store.get(node)) == "digest"
    assert ok(app, "getCompacted", {})["decisions"][0]["date"] == "2026-01-20"


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("compact", {"dryRun": "false"}, "dryRun"),
        ("compact", {"category": "astrology"}, "category"),
        ("compact", {"category": ["integration"]}, "category"),
        ("getCompacted", {"limit": "10"}, "limit"),
        ("getCompacted", {"limit": 2.5}, "limit"),
        ("getCompacted", {"level": 3}, "level"),
        ("getCompacted", {"level": "x" * 10_000}, "level"),
        ("getCompacted", {"includePreserved": "no"}, "includePreserved"),
        ("setPreserve", {}, "decisionId"),
        ("setPreserve", {"decisionId": "../../etc/passwd"}, "decisionId"),
        ("setPreserve", {"decisionId": "x" * 100_000}, "decisionId"),
        ("setPreserve", {"decisionId": 12345678}, "decisionId"),
        ("setPreserve", {"decisionId": "KNOWN", "preserve": "yes"}, "preserve"),
        ("setPreserve", {"decisionId": "KNOWN", "preserve": None}, "preserve"),
        ("getWisdom", {"minDecisions": "5"}, "minDecisions"),
        ("getWisdom", {"minDecisions": True}, "minDecisions"),
    ],
)
def test_hostile_params_name_the_field_and_write_nothing(
    app: Decigraph, method: str, params: dict[str, Any], field: str
) -> None:
    known = dated(app, "Keep audit logs for seven years", 100, category="security")
    params = {k: known if v == "KNOWN" else v for k, v in params.items()}
    before = app.store.seq
    error = call(app, method, params)["error"]
    assert error["code"] == -32602, error
    assert error["data"]["field"] == field, error
    assert app.store.seq == before


def test_huge_min_decisions_is_clamped(app: Decigraph) -> None:
    play(app)
    found = ok(app, "getWisdom", {"minDecisions": 10**12})
    assert found["wisdom"] == []
    assert any(w.startswith("minDecisions") for w in found["warnings"])


def test_an_empty_store_compacts_to_nothing(app: Decigraph) -> None:
    assert ok(app, "compact", {})["levels"] == {"full": 0, "summary": 0, "digest": 0, "wisdom": 0}
    assert ok(app, "getCompacted", {}) == {
        "decisions": [],
        "total": 0,
        "levels": {"full": 0, "summary": 0, "digest": 0, "wisdom": 0},
    }
    assert ok(app, "getWisdom", {}) == {"wisdom": [], "totalDecisions": 0, "categoriesAnalyzed": 0}


def test_the_methods_are_listed(app: Decigraph) -> None:
    names = set(build_registry(app).names())
    assert {"cstp.compact", "cstp.getCompacted", "cstp.setPreserve", "cstp.getWisdom"} <= names
