"""Latency tails under CPU contention: ``remember`` and ``recall`` over HTTP, quiet and busy,
with a per-stage breakdown of the slowest 5 % against the median request.

A real ``decigraph serve`` (``bench.common.Server``) per torch-thread configuration
(``DECIGRAPH_TORCH_THREADS``: ``0`` is torch's own default, one intra-op thread per core, what
every release before this setting did). Each configuration runs each workload twice, on the
same server: *quiet* (nothing of ours competing) and *busy* (``--burners`` processes running
``while True: pass``, unpinned, started before the phase and killed after it). The host's load
average at each phase's start is recorded: other work on the machine counts as "quiet" here.

- ``remember``: LoCoMo turns (``../shared/data/locomo-dev.json``, synthetic decision texts
  when it is missing) written one at a time into a fresh store, distinct texts per phase;
- ``recall``: seeded queries (``bench/dataset.py``) against a copy of the cached seeded store.

Per-stage timings come from the server itself: the benchmark starts it with a
``sitecustomize`` (``PYTHONPATH``) that installs a recording span factory on the tracing hook
(``graph/tracing.py``: ``embed``, ``store.append``, ``index.dual``, ``index.flush``,
``index.chroma`` and the JSON-RPC method's span), wraps the stages that have no span
(auto-edges, the gate, recall's vector query, keyword search, fusion, traversal, ranking) and
records every garbage collection. A request's stages are the spans inside its client-side time
window (one client, sequential calls). ``http+asgi`` is the client's time minus the method's.

Usage: python bench/bench_tails.py [--size 10000] [--writes 1000] [--queries 200]
       [--threads 0 1 2] [--burners 1] [--workloads remember recall] [--store DATA_DIR]
       [--out bench/results/tails.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, Server, percentile
from bench.dataset import copy_store, draft_for, ensure_store, queries

LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev.json"

# Installed in the served process through PYTHONPATH; inert unless DECIGRAPH_BENCH_SPANS is set.
HOOK = """
import atexit, functools, gc, json, os, threading, time
from contextlib import contextmanager

_out = os.environ.get("DECIGRAPH_BENCH_SPANS")
if _out:
    _spans = []
    _clock = time.perf_counter

    def _factory(name, attributes):
        @contextmanager
        def _cm():
            start = _clock()
            try:
                yield _NoteSpan
            finally:
                _spans.append((name, start, _clock()))
        return _cm()

    class _NoteSpan:
        @staticmethod
        def set_attribute(key, value):
            return None
        @staticmethod
        def fail(description):
            return None

    def _timed(name, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            start = _clock()
            try:
                return fn(*args, **kwargs)
            finally:
                _spans.append((name, start, _clock()))
        return wrapper

    _gc_start = {}
    def _gc(phase, info):
        if phase == "start":
            _gc_start[threading.get_ident()] = _clock()
        else:
            begun = _gc_start.pop(threading.get_ident(), None)
            if begun is not None:
                _spans.append((f"gc{info.get('generation', '')}", begun, _clock()))
    gc.callbacks.append(_gc)

    from graph import tracing
    tracing.install(_factory)
    import retrieval.writes as _writes, retrieval.recall as _recall, retrieval.index as _index
    import service.usecases.writes as _uwrites
    _writes.plan_edges = _timed("auto_edges", _writes.plan_edges)
    _uwrites.judge = _timed("gate", _uwrites.judge)
    _recall.search_keywords = _timed("keyword", _recall.search_keywords)
    _index.DualIndex.vector_search = _timed("vector_query", _index.DualIndex.vector_search)
    for _name in ("collect", "traverse", "rank"):
        setattr(_recall._Recall, _name, _timed(_name, getattr(_recall._Recall, _name)))

    def _threads():
        import sys
        torch = sys.modules.get("torch")
        return None if torch is None else torch.get_num_threads()

    def _dump():
        with open(_out, "w") as handle:
            json.dump({"spans": _spans, "torch_threads": _threads()}, handle)
    atexit.register(_dump)
"""

#: Stages reported for each workload (a span's name -> the stage's name in the report).
STAGES = {
    "remember": {
        "cstp.remember": "server",
        "embed": "embed",
        "auto_edges": "auto_edges",
        "store.append": "append+fsync",
        "index.dual": "index",
        "index.flush": "flush",
        "index.chroma": "chroma",
        "gc": "gc",
    },
    "recall": {
        "cstp.recall": "server",
        "embed": "embed",
        "vector_query": "vector_query",
        "keyword": "keyword",
        "collect": "collect",
        "traverse": "traverse",
        "rank": "rank",
        "index.chroma": "chroma",
        "gc": "gc",
    },
}


def locomo_texts(count: int) -> list[str]:
    """LoCoMo turns as the LoCoMo benchmark stores them; synthetic decisions if absent."""
    texts: list[str] = []
    if LOCOMO.exists():
        for sample in json.loads(LOCOMO.read_text()):
            conv = sample["conversation"]
            n = 1
            while f"session_{n}" in conv:
                for turn in conv[f"session_{n}"]:
                    text = f"{turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        text += f" [image: {turn['blip_caption']}]"
                    texts.append(text)
                n += 1
    rng = random.Random(5)
    while len(texts) < count:
        texts.append(draft_for(rng).text)
    return texts[:count]


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


class Burners:
    """``count`` processes spinning on the CPU (unpinned) while the ``with`` block runs."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Burners:
        spin = [sys.executable, "-c", "while True: pass"]
        self.procs = [subprocess.Popen(spin) for _ in range(self.count)]
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def timed_calls(server: Server, method: str, params: list[dict[str, Any]]) -> list[list[float]]:
    """Each call's client-side ``[start, end]`` (perf_counter, the server's clock too)."""
    windows = []
    for p in params:
        start = time.perf_counter()
        server.rpc(method, p)
        windows.append([start, time.perf_counter()])
    return windows


def stage_times(
    windows: list[list[float]], spans: list[list[Any]], names: dict[str, str]
) -> list[dict[str, float]]:
    """Per request: milliseconds spent in each stage (spans inside its window, summed)."""
    spans = sorted(spans, key=lambda s: s[1])
    rows: list[dict[str, float]] = []
    j = 0
    for start, end in windows:
        while j < len(spans) and spans[j][1] < start:
            j += 1
        row: dict[str, float] = defaultdict(float)
        k = j
        while k < len(spans) and spans[k][1] <= end:
            name = "gc" if spans[k][0].startswith("gc") else spans[k][0]
            if name in names:
                row[names[name]] += (spans[k][2] - spans[k][1]) * 1000.0
            k += 1
        row["client"] = (end - start) * 1000.0
        row["http+asgi"] = row["client"] - row.get("server", 0.0)
        rows.append(dict(row))
    return rows


def breakdown(rows: list[dict[str, float]]) -> dict[str, Any]:
    """Latency summary and each stage's mean over the slowest 5 % vs the median 10 %."""
    total = [r["client"] for r in rows]
    ordered = sorted(rows, key=lambda r: r["client"])
    n = len(ordered)
    tail = ordered[max(0, n - max(1, n // 20)) :]
    middle = ordered[int(n * 0.45) : max(int(n * 0.55), int(n * 0.45) + 1)]
    stages = sorted({k for r in rows for k in r})

    def mean(group: list[dict[str, float]], key: str) -> float:
        return round(statistics.fmean(r.get(key, 0.0) for r in group), 2)

    return {
        "p50_ms": round(statistics.median(total), 2),
        "p95_ms": round(percentile(total, 0.95), 2),
        "max_ms": round(max(total), 2),
        "mean_ms": round(statistics.fmean(total), 2),
        "p95_over_p50": round(percentile(total, 0.95) / statistics.median(total), 2),
        "runs": n,
        "stages_median_ms": {k: mean(middle, k) for k in stages},
        "stages_slowest_5pct_ms": {k: mean(tail, k) for k in stages},
    }


def run_config(
    threads: int, args: argparse.Namespace, store: Path | None, tmp: Path
) -> dict[str, Any]:
    label = f"threads={threads}" if threads else "threads=torch default"
    result: dict[str, Any] = {"torch_threads_setting": threads}
    hook = tmp / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK)
    texts = locomo_texts(2 * args.writes)
    workloads: list[tuple[str, Path]] = []
    if "remember" in args.workloads:
        workloads.append(("remember", tmp / f"empty-{threads}"))
    if "recall" in args.workloads and store is not None:
        workloads.append(("recall", copy_store(store, tmp / f"store-{threads}")))
    for workload, data in workloads:
        spans_file = tmp / f"spans-{workload}-{threads}.json"
        env = {
            "DECIGRAPH_TORCH_THREADS": str(threads),
            "DECIGRAPH_BENCH_SPANS": str(spans_file),
            "PYTHONPATH": os.pathsep.join([str(hook), str(ROOT)]),
        }
        server = Server(data, tmp / f"serve-{workload}-{threads}.log", env)
        phases: dict[str, list[list[float]]] = {}
        loads: dict[str, list[float]] = {}
        try:
            server.wait_answer("recall", {"query": "warm up", "limit": 10})
            rng = random.Random(args.seed)
            for i, phase in enumerate(("quiet", "busy")):
                if workload == "remember":
                    chunk = texts[i * args.writes : (i + 1) * args.writes]
                    params = [{"text": t, "source": "bench"} for t in chunk]
                else:
                    params = [{"query": q, "limit": 10} for q in queries(rng, args.queries)]
                timed_calls(server, workload, params[:5])  # untimed warm-up of this phase
                print(f"[tails] {label} {workload} {phase} load {loadavg()}", flush=True)
                loads[phase] = loadavg()
                if phase == "busy":
                    with Burners(args.burners):
                        phases[phase] = timed_calls(server, workload, params[5:])
                else:
                    phases[phase] = timed_calls(server, workload, params[5:])
        finally:
            server.stop()
        recorded = json.loads(spans_file.read_text())
        result["torch_threads_in_server"] = recorded["torch_threads"]
        for phase, windows in phases.items():
            rows = stage_times(windows, recorded["spans"], STAGES[workload])
            summary = breakdown(rows)
            result[f"{workload} {phase}"] = {"loadavg_at_start": loads[phase], **summary}
            print(
                f"[tails] {label} {workload} {phase}: p50 {summary['p50_ms']} "
                f"p95 {summary['p95_ms']} max {summary['max_ms']} ms",
                flush=True,
            )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="decisions in recall's store")
    parser.add_argument("--store", type=Path, help="a data directory to copy for recall")
    parser.add_argument("--writes", type=int, default=1000, help="remember calls per phase")
    parser.add_argument("--queries", type=int, default=200, help="recall calls per phase")
    parser.add_argument("--threads", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--burners", type=int, default=1, help="CPU-spinning processes (busy)")
    parser.add_argument(
        "--workloads", nargs="+", choices=["remember", "recall"], default=["remember", "recall"]
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=Path("bench/results/tails.json"))
    args = parser.parse_args()
    started = time.perf_counter()
    store, build = args.store, None
    if store is None and "recall" in args.workloads:
        store, build = ensure_store(args.size, args.seed)
    configs = []
    with tempfile.TemporaryDirectory(prefix="decigraph-tails-") as tmp:
        for threads in args.threads:
            configs.append(run_config(threads, args, store, Path(tmp)))
    report = {
        "cores": os.cpu_count(),
        "busy": f"{args.burners} unpinned `while True: pass` process(es) during the busy phase",
        "client": "httpx, one keep-alive connection, sequential calls, loopback",
        "writes_per_phase": args.writes - 5,
        "queries_per_phase": args.queries - 5,
        "recall_store": {"decisions": args.size, "build": build, "path": str(store)},
        "configs": configs,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
