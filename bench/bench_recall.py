"""Recall and queryDecisions latency at 10k and 100k decisions, next to a Chroma-only query.

For each size: a fresh store is filled with seeded synthetic decisions (varied texts, contexts,
projects, categories) and a realistic edge mix, then the indexes are built by the normal
catch-up path (batched embedding into an embedded ChromaDB). Then, in the same process and on
the same data, over the same seeded queries (query embedding included in every figure):

- ``chroma only``: embed the query + one ChromaDB top-10 query (the floor);
- ``recall``: intent-weighted hybrid recall, limit 10;
- ``queryDecisions hybrid``: CSTP hybrid mode, limit 10;
- ``recall, filtered``: recall with a project + category filter.

Usage: python bench/bench_recall.py [--sizes 10000 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthetic import PURPOSES, SYSTEMS, decision_spec, edge_type, skewed_target
from graph.drafts import DecisionDraft, EdgeDraft
from graph.errors import DecigraphError
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions
from retrieval.embedder import MiniLMEmbedder
from retrieval.filters import RecallFilters
from retrieval.index import DualIndex
from retrieval.query import query_decisions
from retrieval.recall import recall
from retrieval.vector import ChromaVectorIndex

TEAMS = ["payments", "search", "infra", "growth", "identity", "data-platform", "mobile", "sre"]
DRIVERS = [
    "after the March outage",
    "ahead of the SOC 2 audit",
    "to unblock the EU launch",
    "following the cost review",
    "as requested by the security team",
    "to cut on-call pages",
]


def fill(store: DecisionStore, decisions: int, rng: random.Random) -> None:
    ids: list[str] = []
    while len(ids) < decisions:
        spec = decision_spec(rng)
        context = (
            f"Owner: {rng.choice(TEAMS)}, ticket {spec.project.upper()}-{rng.randrange(10_000)}, "
            f"{rng.choice(DRIVERS)}."
        )
        edges: list[EdgeDraft] = []
        node_id = store.allocate_id()
        if ids:
            for _ in range(rng.choice([0, 1, 1, 2, 3])):
                target = ids[skewed_target(rng, len(ids))]
                edges.append(EdgeDraft(node_id, target, edge_type(rng)))
        draft = DecisionDraft(
            id=node_id,
            text=spec.text,
            context=context,
            category=spec.category,  # type: ignore[arg-type]
            stakes=spec.stakes,  # type: ignore[arg-type]
            confidence=spec.confidence,
            tags=spec.tags,
            project=spec.project,
        )
        try:
            store.record(draft, "bench", edges)
        except DecigraphError:
            store.record(draft, "bench")  # a sampled edge would close a cycle: skip the edges
        ids.append(node_id)


def queries(rng: random.Random, count: int) -> list[str]:
    shapes = [
        "why did we choose {s} {p}",
        "when did we move to {s}",
        "what do we know about {s}",
        "{s} {p}",
        "decisions {p} last month",
        "who decided to use {s} {p}",
        "what caused the switch to {s}",
    ]
    return [
        rng.choice(shapes).format(s=rng.choice(SYSTEMS), p=rng.choice(PURPOSES))
        for _ in range(count)
    ]


def measure(fn: Callable[[str], object], texts: list[str], warmup: int = 10) -> dict[str, float]:
    for text in texts[:warmup]:
        fn(text)
    times = []
    for text in texts:
        start = time.perf_counter()
        fn(text)
        times.append((time.perf_counter() - start) * 1000.0)
    ordered = sorted(times)
    return {
        "median_ms": round(statistics.median(times), 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
        "runs": len(times),
    }


def run_size(size: int, n_queries: int, seed: int, embedder: MiniLMEmbedder) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="decigraph-recall-") as tmp:
        root = Path(tmp)
        store = DecisionStore.open(
            root / "data", StoreOptions(fsync="never", snapshot_every=0), ids=IdSource(seed)
        )
        started = time.perf_counter()
        fill(store, size, rng)
        fill_s = time.perf_counter() - started
        started = time.perf_counter()
        index = DualIndex.open(store, embedder, ChromaVectorIndex.persistent(root / "chroma"))
        index_s = time.perf_counter() - started
        texts = queries(random.Random(seed + 1), n_queries)
        narrow = RecallFilters(project="ledger", category=["architecture"])  # type: ignore[arg-type]

        def chroma_only(q: str) -> object:
            return index.vectors.query(index.embed([q])[0], 10)

        result = {
            "decisions": size,
            "edges": store.graph.number_of_edges(),
            "fill_s": round(fill_s, 1),
            "index_build_s": round(index_s, 1),
            "embedded_per_s": round(size / index_s, 1),
            "chroma only": measure(chroma_only, texts),
            "recall": measure(lambda q: recall(index, q, 10), texts),
            "queryDecisions hybrid": measure(
                lambda q: query_decisions(index, q, "hybrid", 10), texts
            ),
            "recall, filtered": measure(lambda q: recall(index, q, 10, filters=narrow), texts),
        }
        index.close()
        store.close()
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=Path("bench/results/recall.json"))
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    results = [run_size(size, args.queries, args.seed, embedder) for size in args.sizes]
    print("| decisions | method | median ms | p95 ms |")
    print("|---|---|---|---|")
    for r in results:
        for name in ("chroma only", "recall", "queryDecisions hybrid", "recall, filtered"):
            print(f"| {r['decisions']} | {name} | {r[name]['median_ms']} | {r[name]['p95_ms']} |")
    print(json.dumps([{k: v for k, v in r.items() if not isinstance(v, dict)} for r in results]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
