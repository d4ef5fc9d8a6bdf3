"""decigraph's incremental BM25 against bm25s (a maintained static BM25 library), same run.

Why decigraph has its own keyword index: it indexes on every write. This measures, on the same
pre-tokenised corpus and the same BM25 variant (Lucene IDF, k1 1.5, b 0.75):

- ranking agreement: top-10 of every LoCoMo dev question (per conversation), identical ids;
- write cost: making one new document searchable at N documents (decigraph: ``upsert``;
  bm25s: re-index the corpus, it has no incremental add);
- query latency at N documents, top 10.

Usage: python bench/bench_keyword.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_locomo import DEFAULT_DATA, load_conversation
from bench.common import summary
from bench.synthetic import decision_spec
from retrieval.keyword import KeywordIndex
from retrieval.text import terms


def stats(values: list[float]) -> dict[str, float]:
    return summary(values)


def bm25s_index(corpus: list[list[str]]) -> Any:
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(corpus, show_progress=False)
    return retriever


def bm25s_top(retriever: Any, query: list[str], k: int, size: int) -> list[tuple[int, float]]:
    docs, scores = retriever.retrieve([query], k=min(k, size), show_progress=False)
    return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


def agreement(data: Path) -> dict[str, Any]:
    samples = json.loads(data.read_text())
    same_scores = same_ids = total = 0
    for sample in samples:
        drafts, questions = load_conversation(sample)
        corpus = [terms(d.text) for d in drafts]
        ours = KeywordIndex()
        for i, doc in enumerate(corpus):
            ours.upsert_terms(f"{i:08d}", doc)
        theirs = bm25s_index(corpus)
        for qa in questions:
            query = terms(qa["q"])
            mine = [(int(d), s) for d, s in ours.query_terms(query).top(10)]
            other = bm25s_top(theirs, query, 10, len(corpus))
            total += 1
            # bm25s uses Lucene's form without the (k1 + 1) factor, scores in float32 and
            # breaks ties its own way: compare scores / (k1 + 1) to 1e-4,
            # and id sets separately (they differ only where a tie straddles the cut).
            same_scores += len(mine) == len(other) and all(
                abs(a[1] / 2.5 - b[1]) < 1e-4 for a, b in zip(mine, other, strict=True)
            )
            same_ids += {d for d, _ in mine} == {d for d, _ in other}
    return {
        "questions": total,
        "same_top10_scores": round(same_scores / total, 4),
        "same_top10_ids": round(same_ids / total, 4),
    }


def speed(size: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    corpus = [
        terms(decision_spec(rng).text + f" ticket {rng.randrange(100_000)}") for _ in range(size)
    ]
    queries = [terms(decision_spec(rng).text) for _ in range(100)]
    ours = KeywordIndex()
    start = time.perf_counter()
    for i, doc in enumerate(corpus):
        ours.upsert_terms(f"{i:08d}", doc)
    ours_build = time.perf_counter() - start
    start = time.perf_counter()
    theirs = bm25s_index(corpus)
    theirs_build = time.perf_counter() - start
    adds = []
    for j in range(200):
        start = time.perf_counter()
        ours.upsert_terms(f"n{j:07d}", corpus[j])
        adds.append((time.perf_counter() - start) * 1000)
    mixed = []
    for j, query in enumerate(queries):
        start = time.perf_counter()
        ours.upsert_terms(f"m{j:07d}", corpus[-j - 1])
        ours.query_terms(query).top(10)
        mixed.append((time.perf_counter() - start) * 1000)
    q_ours, q_theirs = [], []
    for query in queries:
        start = time.perf_counter()
        ours.query_terms(query).top(10)
        q_ours.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        bm25s_top(theirs, query, 10, size)
        q_theirs.append((time.perf_counter() - start) * 1000)
    return {
        "documents": size,
        "decigraph add one document": stats(adds),
        "bm25s add one document (re-index)": {"median_ms": round(theirs_build * 1000, 1)},
        "decigraph build from scratch_s": round(ours_build, 2),
        "bm25s build from scratch_s": round(theirs_build, 2),
        "decigraph query": stats(q_ours),
        "decigraph add one document then query": stats(mixed),
        "bm25s query": stats(q_theirs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path("bench/results/keyword.json"))
    args = parser.parse_args()
    np.random.seed(0)
    report = {"ranking": agreement(args.data), "speed": [speed(n, 5) for n in args.sizes]}
    print(json.dumps(report, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
