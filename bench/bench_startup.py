"""Start-up: cold start of ``decigraph serve`` to its first answered request, and full replay.

On a copy of the cached seeded store (``bench/dataset.py``, default 100,000 decisions) each
scenario starts a real ``decigraph serve`` (fresh process, real token) and measures the wall
time from ``Popen`` to the first answered ``recall`` (polled every 50 ms; the answer needs the
store, the indexes and the embedding model, so it is the real "ready"):

- ``clean restart``: store snapshot and index snapshot both at the log head (what a SIGTERM
  leaves);
- ``snapshot + tail``: the store snapshot is ``--tail`` events behind the log (decisions
  written through the normal write path after it), the index snapshot at the head;
- ``full replay``: no store snapshot (the whole log is replayed), index snapshot at the head;
- ``index rebuilt from ChromaDB``: snapshots at the head but no index snapshot (as after
  ``kill -9``): the in-memory indexes are rebuilt and every vector read back from ChromaDB.

Each scenario runs ``--runs`` times from a fresh copy (a clean stop rewrites the snapshots).
In-process, beside it: ``DecisionStore.open`` by full replay and by snapshot + tail (median of
``--runs``), and the baseline: a bare Python process that loads all-MiniLM-L6-v2 and embeds one
sentence (the fixed cost of any process that answers a recall).

Usage: python bench/bench_startup.py [--size 100000] [--tail 300] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Server, percentile
from bench.dataset import copy_store, draft_for, ensure_store
from graph.store import DecisionStore, StoreOptions

MODEL_ONLY = (
    "import sys; sys.path.insert(0, {root!r}); from retrieval.embedder import MiniLMEmbedder; "
    "MiniLMEmbedder().embed(['load the model and embed one sentence'])"
)


def with_tail(cached: Path, target: Path, tail: int, seed: int) -> int:
    """A copy whose store snapshot is ``tail`` events behind the log; returns the tail length."""
    from retrieval.embedder import MiniLMEmbedder
    from retrieval.index import DualIndex
    from retrieval.vector import ChromaVectorIndex
    from retrieval.writes import record

    data = copy_store(cached, target)
    store = DecisionStore.open(data, StoreOptions(fsync="never", snapshot_every=0))
    index = DualIndex.open(store, MiniLMEmbedder(), ChromaVectorIndex.persistent(data / "chroma"))
    before = store.seq
    rng = random.Random(seed)
    for _ in range(tail):
        record(index, draft_for(rng), "bench")
    index.close()  # the index snapshot covers the tail
    written = store.seq - before
    # Leave the store without a snapshot at close, as after a crash between two snapshots.
    store._writer.close()  # type: ignore[union-attr]
    store._writer = None
    store._dir_lock.release()
    return written


def serve_once(template: Path, work: Path, query: str) -> dict[str, float]:
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    copy_store(template, data)
    server = Server(data, work / "serve.log")
    try:
        seconds = server.wait_answer("recall", {"query": query, "limit": 10})
        memory = server.memory_mb()
    finally:
        server.stop()
    shutil.rmtree(data, ignore_errors=True)
    return {"s": seconds, **memory}


def timed_open(data: Path, use_snapshot: bool, runs: int) -> list[float]:
    options = StoreOptions(read_only=True, use_snapshot=use_snapshot)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        store = DecisionStore.open(data, options)
        times.append(time.perf_counter() - started)
        store.close()
    return times


def stats_s(values: list[float]) -> dict[str, float]:
    return {
        "median_s": round(statistics.median(values), 2),
        "p95_s": round(percentile(values, 0.95), 2),
        "runs": len(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--tail", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/startup.json"))
    args = parser.parse_args()
    cached, build = ensure_store(args.size, args.seed)
    query = "why did we choose PostgreSQL for the billing ledger"
    report: dict[str, Any] = {"decisions": args.size, "build": build, "tail": args.tail}
    with tempfile.TemporaryDirectory(prefix="decigraph-startup-") as tmp:
        root = Path(tmp)
        tail_template = root / "tail"
        report["tail_events"] = with_tail(cached, tail_template, args.tail, args.seed + 3)
        no_snapshot = copy_store(cached, root / "no-snapshot")
        (no_snapshot / "snapshot.json").unlink()
        no_index = copy_store(cached, root / "no-index")
        shutil.rmtree(no_index / "index")
        scenarios = {
            "clean restart": cached,
            "snapshot + tail": tail_template,
            "full replay": no_snapshot,
            "index rebuilt from ChromaDB": no_index,
        }
        report["serve"] = {}
        for name, template in scenarios.items():
            runs = [serve_once(template, root / "run", query) for _ in range(args.runs)]
            report["serve"][name] = {
                **stats_s([r["s"] for r in runs]),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
            }
            print(name, json.dumps(report["serve"][name]), flush=True)
        report["store_open"] = {
            "full replay": stats_s(timed_open(cached, False, args.runs)),
            "snapshot + tail": stats_s(timed_open(tail_template, True, args.runs)),
        }
        with DecisionStore.open(cached, StoreOptions(read_only=True)) as store:
            report["events"] = store.seq
    root_dir = str(Path(__file__).resolve().parent.parent)
    baseline = []
    for _ in range(args.runs):
        started = time.perf_counter()
        command = [sys.executable, "-c", MODEL_ONLY.format(root=root_dir)]
        subprocess.run(command, check=True, capture_output=True)
        baseline.append(time.perf_counter() - started)
    report["model_only_process"] = stats_s(baseline)
    print(json.dumps(report["store_open"]), json.dumps(report["model_only_process"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
