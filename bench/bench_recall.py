"""Recall and queryDecisions latency at 10k and 100k decisions, next to a Chroma-only query.

For each size the cached seeded store of ``bench/dataset.py`` (synthetic decisions with
owner/ticket contexts, projects, categories, ~2.2 typed edges each, indexed by the normal
catch-up path with real MiniLM embeddings into an embedded ChromaDB) is copied and opened
in-process, indexes from their snapshot as after a clean restart. Then, on the same data and
the same seeded queries (query embedding included in every figure; 10 untimed warm-up calls):

- ``chroma only``: embed the query + one ChromaDB top-10 query (the floor);
- ``recall``: intent-weighted hybrid recall, limit 10;
- ``recall, reference path``: the same recall on the read path as it was before issue 16's
  fast paths (``bench/recall_reference.py``: identical answers), interleaved query by query
  with ``recall`` (alternating which goes first) so both see the same load;
- ``queryDecisions hybrid``: CSTP hybrid mode, limit 10;
- ``recall, filtered``: recall with a project + category filter.

Median and p95 are nearest-rank (``bench.common.summary``). The store's build record (fill
and embedding time, whether the cache was reused) is copied into the result.

Usage: python bench/bench_recall.py [--sizes 10000 100000] [--queries 200] [--seed 11]
       python bench/bench_recall.py --store /path/to/store-10000/data ... (pinned copies)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import summary, time_ms
from bench.dataset import copy_store, ensure_store, queries
from bench.recall_reference import reference_paths
from graph.store import DecisionStore, StoreOptions
from retrieval.embedder import MiniLMEmbedder
from retrieval.filters import RecallFilters
from retrieval.index import DualIndex
from retrieval.query import query_decisions
from retrieval.recall import recall
from retrieval.vector import ChromaVectorIndex


def pinned_store(data: Path) -> tuple[int, Path, dict[str, Any]]:
    """A seeded store given by its data directory (``--store``): its size and build record."""
    meta_path = data.parent / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    size = int(meta.get("size") or meta.get("decisions") or 0)
    return size, data, {**meta, "pinned": str(data)}


def run_size(
    size: int,
    n_queries: int,
    seed: int,
    embedder: MiniLMEmbedder,
    pinned: Path | None = None,
) -> dict[str, Any]:
    if pinned is None:
        cached, build = ensure_store(size, seed)
    else:
        known, cached, build = pinned_store(pinned)
        size = known or size
    with tempfile.TemporaryDirectory(prefix="decigraph-recall-") as tmp:
        data = copy_store(cached, Path(tmp) / "data")
        started = time.perf_counter()
        store = DecisionStore.open(data, StoreOptions(fsync="never", snapshot_every=0))
        index = DualIndex.open(store, embedder, ChromaVectorIndex.persistent(data / "chroma"))
        open_s = time.perf_counter() - started
        texts = queries(random.Random(seed + 1), n_queries)
        narrow = RecallFilters(project="ledger", category=["architecture"])  # type: ignore[arg-type]

        def chroma_only(q: str) -> object:
            return index.vectors.query(index.embed([q])[0], 10)

        def measure(fn: Any) -> dict[str, float]:
            return summary(time_ms(fn, texts, warmup=10), 2)

        def before_and_after(fn: Any) -> tuple[dict[str, float], dict[str, float]]:
            """``fn`` on the reference path and on the current one, query by query in turn."""
            for q in texts[:10]:
                fn(q)
                with reference_paths():
                    fn(q)
            old: list[float] = []
            new: list[float] = []
            for n, q in enumerate(texts):
                for reference in (n % 2 == 0, n % 2 == 1):
                    with reference_paths() if reference else contextlib.nullcontext():
                        began = time.perf_counter()
                        fn(q)
                        (old if reference else new).append((time.perf_counter() - began) * 1e3)
            return summary(old, 2), summary(new, 2)

        load_before = [round(x, 2) for x in os.getloadavg()]
        before, after = before_and_after(lambda q: recall(index, q, 10))

        result = {
            "decisions": size,
            "edges": store.graph.number_of_edges(),
            "build": build,
            "open_s": round(open_s, 2),
            "indexes_from_snapshot": index.report.from_snapshot,
            "chroma only": measure(chroma_only),
            "recall": after,
            "recall, reference path": before,
            "queryDecisions hybrid": measure(lambda q: query_decisions(index, q, "hybrid", 10)),
            "recall, filtered": measure(lambda q: recall(index, q, 10, filters=narrow)),
            "torch_threads": embedder.threads or 0,
            "load_average_before": load_before,
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }
        index.close()
        store.close()
        return result


NAMES = (
    "chroma only",
    "recall",
    "recall, reference path",
    "queryDecisions hybrid",
    "recall, filtered",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--store",
        type=Path,
        nargs="+",
        default=None,
        help="seeded data directories to copy instead of bench/dataset.py's cache (one per size)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/recall.json"))
    parser.add_argument(
        "--threads", type=int, default=0, help="torch threads (0: torch's default; serve uses 1)"
    )
    args = parser.parse_args()
    embedder = MiniLMEmbedder(threads=args.threads or None)
    if args.store:
        results = [
            run_size(0, args.queries, args.seed, embedder, pinned=data) for data in args.store
        ]
    else:
        results = [run_size(size, args.queries, args.seed, embedder) for size in args.sizes]
    print("| decisions | method | median ms | p95 ms |")
    print("|---|---|---|---|")
    for r in results:
        for name in NAMES:
            print(f"| {r['decisions']} | {name} | {r[name]['median_ms']} | {r[name]['p95_ms']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
