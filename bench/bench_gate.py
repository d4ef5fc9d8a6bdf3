"""The contradiction guardrail end to end, through a real server, on the frozen gate split.

``bench/judgedata/gate.jsonl`` holds 160 cases written by two writers who wrote nothing else
(frozen before any measurement): an earlier decision ``a``, three later decisions that depend
on it, and a proposal ``b`` labelled ``contradicts`` / ``compatible`` / ``unrelated`` against
``a``. A real ``decigraph serve`` (default settings, the shipped judge) on loopback is given,
over ``/cstp``, every case's ``a`` and its three dependents (``recordDecision``, then
``linkDecisions depends_on``: ``a`` becomes a decision three others rely on), all cases in one
store (so each proposal's candidates come from a pool of 640 decisions of 40 domains, not only
its own case). Then each ``b`` is asked with ``checkGuardrails`` in CSTP's shape. A case is
*blocked* when the answer blocks on its own ``a``, *flagged* when its ``a`` is among the raised
conflicts (block or review). Raised pairs with another case's decisions are counted apart
(each is a review an agent would read, or a false block).

Usage: python bench/bench_gate.py [--out bench/results/gate.json] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, Server, summary
from bench.judge_common import DATA
from retrieval.contradiction.labels import KINDS

SETUP = {"reason": "benchmark setup: the decisions already in force"}


def load_cases(limit: int | None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (DATA / "gate.jsonl").read_text().splitlines() if line]
    return rows[:limit] if limit else rows


def seed_store(server: Server, cases: list[dict[str, Any]]) -> list[str]:
    """Record each case's ``a`` and dependents; the ids of the ``a``s, in case order."""
    ids = []
    for case in cases:
        a = server.rpc("recordDecision", {"decision": case["a"], "override": SETUP})["id"]
        for dep in case["deps"]:
            d = server.rpc("recordDecision", {"decision": dep, "override": SETUP})["id"]
            server.rpc("linkDecisions", {"sourceId": d, "targetId": a, "edgeType": "depends_on"})
        ids.append(a)
    return ids


def measure(server: Server, cases: list[dict[str, Any]], ids: list[str]) -> dict[str, Any]:
    outcomes: list[dict[str, Any]] = []
    latency: list[float] = []
    for case, a in zip(cases, ids, strict=True):
        params = {"action": {"description": case["b"], "stakes": "medium"}}
        started = time.perf_counter()
        answer = server.rpc("checkGuardrails", params)
        latency.append((time.perf_counter() - started) * 1000)
        raised = {c["id"]: c["tier"] for c in answer.get("conflicts", [])}
        outcomes.append(
            {
                "label": case["label"],
                "phenomenon": case["phenomenon"],
                "tier": raised.get(a),
                "allowed": answer["allowed"],
                "others": sorted(t for i, t in raised.items() if i != a),
            }
        )
    return {"figures": figures(outcomes), "check_ms": summary(latency), "outcomes": outcomes}


def figures(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    pos = [o for o in outcomes if o["label"] == "contradicts"]
    compat = [o for o in outcomes if o["label"] == "compatible"]
    unrel = [o for o in outcomes if o["label"] == "unrelated"]
    blocked = [o for o in outcomes if o["tier"] == "block"]

    def share(rows: list[dict[str, Any]], *tiers: str) -> float:
        return round(sum(o["tier"] in tiers for o in rows) / len(rows), 3) if rows else 0.0

    per: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for o in outcomes:
        per[o["phenomenon"]].append(o)
    return {
        "cases": len(outcomes),
        "block_precision": round(
            sum(o["label"] == "contradicts" for o in blocked) / len(blocked), 3
        )
        if blocked
        else 1.0,
        "block_recall": share(pos, "block"),
        "flag_recall": share(pos, "block", "review"),
        "lookalikes_flagged": share(compat, "block", "review"),
        "unrelated_flagged": share(unrel, "block", "review"),
        # Any block of a proposal that contradicts nothing here (its own case's a or another's).
        "false_blocks": sum(not o["allowed"] for o in [*compat, *unrel]),
        "other_cases_raised_per_check": round(
            sum(len(o["others"]) for o in outcomes) / max(1, len(outcomes)), 2
        ),
        "per_phenomenon": {
            ph: {
                "n": len(rows),
                "flagged": share(rows, "block", "review"),
                "blocked": share(rows, "block"),
                "contradicting": ph in KINDS,
            }
            for ph, rows in sorted(per.items())
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gate.json")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    cases = load_cases(args.limit)
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        server = Server(Path(tmp) / "data", Path(tmp) / "serve.log")
        try:
            server.wait_answer("listGuardrails", {})
            ids = seed_store(server, cases)
            result = measure(server, cases, ids)
        finally:
            server.stop()
    card = json.loads((ROOT / "retrieval/contradiction/weights/card.json").read_text())
    result["judge"] = {"version": card["version"], "thresholds": card["thresholds"]}
    result["store_decisions"] = 4 * len(cases)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result["figures"].items() if k != "per_phenomenon"}))
    print(json.dumps(result["check_ms"]))


if __name__ == "__main__":
    main()
