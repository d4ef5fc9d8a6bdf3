"""Compaction over a real ``decigraph serve`` (real model, real ChromaDB): a history written to
the log beforehand is levelled by age against the server's clock, a decision others rely on
stays whole, ``setPreserve`` is a logged write that survives the server, and bad params are
JSON-RPC errors naming the field."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from graph.drafts import DecisionDraft
from graph.store import DecisionStore, StoreOptions
from graph.timeutil import utc_now
from tests.support.rpc import serving

pytestmark = pytest.mark.e2e

TOKEN = "agent-a-token-compaction-0123"

# An SRE team's history: (key, statement, age in days, category, confidence, pattern, outcome).
# fmt: off
HISTORY: list[tuple[str, str, int, str, float, str | None, str | None]] = [
    ("k8s", "Run every service on the shared Kubernetes cluster", 300, "architecture", 0.85,
     None, "success"),
    ("slo", "Page on SLO burn rate instead of raw error counts", 2, "process", 0.8,
     None, "success"),
    ("canary", "Roll out risky changes as 5% canaries", 20, "process", 0.7,
     "gradual rollout", "success"),
    ("freeze", "Freeze deploys during the Black Friday week", 60, "process", 0.9,
     None, "partial"),
    ("flags", "Ship unfinished features dark behind feature flags", 120, "process", 0.75,
     "gradual rollout", "success"),
    ("ring", "Deploy to internal users before customers", 140, "process", 0.7,
     "gradual rollout", "success"),
    ("bigbang", "Migrate all tenants to the new scheduler in one weekend", 200, "process", 0.6,
     "big-bang cutover", "failure"),
    ("dns", "Cut DNS over to the new provider in one change", 230, "process", 0.65,
     "big-bang cutover", "failure"),
    ("oncall", "Run a weekly on-call handover meeting", 100, "process", 0.6,
     None, None),
]
# fmt: on
DEPENDENTS = ["ingress controller", "batch scheduler", "metrics stack", "CI runners"]


def write_history(data: Path) -> dict[str, str]:
    """The history, written to the store before the server starts (as an import would)."""
    ids: dict[str, str] = {}
    store = DecisionStore.open(data, StoreOptions(fsync="never"))
    try:
        now = utc_now()
        for key, text, days, category, confidence, pattern, _ in HISTORY:
            draft = DecisionDraft(
                text=text,
                category=category,
                confidence=confidence,
                pattern=pattern,
                created_at=now - timedelta(days=days),
            )
            ids[key] = store.record(draft, "sre-lead").id
        for name in DEPENDENTS:
            draft = DecisionDraft(text=f"Run the {name} on the shared Kubernetes cluster")
            ids[name] = store.record(draft, "sre-lead").id
            store.link(ids[name], ids["k8s"], "depends_on", "sre-lead")
        for key, *_, outcome in HISTORY:
            if outcome:
                store.review(ids[key], outcome, "sre-lead")
    finally:
        store.close()
    return ids


def test_compaction_over_the_wire(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = write_history(data)
    with serving(data, TOKEN) as rpc:
        counted = rpc.ok("cstp.compact", {"dryRun": True})
        assert counted["compacted"] == 13
        assert counted["levels"] == {"full": 7, "summary": 1, "digest": 1, "wisdom": 4}
        assert (counted["structural"], counted["preserved"], counted["dryRun"]) == (1, 0, True)

        page = rpc.ok("cstp.getCompacted", {"category": "process"})
        assert [d["id"] for d in page["decisions"]] == [
            ids[k] for k in ("slo", "canary", "freeze", "oncall")
        ]
        assert [d["level"] for d in page["decisions"]] == ["full", "summary", "digest", "full"]
        assert page["levels"] == {"full": 2, "summary": 1, "digest": 1, "wisdom": 4}
        assert page["decisions"][1]["pattern"] == "gradual rollout"
        assert page["decisions"][2]["oneLine"] == "Freeze deploys during the Black Friday week"
        k8s = rpc.ok("cstp.getCompacted", {"category": "architecture"})["decisions"]
        assert [(d["id"], d["level"], d.get("structural")) for d in k8s] == [
            (ids["k8s"], "full", True)
        ]

        wisdom = rpc.ok("cstp.getWisdom", {"minDecisions": 4})
        assert wisdom["categoriesAnalyzed"] == 1
        entry = wisdom["wisdom"][0]
        assert (entry["category"], entry["decisions"], entry["successRate"]) == ("process", 4, 0.5)
        assert [p["text"] for p in entry["keyPrinciples"]] == [
            "big-bang cutover",
            "gradual rollout",
        ]
        assert entry["commonFailureMode"] == "big-bang cutover"

        kept = rpc.ok("cstp.setPreserve", {"decision_id": ids["dns"]})
        assert (kept["success"], kept["changed"]) == (True, True)
        assert rpc.ok("cstp.getDecision", {"id": ids["dns"]})["decision"]["preserve"] is True
        assert rpc.ok("cstp.getWisdom", {"minDecisions": 4})["wisdom"] == []
        missing = rpc.ok("cstp.setPreserve", {"id": "0000dead"})
        assert missing["error"] == "Decision not found: 0000dead"
        assert missing["success"] is False

        refused = rpc.call("cstp.getCompacted", {"limit": "10"})["error"]
        assert (refused["code"], refused["data"]["field"]) == (-32602, "limit")
        refused = rpc.call("cstp.setPreserve", {"decisionId": "../../etc/passwd"})["error"]
        assert (refused["code"], refused["data"]["field"]) == (-32602, "decisionId")
        refused = rpc.call("cstp.compact", {"dryRun": "false"})["error"]
        assert (refused["code"], refused["data"]["field"]) == (-32602, "dryRun")

    # The flag is in the log: a store opened after the server has it.
    store = DecisionStore.open(data, StoreOptions(fsync="never", read_only=True))
    try:
        assert store.get(ids["dns"]).preserve is True
        assert store.get(ids["bigbang"]).preserve is None
    finally:
        store.close()
