"""Every entry point gives the same answer through a real server: the CLI's recall and the
JSON-RPC method, and one guardrail verdict for checkGuardrails, preAction, recordDecision and
updateDecision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_serve import ROOT
from tests.support.rpc import Rpc, serving

TOKEN = "entry-points-token-0123456789"
CLI = (sys.executable, "-m", "service.cli")
RULES = """
- id: no-mongodb
  description: MongoDB is not allowed for new services
  conditions: [{field: decision, op: matches, value: "(?i)mongo ?db"}]
  action: block
  message: "MongoDB is not allowed for new services"
"""
POSTGRES = "Use PostgreSQL 16 as the primary datastore for the payments ledger"
# A plain negation of POSTGRES: whatever else the judge reads, it reads this as contradicting.
REVERSED = "Do not use PostgreSQL 16 as the primary datastore for the payments ledger"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Rpc, Path, str]]:
    data = tmp_path_factory.mktemp("entry") / "data"
    (data / "guardrails").mkdir(parents=True)
    (data / "guardrails" / "rules.yaml").write_text(RULES)
    with serving(data, TOKEN) as rpc:
        yield rpc, data, rpc.url


def verdicts(rpc: Rpc, statement: str, **fields: Any) -> tuple[bool, bool, bool]:
    """Allowed? by checkGuardrails, by preAction, and whether recordDecision wrote it."""
    action = {"description": statement, **fields}
    checked = rpc.ok("cstp.checkGuardrails", {"action": action})["allowed"]
    pre = rpc.ok("cstp.preAction", {"action": action, "options": {"queryLimit": 0}})["allowed"]
    recorded = rpc.call("cstp.recordDecision", {"decision": statement, **fields})
    if "error" in recorded:
        assert recorded["error"]["code"] == -32004, recorded
    return checked, pre, "error" not in recorded


def test_rules_and_the_graph_give_one_verdict(served: tuple[Rpc, Path, str]) -> None:
    rpc, data, _ = served
    assert verdicts(rpc, "Store the product catalogue in MongoDB") == (False, False, False)
    assert verdicts(rpc, "Store the product catalogue in Elasticsearch") == (True, True, True)
    pg = rpc.ok("cstp.recordDecision", {"decision": POSTGRES, "category": "architecture"})["id"]
    for text in (
        "The ledger service writes its journal rows to the primary datastore",
        "Billing jobs read settled payments from the primary datastore",
        "The refund worker locks ledger rows in the primary datastore",
    ):
        # What relies on it is declared compatible with it (the judge's reading of these
        # pairs is not what this test is about).
        made = rpc.ok("cstp.recordDecision", {"decision": text, "compatibleWith": [pg]})
        link = {"sourceId": made["id"], "targetId": pg, "edgeType": "depends_on"}
        rpc.ok("cstp.linkDecisions", link)
    assert verdicts(rpc, REVERSED, category="architecture") == (False, False, False)
    # updateDecision gives the same verdict on a statement changed into the contradiction.
    note = rpc.ok("cstp.recordDecision", {"decision": "Archive settled payments after 90 days"})
    before = (data / "events.jsonl").stat().st_size
    refused = rpc.call("cstp.updateDecision", {"id": note["id"], "updates": {"decision": REVERSED}})
    assert refused["error"]["code"] == -32004
    assert pg in refused["error"]["data"]["violations"][0]["message"]
    assert (data / "events.jsonl").stat().st_size == before  # nothing written
    # The guardrail's own advice works in one call: supersede what it contradicts.
    replaced = rpc.ok(
        "cstp.recordDecision",
        {"decision": REVERSED, "category": "architecture", "supersedes": [pg]},
    )
    assert replaced["guardrail_override"] is False
    assert pg not in {c["id"] for c in replaced.get("conflicts", [])}


def test_update_and_auto_record_are_gated_like_a_record(served: tuple[Rpc, Path, str]) -> None:
    rpc, data, _ = served
    note = rpc.ok("cstp.recordDecision", {"decision": "Run the nightly report at 02:00 UTC"})
    before = (data / "events.jsonl").stat().st_size
    refused = rpc.call(
        "cstp.updateDecision",
        {"id": note["id"], "updates": {"decision": "Move the nightly report to MongoDB"}},
    )
    assert refused["error"]["code"] == -32004
    assert refused["error"]["data"]["violations"][0]["guardrailId"] == "no-mongodb"
    assert (data / "events.jsonl").stat().st_size == before  # nothing written
    forced = rpc.ok(
        "cstp.updateDecision",
        {
            "id": note["id"],
            "updates": {"decision": "Move the nightly report to MongoDB"},
            "override": {"reason": "one-off export agreed with the DBAs"},
        },
    )
    assert forced["guardrail_override"] is True
    assert "one-off export agreed" in (data / "events.jsonl").read_text()
    pre = rpc.ok(
        "cstp.preAction",
        {
            "action": {"description": "Cache sessions in MongoDB", "tags": ["sessions"]},
            "options": {"autoRecord": True},
        },
    )
    assert pre["allowed"] is False
    assert pre["decisionId"] is None
    assert pre["blockReasons"] == ["MongoDB is not allowed for new services"]
    kept = rpc.ok(
        "cstp.preAction",
        {
            "action": {
                "description": "Cache sessions in Redis with a 30 minute TTL",
                "contradicts": [note["id"]],
                "confidence": 0.8,
            },
            "tags": ["sessions"],
            "options": {"autoRecord": True},
        },
    )
    stored = rpc.ok("cstp.getDecision", {"id": kept["decisionId"]})["decision"]
    assert stored["tags"] == ["sessions"]
    neighbours = rpc.ok(
        "cstp.getNeighbors", {"nodeId": kept["decisionId"], "direction": "outgoing"}
    )
    assert {n["edge"]["edgeType"] for n in neighbours["neighbors"]} >= {"contradicts"}


def test_cli_recall_answers_like_the_method(served: tuple[Rpc, Path, str]) -> None:
    rpc, data, url = served
    rpc.ok("cstp.remember", {"text": "Checkout timed out during the Black Friday load test"})
    rpc.ok("cstp.remember", {"text": "We raised the checkout timeout to 30 seconds afterwards"})
    query = {"query": "why did checkout time out?", "limit": 5}
    method = rpc.ok("cstp.recall", query)
    port = url.rsplit(":", 1)[1]
    env = {**os.environ, "CSTP_TOKEN": TOKEN}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "service.cli",
            "recall",
            query["query"],
            "--limit",
            "5",
            "--data-dir",
            str(data),
            "--port",
            port,
            "--json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    cli = json.loads(out.stdout)
    assert [r["id"] for r in cli["results"]] == [r["id"] for r in method["results"]]
    strip = ("queryTimeMs",)
    assert {k: v for k, v in cli.items() if k not in strip} == {
        k: v for k, v in method.items() if k not in strip
    }
