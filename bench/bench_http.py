"""CSTP over HTTP: recall, queryDecisions and recordDecision latency, and the server's memory.

For each size a copy of the cached seeded store (``bench/dataset.py``) is served by a real
``decigraph serve`` on loopback (uvicorn, default settings: ``fsync="always"``, guardrails on,
embedded ChromaDB) with a real bearer token; the client is one ``httpx`` connection, calls in
sequence. Every figure is the client's wall time for one request (request, JSON-RPC dispatch,
the work, response), median and p95 nearest-rank over the same seeded queries as
``bench_recall.py`` (the in-process figures of the same run):

- ``GET /.well-known/agent.json``: the HTTP floor (no auth, a constant card; ``/health``
  counts the graph's edges, O(n), so it is no floor at 100k);
- ``recall`` (limit 10) and ``queryDecisions`` hybrid (limit 10);
- ``recordDecision``: seeded new decisions with context, category, stakes, tags and project,
  the real write path (embed, auto-edges, guardrails, one fdatasync-ed event); run after the
  reads. Answers refused by a guardrail (-32004) are timed too and counted.

Memory: VmRSS of the server once it has answered its first request, and its peak (VmHWM,
``/proc/<pid>/status``) after all of the above. Baseline beside it: the peak RSS of a bare
Python process that only loads all-MiniLM-L6-v2 and embeds one sentence (torch's fixed cost).

Usage: python bench/bench_http.py [--sizes 10000 100000] [--queries 200] [--writes 200]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Server, dir_mb, summary, time_ms
from bench.dataset import copy_store, draft_for, ensure_store, queries

FLOOR = "GET /.well-known/agent.json"
MODEL_ONLY = """
import sys
sys.path.insert(0, {root!r})
from retrieval.embedder import MiniLMEmbedder
MiniLMEmbedder().embed(["load the model and embed one sentence"])
from bench.common import process_memory_mb
import json, os
print(json.dumps(process_memory_mb(os.getpid())))
"""


def model_only_rss() -> dict[str, float]:
    root = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run(
        [sys.executable, "-c", MODEL_ONLY.format(root=root)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def record_params(rng: random.Random) -> dict[str, Any]:
    draft = draft_for(rng)
    return {
        "decision": draft.text,
        "context": draft.context,
        "category": str(draft.category),
        "stakes": str(draft.stakes),
        "confidence": draft.confidence,
        "tags": draft.tags,
        "project": draft.project,
    }


def run_size(size: int, n_queries: int, n_writes: int, seed: int, tmp: Path) -> dict[str, Any]:
    cached, build = ensure_store(size, seed)
    data = copy_store(cached, tmp / f"data-{size}")
    server = Server(data, tmp / f"serve-{size}.log")
    try:
        texts = queries(random.Random(seed + 1), n_queries)
        first_s = server.wait_answer("recall", {"query": texts[0], "limit": 10})
        idle = server.memory_mb()
        card = f"{server.url}/.well-known/agent.json"
        health = time_ms(lambda _: server.client.get(card), texts, warmup=10)
        recall = time_ms(lambda q: server.rpc("recall", {"query": q, "limit": 10}), texts, 10)
        hybrid = time_ms(
            lambda q: server.rpc(
                "queryDecisions", {"query": q, "limit": 10, "retrievalMode": "hybrid"}
            ),
            texts,
            10,
        )
        outcomes: Counter[str] = Counter()
        rng = random.Random(seed + 2)
        params = [record_params(rng) for _ in range(n_writes)]

        def write(p: dict[str, Any]) -> None:
            answer = server.call("recordDecision", p)
            error = answer.get("error")
            outcomes["ok" if error is None else f"error {error['code']}"] += 1

        writes = time_ms(write, params, warmup=0)
        peak = server.memory_mb()
    finally:
        server.stop()
    return {
        "decisions": size,
        "build": build,
        "data_mb": dir_mb(cached),
        "start_to_first_answer_s": round(first_s, 2),
        FLOOR: summary(health, 2),
        "recall": summary(recall, 2),
        "queryDecisions hybrid": summary(hybrid, 2),
        "recordDecision": {**summary(writes, 2), "outcomes": dict(outcomes)},
        "memory": {"after_first_answer": idle, "after_load": peak},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=Path("bench/results/http.json"))
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="decigraph-http-") as tmp:
        sizes = [run_size(n, args.queries, args.writes, args.seed, Path(tmp)) for n in args.sizes]
    report = {
        "seed": args.seed,
        "client": "httpx, one keep-alive connection, sequential calls, loopback",
        "model_only_process": model_only_rss(),
        "sizes": sizes,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print("| decisions | call | median ms | p95 ms |")
    print("|---|---|---|---|")
    for r in sizes:
        for name in (FLOOR, "recall", "queryDecisions hybrid", "recordDecision"):
            print(f"| {r['decisions']} | {name} | {r[name]['median_ms']} | {r[name]['p95_ms']} |")
        print(f"memory at {r['decisions']}: {r['memory']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
