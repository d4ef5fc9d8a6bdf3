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
Each run also records the server's own start-up timeline (the ``decigraph: start-up:`` line:
when imports, the store, ChromaDB, the indexes, uvicorn and the model were done, in seconds
since the process started; the model loads in a thread from the start). The clean restart is
also run, interleaved, as :data:`VARIANTS` say: ``serve_process`` (the model first loaded in a
helper process, ``DECIGRAPH_MODEL_BOOT=process``) and ``serve_sentence_transformers`` (the
server as it was: the model on ``sentence_transformers``, no ``gc.freeze``).

In-process, beside it: ``DecisionStore.open`` by full replay and by snapshot + tail (median of
``--runs``), a sequential stage timeline of a clean start (``stages``: each stage alone, in a
fresh process, per runtime), and the baseline: a bare Python process that loads
all-MiniLM-L6-v2 and embeds one sentence (the fixed cost of any process that answers a recall),
per runtime (``model_only_process``: ``sentence_transformers``, the issue's 6.0 s;
``model_only_process_lean``).

Usage: python bench/bench_startup.py [--size 100000 | --store DATA_DIR] [--tail 300] [--runs 3]
       [--scenarios "clean restart" ...]
"""

from __future__ import annotations

import argparse
import json
import os
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
    "MiniLMEmbedder(threads=1).embed(['load the model and embed one sentence'])"
)
ST = {"DECIGRAPH_MODEL_RUNTIME": "sentence-transformers"}
#: The clean restart's other variants, interleaved with the default (the model in a thread, on
#: the lean runtime): the model first in a helper process; and the server as it was (model
#: on sentence-transformers, no gc.freeze).
VARIANTS = {
    "serve_process": {"DECIGRAPH_MODEL_BOOT": "process"},
    "serve_sentence_transformers": {
        **ST,
        "DECIGRAPH_MODEL_BOOT": "thread",
        "DECIGRAPH_GC_FREEZE": "0",
    },
}
SCENARIOS = ["clean restart", "snapshot + tail", "full replay", "index rebuilt from ChromaDB"]

# Each stage of a clean start alone, one after the other, in a fresh process (argv: data dir).
STAGES = """
import json, sys, time
t0 = last = time.perf_counter()
out = {}
def mark(name):
    global last
    now = time.perf_counter(); out[name] = round(now - last, 3); last = now
sys.path.insert(0, sys.argv[2])
import uvicorn, service.cli.serve, service.composition, service.http.app
mark("imports")
from service.settings import Settings
settings = Settings(data_dir=sys.argv[1])
mark("settings")
from service.composition import open_store, open_vectors, _embedder
from retrieval import memsnap
store = open_store(settings)
report = store.open_report
mark("store (snapshot + tail)")
out["tail_replayed"] = report.replayed
vectors = open_vectors(settings)
mark("chromadb open")
state = memsnap.load(store.data_dir / "index" / "memory.pickle", vectors.watermark())
mark("index snapshot load")
out["index_snapshot_used"] = state is not None
del state
from retrieval.index import DualIndex
embedder = _embedder(settings)
index = DualIndex.open(store, embedder, vectors)
mark("indexes open (again, whole)")
from retrieval.embedder import limit_torch_threads
limit_torch_threads(1)
if embedder.runtime == "lean":
    import torch, transformers, tokenizers
    from transformers import BertModel
else:
    import sentence_transformers
mark("model import")
embedder.load()
mark("model load")
embedder.embed(["first embed"])
mark("first embed")
out["total_s"] = round(time.perf_counter() - t0, 3)
print(json.dumps(out))
"""


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
    store._writable = False  # close() then writes no snapshot (and closes the log, the lock)
    store.close()
    return written


def serve_once(
    template: Path, work: Path, query: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    copy_store(template, data)
    log = work / "serve.log"
    log.unlink(missing_ok=True)
    server = Server(data, log, env)
    try:
        seconds = server.wait_answer("recall", {"query": query, "limit": 10})
        memory = server.memory_mb()
        deadline = time.perf_counter() + 30
        while "decigraph: start-up:" not in log.read_text() and time.perf_counter() < deadline:
            time.sleep(0.05)
    finally:
        server.stop()
    shutil.rmtree(data, ignore_errors=True)
    return {"s": seconds, **memory, "timeline": parse_timeline(log.read_text())}


def parse_timeline(text: str) -> dict[str, float]:
    """``decigraph: start-up: imports 0.91 s, store 4.10 s, ...`` -> ``{"imports": 0.91, ...}``."""
    for line in text.splitlines():
        if line.startswith("decigraph: start-up: "):
            marks = line.removeprefix("decigraph: start-up: ").split(", ")
            return {m.rsplit(" ", 2)[0]: float(m.rsplit(" ", 2)[1]) for m in marks}
    return {}


def serve_stats(runs: list[dict[str, Any]]) -> dict[str, Any]:
    timeline: dict[str, float] = {}
    for stage in sorted({k for r in runs for k in r["timeline"]}):
        seen = [r["timeline"][stage] for r in runs if stage in r["timeline"]]
        timeline[stage] = round(statistics.median(seen), 2)
    return {
        **stats_s([r["s"] for r in runs]),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "timeline_s": dict(sorted(timeline.items(), key=lambda item: item[1])),
    }


def stage_timeline(template: Path, work: Path, runs: int) -> dict[str, Any]:
    """Each stage of a clean start alone, in sequence, in fresh processes on fresh copies
    (median of ``runs``), per model runtime."""
    root = str(Path(__file__).resolve().parent.parent)
    out: dict[str, Any] = {}
    for name, env in (("lean", {}), ("sentence_transformers", ST)):
        samples = []
        for _ in range(runs):
            data = work / "data"
            shutil.rmtree(data, ignore_errors=True)
            copy_store(template, data)
            clean = {k: v for k, v in os.environ.items() if not k.startswith("DECIGRAPH_")}
            done = subprocess.run(
                [sys.executable, "-c", STAGES, str(data), root],
                env={**clean, **env},
                capture_output=True,
                text=True,
                check=True,
            )
            samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
            shutil.rmtree(data, ignore_errors=True)
        out[name] = {
            k: round(statistics.median(s[k] for s in samples), 3)
            if isinstance(samples[0][k], float)
            else samples[0][k]
            for k in samples[0]
        }
    return out


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
    parser.add_argument(
        "--store", type=Path, default=None, help="a seeded data directory to copy (no cache)"
    )
    parser.add_argument(
        "--scenarios", nargs="*", default=None, help="only these serve scenarios (by name)"
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--tail", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/startup.json"))
    args = parser.parse_args()
    if args.store is not None:
        cached = args.store
        meta = args.store.parent / "meta.json"
        build: dict[str, Any] = json.loads(meta.read_text()) if meta.is_file() else {}
        args.size = int(build.get("decisions", args.size))
    else:
        cached, build = ensure_store(args.size, args.seed)
    query = "why did we choose PostgreSQL for the billing ledger"
    report: dict[str, Any] = {"decisions": args.size, "build": build, "tail": args.tail}
    report["load_average_start"] = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="decigraph-startup-") as tmp:
        root = Path(tmp)
        wanted = args.scenarios or SCENARIOS
        tail_template = root / "tail"
        if "snapshot + tail" in wanted:
            report["tail_events"] = with_tail(cached, tail_template, args.tail, args.seed + 3)
        scenarios: dict[str, Path] = {"clean restart": cached, "snapshot + tail": tail_template}
        if "full replay" in wanted:
            scenarios["full replay"] = copy_store(cached, root / "no-snapshot")
            (scenarios["full replay"] / "snapshot.json").unlink()
        if "index rebuilt from ChromaDB" in wanted:
            scenarios["index rebuilt from ChromaDB"] = copy_store(cached, root / "no-index")
            shutil.rmtree(scenarios["index rebuilt from ChromaDB"] / "index")
        report["serve"] = {}
        for variant in VARIANTS:
            report[variant] = {}
        for name, template in scenarios.items():
            if name not in wanted:
                continue
            runs: list[dict[str, Any]] = []
            others: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
            for _ in range(args.runs):  # the variants interleaved, on the clean restart
                runs.append(serve_once(template, root / "run", query))
                if name == "clean restart":
                    for variant, env in VARIANTS.items():
                        others[variant].append(serve_once(template, root / "run", query, env))
            report["serve"][name] = serve_stats(runs)
            print(name, json.dumps(report["serve"][name]), flush=True)
            for variant, done in others.items():
                if done:
                    report[variant][name] = serve_stats(done)
                    print(name, variant, json.dumps(report[variant][name]), flush=True)
        report["stages"] = stage_timeline(cached, root / "stages", args.runs)
        report["store_open"] = {"full replay": stats_s(timed_open(cached, False, args.runs))}
        if "snapshot + tail" in wanted:
            tail_open = stats_s(timed_open(tail_template, True, args.runs))
            report["store_open"]["snapshot + tail"] = tail_open
        with DecisionStore.open(cached, StoreOptions(read_only=True)) as store:
            report["events"] = store.seq
    root_dir = str(Path(__file__).resolve().parent.parent)
    baseline: dict[str, list[float]] = {"lean": [], "sentence_transformers": []}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DECIGRAPH_")}
    for _ in range(args.runs):
        for name, env in (("lean", {}), ("sentence_transformers", ST)):
            started = time.perf_counter()
            command = [sys.executable, "-c", MODEL_ONLY.format(root=root_dir)]
            subprocess.run(command, check=True, capture_output=True, env={**clean, **env})
            baseline[name].append(time.perf_counter() - started)
    report["model_only_process"] = stats_s(baseline["sentence_transformers"])
    report["model_only_process_lean"] = stats_s(baseline["lean"])
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report["store_open"]), json.dumps(report["model_only_process"]))
    print(json.dumps(report["model_only_process_lean"]), json.dumps(report["stages"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
