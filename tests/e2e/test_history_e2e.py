"""History through a real ``decigraph serve`` (model, ChromaDB, gate): an agent's week of
decisions about a payments service, then "what did we believe on Tuesday" asked over HTTP.

The session is realistic text with the real guardrails on: decisions depend on each other, one
is reconsidered and superseded, one is reviewed, one contradicts an earlier one, and one is
forgotten. After each step the answers the explorer and the agents ask for are kept; at the end
each is asked again with ``asOf`` (the seq the write answered, and that event's time) and must
be the same. Restarting the server (snapshot on close, replay from the kept checkpoint) must not
change any of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.support.rpc import Rpc, serving

TOKEN = "history-token-0123456789abcdef"

WEEK = [
    (
        "record",
        {
            "decision": "Use PostgreSQL as the system of record for payment intents",
            "category": "architecture",
            "stakes": "high",
            "confidence": 0.85,
            "project": "payments",
            "reasons": [
                {
                    "type": "analysis",
                    "text": "We need serializable transactions for double-entry bookkeeping",
                }
            ],
        },
    ),
    (
        "record",
        {
            "decision": "Publish payment status changes to Kafka topic payments.events",
            "category": "integration",
            "stakes": "medium",
            "confidence": 0.75,
            "project": "payments",
        },
    ),
    ("link", {"from": 1, "to": 0, "edgeType": "depends_on"}),
    (
        "record",
        {
            "decision": "Retry failed card captures three times with exponential backoff",
            "category": "process",
            "stakes": "medium",
            "confidence": 0.7,
            "project": "payments",
        },
    ),
    ("update", {"at": 2, "updates": {"confidence": 0.8, "tags": ["retries", "cards"]}}),
    (
        "review",
        {
            "at": 0,
            "outcome": "success",
            "lessons": "Row-level locking kept the ledger consistent under load",
        },
    ),
    (
        "record",
        {
            "decision": "Deliver payment webhooks to merchants through a Redis queue "
            "drained by a worker pool",
            "category": "architecture",
            "stakes": "medium",
            "confidence": 0.6,
            "project": "payments",
        },
    ),
    (
        "supersede",
        {
            "decision": "Deliver merchant webhooks from an outbox table in PostgreSQL, "
            "polled by the worker pool",
            "category": "architecture",
            "stakes": "medium",
            "confidence": 0.8,
            "project": "payments",
            "old": 3,
        },
    ),
    (
        "record",
        {
            "decision": "Store card numbers only as processor tokens, never the PAN",
            "category": "security",
            "stakes": "critical",
            "confidence": 0.95,
            "project": "payments",
        },
    ),
    ("forget", {"at": 2}),
]


def questions(ids: list[str]) -> list[tuple[str, dict[str, Any]]]:
    asked: list[tuple[str, dict[str, Any]]] = [
        ("listDecisions", {"limit": 50, "project": "payments"}),
        ("getHighSalience", {"limit": 5}),
        ("findContradictions", {"status": "all"}),
        ("getBlockedChain", {}),
    ]
    for node in ids[:2] + ids[-1:]:
        asked += [
            ("getDecision", {"id": node}),
            ("getGraph", {"nodeId": node, "depth": 2}),
            ("getAncestors", {"nodeId": node}),
        ]
    return asked


def answer(rpc: Rpc, method: str, params: dict[str, Any]) -> Any:
    got = rpc.call(f"cstp.{method}", params)
    if "error" in got:
        return {"error": got["error"]["code"]}
    result = dict(got["result"])
    result.pop("asOf", None)
    return result


def play(rpc: Rpc) -> tuple[list[str], dict[int, list[tuple[str, dict[str, Any], Any]]]]:
    ids: list[str] = []
    kept: dict[int, list[tuple[str, dict[str, Any], Any]]] = {}
    for kind, params in WEEK:
        if kind == "record":
            made = rpc.ok("cstp.recordDecision", params)
            ids.append(made["id"])
        elif kind == "link":
            made = rpc.ok(
                "cstp.linkDecisions",
                {
                    "sourceId": ids[params["from"]],
                    "targetId": ids[params["to"]],
                    "edgeType": params["edgeType"],
                },
            )
        elif kind == "update":
            made = rpc.ok(
                "cstp.updateDecision", {"id": ids[params["at"]], "updates": params["updates"]}
            )
        elif kind == "review":
            made = rpc.ok(
                "cstp.reviewDecision",
                {
                    "id": ids[params["at"]],
                    "outcome": params["outcome"],
                    "lessons": params["lessons"],
                },
            )
        elif kind == "supersede":
            fields = {k: v for k, v in params.items() if k != "old"}
            made = rpc.ok("cstp.recordDecision", {**fields, "supersedes": [ids[params["old"]]]})
            ids.append(made["id"])
        else:
            made = rpc.ok("cstp.forget", {"id": ids[params["at"]], "reason": "retracted"})
        seq = made["seq"]
        kept[seq] = [(m, p, answer(rpc, m, p)) for m, p in questions(ids)]
    return ids, kept


def test_an_agents_week_answers_the_same_as_of_any_write(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving(data, TOKEN) as rpc:
        ids, kept = play(rpc)
        for seq, answers in kept.items():
            for method, params, live in answers:
                assert answer(rpc, method, {**params, "asOf": seq}) == live, (seq, method)
        history = rpc.ok("cstp.getDecisionHistory", {"id": ids[3]})
        assert [e["action"] for e in history["events"] if not e["action"].startswith("auto-")] == [
            "recorded",
            "superseded",
        ]
        superseded_at = history["events"][-1]["ts"]
        before = rpc.ok("cstp.getDecision", {"id": ids[3], "asOf": superseded_at})
        assert before["asOf"]["ts"] <= superseded_at
        forgotten = rpc.ok("cstp.getDecisionHistory", {"id": ids[2]})
        assert forgotten["exists"] is False
        assert [e["action"] for e in forgotten["events"]][-1] == "forgotten"
        updated = next(e for e in forgotten["events"] if e["action"] == "updated")
        assert updated["changes"]["confidence"] == {"before": 0.7, "after": 0.8}
        # Recall as of a time before the forget finds nothing forgotten since (today's index),
        # but the graph reads still show it as it was.
        seq_before_forget = max(kept) - 1
        past = rpc.ok("cstp.getDecision", {"id": ids[2], "asOf": seq_before_forget})
        assert past["found"] is True
        assert past["decision"]["confidence"] == 0.8
        recalled = rpc.ok(
            "cstp.recall", {"query": "retry card captures with backoff", "asOf": seq_before_forget}
        )
        assert ids[2] not in [r["id"] for r in recalled["results"]]
        assert recalled["asOf"]["seq"] == seq_before_forget
        # The export as of the first write: one decision, with its salience.
        url, headers = rpc.url, {"Authorization": f"Bearer {TOKEN}"}
        doc = httpx.get(f"{url}/graph/export", params={"asOf": 1}, headers=headers).json()
        assert [n["id"] for n in doc["nodes"]] == [ids[0]]
        assert doc["graph"]["asOf"]["seq"] == 1
        bad = httpx.get(f"{url}/graph/export", params={"asOf": "later"}, headers=headers)
        assert bad.status_code == 400
        assert "asOf" in bad.json()["error"]
    # A restart changes nothing: the same answers from the replayed log.
    with serving(data, TOKEN) as rpc:
        for seq, answers in list(kept.items())[::3]:
            for method, params, live in answers:
                assert answer(rpc, method, {**params, "asOf": seq}) == live, (seq, method)
