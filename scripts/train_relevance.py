"""Fit the absolute-relevance curve (``retrieval/relevance_model.json``) on the dev agent
sessions, and print what each floor would give.

Each dev session (``bench/agent_sessions/dev/*.json``, written by helpers who saw only
``bench/agent_sessions/WRITERS_TASK.md``) is replayed in this process through the MCP tool
table and the service's own dispatcher (the path a server runs). At each probe every recorded
decision becomes one labelled row: relevant when the writer listed it as must or may appear.
A logistic regression (seeded, L2) over :data:`retrieval.relevance.FEATURES` is the model.
The test sessions are never read here.

Also dumps, per probe, the contradiction judge's raised pairs with their probability and
whether the writer expected that conflict (``--dump``), to choose the briefing's conflict
threshold on dev data.

Usage: python scripts/train_relevance.py [--dump FILE] [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.agent_sessions.steps import record_args  # noqa: E402
from retrieval.relevance import FEATURES, MODEL_FILE, features  # noqa: E402
from service.composition import open_app  # noqa: E402
from service.mcp.server import dispatcher_invoke  # noqa: E402
from service.mcp.tools import build_tools, run_tool  # noqa: E402
from service.methods import build_registry  # noqa: E402
from service.rpc.protocol import Dispatcher  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.usecases import check  # noqa: E402
from service.usecases.inputs import ProposedAction  # noqa: E402

DEV = ROOT / "bench" / "agent_sessions" / "dev"


def replay(session: dict[str, Any], tmp: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(relevance rows, conflict rows) of one session."""
    app = open_app(Settings(data_dir=tmp / session["id"], fsync="never"))
    rows: list[dict[str, Any]] = []
    raised: list[dict[str, Any]] = []
    try:
        invoke = dispatcher_invoke(Dispatcher(build_registry(app)))
        tools = {t.name: t for t in build_tools()}
        ids: dict[str, str] = {}

        def tool(name: str, args: dict[str, Any], agent: str) -> dict[str, Any]:
            out = run_tool(tools[name], args, lambda m, p: invoke(m, p, agent))
            if out.is_error and out.payload.get("error") == "guardrail_blocked":
                args = {**args, "override_reason": "replay"}
                out = run_tool(tools[name], args, lambda m, p: invoke(m, p, agent))
            return out.payload

        for index, step in enumerate(session["steps"]):
            kind = step["do"]
            if kind == "record":
                args = record_args(step, ids)
                made = tool("log_decision", args, step["agent"])
                ids[step["key"]] = made["id"]
                for parent in step.get("depends_on", []):
                    link = {"source_id": made["id"], "target_id": ids[parent]}
                    tool("link_decisions", {**link, "edge_type": "depends_on"}, step["agent"])
            elif kind == "review":
                review = {"id": ids[step["key"]], "outcome": step["outcome"]}
                tool("review_outcome", review, session["agents"][0])
            else:
                text = step.get("action") or step.get("task")
                expect = step["expect"]
                ok = set(expect.get("must_appear", [])) | set(expect.get("may_appear", []))
                vector = app.index.embed([text])[0]
                key_of = {v: k for k, v in ids.items()}
                cosines = app.index.matrix.similarities(vector, key_of)
                found = features(cosines, app.index.keyword, text)
                G = app.store.graph
                pairs = [(str(G.nodes[n]["text"]), text) for n in found]
                judged = dict(zip(found, app.pair_judge.score(pairs), strict=True))
                for node_id, x in found.items():
                    key = key_of[node_id]
                    rows.append(
                        {
                            "session": session["id"],
                            "step": index,
                            "kind": kind,
                            "key": key,
                            "x": list(x),
                            "y": int(key in ok),
                            "must": int(key in expect.get("must_appear", [])),
                            "bad": int(key in expect.get("must_not_appear", [])),
                            "related": 1.0 - judged[node_id].unrelated,
                            "contradicts": judged[node_id].contradicts,
                        }
                    )
                if kind == "pre_action":
                    verdict = check(app, ProposedAction(text=text), agent=step["agent"])
                    expected = set(expect.get("conflicts", []))
                    for c in verdict.conflicts:
                        raised.append(
                            {
                                "session": session["id"],
                                "step": index,
                                "key": key_of.get(c.target),
                                "p": c.probability,
                                "tier": c.tier,
                                "expected": key_of.get(c.target) in expected,
                                "probe_has_conflict": bool(expected),
                            }
                        )
    finally:
        app.close()
    return rows, raised


def fit(rows: list[dict[str, Any]]) -> tuple[list[float], float]:
    from sklearn.linear_model import LogisticRegression

    X = np.array([r["x"] for r in rows])
    y = np.array([r["y"] for r in rows])
    model = LogisticRegression(C=1.0, random_state=0).fit(X, y)
    return [round(float(w), 4) for w in model.coef_[0]], round(float(model.intercept_[0]), 4)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", type=Path, default=ROOT / "bench" / ".cache" / "relevance.json")
    ap.add_argument("--write", action="store_true", help="write retrieval/relevance_model.json")
    ap.add_argument("--reuse", action="store_true", help="fit on the last dump")
    a = ap.parse_args()
    if a.reuse:
        dumped = json.loads(a.dump.read_text())
        rows, raised = dumped["rows"], dumped["raised"]
    else:
        rows, raised = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for path in sorted(DEV.glob("*.json")):
                r, c = replay(json.loads(path.read_text()), Path(tmp))
                rows += r
                raised += c
        a.dump.parent.mkdir(parents=True, exist_ok=True)
        a.dump.write_text(json.dumps({"rows": rows, "raised": raised}))
    weights, bias = fit(rows)
    print(f"{len(rows)} rows, {sum(r['y'] for r in rows)} relevant; weights {weights} bias {bias}")
    sessions = sorted({r["session"] for r in rows})
    if a.write:
        MODEL_FILE.write_text(
            json.dumps(
                {
                    "version": f"rel-{len(rows)}-{len(sessions)}",
                    "features": list(FEATURES),
                    "weights": weights,
                    "bias": bias,
                    "trainedOn": sessions,
                },
                indent=1,
            )
            + "\n"
        )
        print(f"wrote {MODEL_FILE}")


if __name__ == "__main__":
    main()
