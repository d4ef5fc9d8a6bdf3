"""A write's neighbour scan: the sign-sketch pool against the exact scan, same vectors, same run.

Each write looks up the stored items nearest to its vector (:func:`retrieval.autoedges.
semantic_neighbours`); the nearest become ``semantic`` edges (cosine >= 0.80, at most 3, kept in
the log) and ``relates_to`` suggestions (0.40-0.80, at most 5, returned to the caller). The
exact scan reads every stored vector (100k x 384 float32: 154 MB); the pooled scan ranks every
item by the Hamming distance of sign sketches (48 bytes each) and rescores the closest
``pool`` exactly. This measures, query by query, whether the two derive the same links and
suggestions, and what each costs.

Two labelled sets, each against a matrix of the seeded 100k store's vectors (real MiniLM
embeddings of its decisions):

* ``decisions``: new decisions from the store's seeded generator (statement + context, the
  text a write embeds), as ``bench_writes.py`` records them;
* ``dialog``: the LoCoMo dev turns ("<speaker>: <text>"), real conversations unlike the
  store's decisions: all of them are added to the matrix except a seeded sample, which are the
  queries (their true neighbours are other turns of the same conversations, amid 100k others).

For each pool of ``--pools``: the share of queries whose top-16 list, links and suggestions
equal the exact scan's; the links the pool missed (of all exact links); timings (median, p95)
of both scans, interleaved query by query. Pool 0 is the exact scan.

JSON: ``{"decisions": N, "sets": {name: {"queries", "exact": {"median_ms", "p95_ms"},
"pools": {pool: {"median_ms", "p95_ms", "same_top16", "same_links", "same_suggestions",
"links_exact", "links_missed", "suggestions_exact", "suggestions_missed"}}}}, "default_pool"}``.

Usage: python bench/bench_neighbours.py [--store DATA_DIR] [--size 100000] [--queries 300]
       [--pools 128 256 512 1024 2048] [--out bench/results/neighbours.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_http import record_params
from bench.bench_locomo import load_conversation
from bench.bench_writes import stored_text
from bench.common import ROOT
from bench.dataset import ensure_store
from graph.model import NodeKind
from graph.store import DecisionStore, StoreOptions
from retrieval.autoedges import AutoEdgeConfig, Incoming, semantic_edges
from retrieval.embedder import MiniLMEmbedder
from retrieval.index import DualIndex
from retrieval.matrix import EmbeddingMatrix, Vector
from retrieval.vector import ChromaVectorIndex

K = AutoEdgeConfig().semantic_links + AutoEdgeConfig().semantic_candidates + 8


def derived(neighbours: list[tuple[str, float]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The links and the suggestions :func:`semantic_edges` derives from ``neighbours``."""
    item = Incoming(
        id="query000",
        kind=NodeKind.DECISION,
        text="",
        when=("", "", "query000"),
        source=None,
        entities=(),
        category=None,
        searchable="",
        vector=np.zeros(1, dtype=np.float32),
    )
    links: list[str] = []
    suggestions: list[str] = []
    for edge, suggestion in semantic_edges(neighbours, item, AutoEdgeConfig()):
        if edge is not None:
            links.append(edge.target)
        if suggestion is not None:
            suggestions.append(suggestion.target)
    return tuple(links), tuple(suggestions)


def stats(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(values_ms)
    return {
        "median_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
    }


def compare(matrix: EmbeddingMatrix, queries: list[Vector], pools: list[int]) -> dict[str, Any]:
    exact_ms: list[float] = []
    exact: list[list[tuple[str, float]]] = []
    for vector in queries:
        began = time.perf_counter()
        exact.append(matrix.nearest(vector, K))
        exact_ms.append((time.perf_counter() - began) * 1e3)
    out: dict[str, Any] = {"queries": len(queries), "exact": stats(exact_ms), "pools": {}}
    for pool in pools:
        took: list[float] = []
        same = {"top16": 0, "links": 0, "suggestions": 0}
        counts = {"links_exact": 0, "links_missed": 0, "suggestions_exact": 0}
        counts["suggestions_missed"] = 0
        for vector, truth in zip(queries, exact, strict=True):
            began = time.perf_counter()
            found = matrix.nearest_sketched(vector, K, pool)
            took.append((time.perf_counter() - began) * 1e3)
            (links, suggestions), (true_links, true_suggestions) = derived(found), derived(truth)
            same["top16"] += [hit[0] for hit in found] == [hit[0] for hit in truth]
            same["links"] += links == true_links
            same["suggestions"] += suggestions == true_suggestions
            counts["links_exact"] += len(true_links)
            counts["links_missed"] += len(set(true_links) - set(links))
            counts["suggestions_exact"] += len(true_suggestions)
            counts["suggestions_missed"] += len(set(true_suggestions) - set(suggestions))
        out["pools"][str(pool)] = {
            **stats(took),
            **{f"same_{key}": round(value / len(queries), 4) for key, value in same.items()},
            **counts,
        }
    # Timing interleaved query by query, exact and the default pool in turn (same cache state).
    default = AutoEdgeConfig().semantic_scan_pool
    pair: dict[str, list[float]] = {"exact": [], "pool": []}
    for vector in queries:
        for name, run in (
            ("exact", lambda v: matrix.nearest(v, K)),
            ("pool", lambda v: matrix.nearest_sketched(v, K, default)),
        ):
            began = time.perf_counter()
            run(vector)
            pair[name].append((time.perf_counter() - began) * 1e3)
    out["interleaved"] = {name: stats(values) for name, values in pair.items()}
    return out


def store_matrix(data: Path) -> EmbeddingMatrix:
    store = DecisionStore.open(data, StoreOptions(fsync="never", snapshot_every=0))
    index = DualIndex.open(store, EMBEDDER, ChromaVectorIndex.persistent(data / "chroma"))
    matrix = index.matrix
    index.close()
    return matrix


EMBEDDER = MiniLMEmbedder()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="a store's data directory (default: seeded)")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--pools", type=int, nargs="+", default=[128, 256, 512, 1024, 2048])
    parser.add_argument("--locomo", type=Path, default=ROOT.parent / "shared/data/locomo-dev.json")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/neighbours.json")
    args = parser.parse_args()
    started = time.perf_counter()
    data = args.store if args.store else ensure_store(args.size, args.seed)[0]
    matrix = store_matrix(data)
    rng = random.Random(args.seed + 7)
    texts = [stored_text(record_params(rng)) for _ in range(args.queries)]
    sets: dict[str, Any] = {}
    sets["decisions"] = compare(matrix, list(EMBEDDER.embed(texts)), args.pools)
    turns: list[str] = []
    if args.locomo.exists():
        for sample in json.loads(args.locomo.read_text()):
            turns.extend(draft.text for draft in load_conversation(sample)[0])
        vectors = EMBEDDER.embed(turns)
        held = set(random.Random(args.seed + 8).sample(range(len(turns)), args.queries))
        for n, vector in enumerate(vectors):
            if n not in held:
                matrix.put(f"turn{n:06d}", vector)
        sets["dialog"] = compare(matrix, [vectors[n] for n in sorted(held)], args.pools)
    result = {
        "decisions": args.size if not args.store else len(matrix) - len(turns) + args.queries,
        "dialog_turns": len(turns),
        "k": K,
        "default_pool": AutoEdgeConfig().semantic_scan_pool,
        "sets": sets,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
