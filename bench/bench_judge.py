"""The contradiction pair judge on labelled pairs, beside its two baselines, in one run.

For each split (``bench/judgedata`` test, test2 and gate: frozen, each written by writers who
wrote nothing else, test first, test2 under a brief that balances word overlap within each
label, gate as cases with three dependents, here judged as pairs; dev: picked the thresholds;
and the 540 pairs of ``bench/contradictions/pairs.jsonl``, written with the old grammar, never
trained on), every pair ``(a, b)`` is judged as if ``a`` were an accepted decision others rely
on (so the block tier is possible):

* **judge**: :class:`retrieval.contradiction.judge.PairJudge` with the shipped weights and the
  card's thresholds (block / review / pass);
* **grammar**: the hand-written rules the judge replaced (``bench.baselines.grammar.judge``;
  a hit blocks);
* **cosine**: cosine of the two statements' MiniLM embeddings, the threshold that maximises
  F1 on the dev split (a hit blocks).

Figures: block precision and recall, flagged (block + review) recall, look-alikes flagged,
per phenomenon, and the judge's own time per pair (one at a time, and in batches of 16).

Usage: python bench/bench_judge.py [--out bench/results/judge.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from bench.common import ROOT
from bench.judge_common import figures, load_split, split_digest

OLD_PAIRS = ROOT / "bench" / "contradictions" / "pairs.jsonl"


def old_rows() -> list[dict[str, Any]]:
    rows = []
    for line in OLD_PAIRS.read_text().splitlines():
        r = json.loads(line)
        label = "contradicts" if r["contradicts"] else "compatible"
        rows.append(
            {
                "a": r["a"]["text"],
                "b": r["b"]["text"],
                "label": label,
                "phenomenon": f"old:{r['kind']}",
                "split": r["split"],
            }
        )
    return rows


def gate_rows() -> list[dict[str, Any]]:
    """The gate split's cases as pairs (``a`` and the proposal; the dependents left out)."""
    path = ROOT / "bench" / "judgedata" / "gate.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def best_f1_threshold(rows: list[dict[str, Any]], scores: list[float]) -> float:
    best, best_t = -1.0, 0.5
    for t in np.arange(0.05, 1.0, 0.01):
        tp = sum(s >= t and r["label"] == "contradicts" for r, s in zip(rows, scores, strict=True))
        fp = sum(s >= t and r["label"] != "contradicts" for r, s in zip(rows, scores, strict=True))
        fn = sum(s < t and r["label"] == "contradicts" for r, s in zip(rows, scores, strict=True))
        f1 = 2 * tp / max(1, 2 * tp + fp + fn)
        if f1 > best:
            best, best_t = f1, round(float(t), 2)
    return best_t


def timed_per_pair(judge: Any, pairs: list[tuple[str, str]]) -> dict[str, float]:
    single = []
    for pair in pairs[:60]:
        judge._cache.clear()
        start = time.perf_counter()
        judge.score([pair])
        single.append((time.perf_counter() - start) * 1000)
    judge._cache.clear()
    start = time.perf_counter()
    judge.score(pairs)
    batched = (time.perf_counter() - start) * 1000 / len(pairs)
    return {
        "single_p50_ms": round(statistics.median(single), 2),
        "single_p95_ms": round(float(np.percentile(single, 95)), 2),
        "batched_per_pair_ms": round(batched, 2),
        "pairs": len(pairs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "judge.json")
    args = parser.parse_args()
    from bench.baselines.grammar import judge as grammar_judge
    from retrieval.contradiction.judge import PairJudge
    from retrieval.embedder import MiniLMEmbedder, limit_torch_threads

    limit_torch_threads(2)
    judge = PairJudge()
    block, review = judge.card["thresholds"]["block"], judge.card["thresholds"]["review"]
    embedder = MiniLMEmbedder()
    splits = {
        "test": load_split("test"),
        "test2": load_split("test2"),
        "gate": gate_rows(),
        "dev": load_split("dev"),
        "old540": old_rows(),
    }

    def cosines(rows: list[dict[str, Any]]) -> list[float]:
        va = np.asarray(embedder.embed([r["a"] for r in rows]))
        vb = np.asarray(embedder.embed([r["b"] for r in rows]))
        return [float(x) for x in (va * vb).sum(1)]

    cos = {name: cosines(rows) for name, rows in splits.items()}
    cos_t = best_f1_threshold(splits["dev"], cos["dev"])
    out: dict[str, Any] = {
        "judge": {"version": judge.version, "thresholds": judge.card["thresholds"]},
        "data": {
            "test_sha256": split_digest("test"),
            "test2_sha256": split_digest("test2"),
            "dev_sha256": split_digest("dev"),
            "train_sha256": split_digest("train")
            if (ROOT / "bench/judgedata/train.jsonl").exists()
            else None,
        },
        "cosine_threshold": cos_t,
        "splits": {},
    }
    for name, rows in splits.items():
        pairs = [(r["a"], r["b"]) for r in rows]
        p = [s.contradicts for s in judge.score(pairs)]
        grammar = [1.0 if grammar_judge(b, a) is not None else 0.0 for a, b in pairs]
        out["splits"][name] = {
            "judge": figures(rows, p, block, review),
            "grammar": figures(rows, grammar, 0.5, 0.5),
            "cosine": figures(rows, cos[name], cos_t, cos_t),
        }
        j = out["splits"][name]["judge"]
        print(
            f"{name}: judge block P {j['block_precision']} R {j['block_recall']}, flagged R "
            f"{j['flag_recall']}, look-alikes flagged {j['lookalikes_flagged']}; grammar R "
            f"{out['splits'][name]['grammar']['block_recall']} P "
            f"{out['splits'][name]['grammar']['block_precision']}; cosine R "
            f"{out['splits'][name]['cosine']['block_recall']} P "
            f"{out['splits'][name]['cosine']['block_precision']}",
            flush=True,
        )
    out["judge_time"] = timed_per_pair(judge, [(r["a"], r["b"]) for r in splits["dev"]])
    print(json.dumps(out["judge_time"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
