"""Recall's broad vector search: the sign-sketch pool against ChromaDB's HNSW index and the exact
scan, on the same vectors, in the same run.

A recall (and a hybrid or semantic ``queryDecisions``) asks for an over-fetched top list of the
stored items nearest to the query (:func:`retrieval.planner.search_vectors`: 80 for a recall
of 10), then rescores it exactly. That list comes from the matrix's sign-sketch pool
(``Settings.recall_pool``, default 2048) or, with ``DECIGRAPH_RECALL_POOL=0``, from ChromaDB's
HNSW index. Two parts:

* **agreement with the exact scan** (the seeded 100k store's real MiniLM vectors; a copy of the
  store is opened from its snapshots): for each query, the exact top 80 by cosine, and how many
  of them ChromaDB's list and each pool's list miss; how many of the exact top 10 (what a recall
  of 10 can show) are missing from each 80-item list; the time of each, interleaved query by
  query. Queries: the recall benchmark's seeded questions (``bench/dataset.py``) and new
  decisions from the store's generator (statement + context, as ``bench_writes.py`` records).
* **reproducibility**: the first ``--rebuild-size`` vectors of the same matrix (in id order)
  are written into two fresh ChromaDB collections, identically (same batches, same order), and
  the same queries asked of both: how many answers differ. The same vectors in two matrices,
  one filled in reverse order, are asked through the pool likewise.

JSON: ``{"decisions", "fetch", "queries", "default_pool", "agreement": {set: {"chromadb" |
pool: {"missed_of_top80", "queries_missing_any", "missed_of_top10", "median_ms", "p95_ms"}}},
"reproducibility": {"vectors", "queries", "chromadb_differing_queries",
"pool_differing_queries"}}``.

Usage: python bench/bench_recall_pool.py [--store DATA_DIR] [--size 100000] [--queries 200]
       [--pools 512 1024 2048 4096] [--rebuild-size 10000] [--out bench/results/recallpool.json]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_http import record_params
from bench.bench_neighbours import stats
from bench.bench_writes import stored_text
from bench.common import ROOT
from bench.dataset import copy_store, ensure_store, queries
from graph.store import DecisionStore, StoreOptions
from retrieval.embedder import MiniLMEmbedder
from retrieval.index import DualIndex
from retrieval.matrix import EmbeddingMatrix, Vector
from retrieval.planner import DEFAULT_VECTOR_POOL, POOL_PER_HIT
from retrieval.recall import DEFAULT_TUNING
from retrieval.vector import ChromaVectorIndex, VectorIndex

#: What a recall of 10 fetches unfiltered (``search_vectors``: k + k // 2 + 5 for k = 50).
K = DEFAULT_TUNING.candidates + DEFAULT_TUNING.candidates // 2 + 5
TOP = 10


def _pool_rows(pool: int) -> int:
    return max(pool, K * POOL_PER_HIT)


def agreement(
    index: DualIndex, vectors: list[Vector], pools: list[int]
) -> dict[str, dict[str, float]]:
    """Misses of the exact top ``K`` and top 10 per source, with interleaved timings."""
    matrix = index.matrix
    names = ["chromadb", *[str(p) for p in pools]]
    missed = dict.fromkeys(names, 0)
    missing_any = dict.fromkeys(names, 0)
    missed_top = dict.fromkeys(names, 0)
    times: dict[str, list[float]] = {name: [] for name in names}

    def ask(name: str, vector: Vector) -> list[str]:
        began = time.perf_counter()
        if name == "chromadb":
            found = [hit.id for hit in index.vectors.query(vector, K)]
        else:
            found = [i for i, _ in matrix.nearest_sketched(vector, K, _pool_rows(int(name)))]
        times[name].append((time.perf_counter() - began) * 1e3)
        return found

    for n, vector in enumerate(vectors):
        exact = [i for i, _ in matrix.nearest(vector, K)]
        order = names if n % 2 == 0 else list(reversed(names))
        for name in order:
            got = set(ask(name, vector))
            lost = len(set(exact) - got)
            missed[name] += lost
            missing_any[name] += lost > 0
            missed_top[name] += len(set(exact[:TOP]) - got)
    return {
        name: {
            "missed_of_top80": missed[name],
            "queries_missing_any": missing_any[name],
            "missed_of_top10": missed_top[name],
            **stats(times[name]),
        }
        for name in names
    }


def _fresh_chroma(ids: list[str], matrix: EmbeddingMatrix, where: Path) -> VectorIndex:
    vectors = ChromaVectorIndex.persistent(where)
    for start in range(0, len(ids), 512):
        chunk = ids[start : start + 512]
        rows = [matrix.get(i) for i in chunk]
        vectors.upsert(chunk, np.stack(rows), [{"kind": "decision"}] * len(chunk))
    return vectors


def reproducibility(
    matrix: EmbeddingMatrix, vectors: list[Vector], size: int, work: Path
) -> dict[str, int]:
    """Two ChromaDB builds of the same vectors, and two matrices, asked the same queries."""
    ids = sorted(matrix.ids())[:size]
    first = _fresh_chroma(ids, matrix, work / "one")
    second = _fresh_chroma(ids, matrix, work / "two")
    forward, backward = EmbeddingMatrix(matrix.dimension), EmbeddingMatrix(matrix.dimension)
    for node_id in ids:
        forward.put(node_id, matrix.get(node_id))  # type: ignore[arg-type]
    for node_id in reversed(ids):
        backward.put(node_id, matrix.get(node_id))  # type: ignore[arg-type]
    chroma_differ = pool_differ = 0
    rows = _pool_rows(DEFAULT_VECTOR_POOL)
    for vector in vectors:
        one = [hit.id for hit in first.query(vector, K)]
        two = [hit.id for hit in second.query(vector, K)]
        chroma_differ += one != two
        pool_differ += forward.nearest_sketched(vector, K, rows) != backward.nearest_sketched(
            vector, K, rows
        )
    first.close()
    second.close()
    return {
        "vectors": len(ids),
        "queries": len(vectors),
        "chromadb_differing_queries": chroma_differ,
        "pool_differing_queries": pool_differ,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, help="a store's data directory (default: seeded)")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pools", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    parser.add_argument("--rebuild-size", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/recallpool.json")
    args = parser.parse_args()
    template = args.store if args.store is not None else ensure_store(args.size, args.seed)[0]
    embedder = MiniLMEmbedder()
    rng = random.Random(args.seed + 3)
    sets = {
        "questions": queries(random.Random(args.seed + 1), args.queries),
        "decisions": [stored_text(record_params(rng)) for _ in range(args.queries)],
    }
    with tempfile.TemporaryDirectory(prefix="decigraph-recallpool-") as tmp:
        work = Path(tmp)
        data = copy_store(template, work / "data")
        store = DecisionStore.open(data, StoreOptions(fsync="never", snapshot_every=0))
        index = DualIndex.open(store, embedder, ChromaVectorIndex.persistent(data / "chroma"))
        embedded = {name: list(embedder.embed(texts)) for name, texts in sets.items()}
        result: dict[str, Any] = {
            "decisions": len(index.matrix),
            "fetch": K,
            "pool_rows_at_least": K * POOL_PER_HIT,
            "queries": {name: len(texts) for name, texts in sets.items()},
            "default_pool": DEFAULT_VECTOR_POOL,
            "agreement": {
                name: agreement(index, vectors, args.pools) for name, vectors in embedded.items()
            },
        }
        everything = [v for vectors in embedded.values() for v in vectors]
        matrix = index.matrix
        index.close()
        store.close()
        shutil.rmtree(data)
        result["reproducibility"] = reproducibility(matrix, everything, args.rebuild_size, work)
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
