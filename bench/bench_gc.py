"""Garbage-collection pauses on a loaded store under a write/read load, with and without
``gc.freeze`` (``DECIGRAPH_GC_FREEZE``), interleaved in the same run.

Each run is a fresh process on a fresh copy of the store (``--store DATA_DIR``, e.g. the pinned
100k store): ``open_app`` as ``decigraph serve`` opens it, the model warmed as the server warms
it (the heap frozen after each when the setting is on), then a writer thread sends
``recordDecision`` and a reader thread ``recall`` through the JSON-RPC dispatcher (in process,
no HTTP: the pauses are the interpreter's, whoever is the client), ``--ops`` each, then
``--asof`` ``getGraph`` depth-2 reads at past seqs (a past graph is built per read: the cache
is off). ``gc.callbacks`` times every collection: the report holds, per mode, the number of
collections by generation, their max and p95 pause, and the requests' median / p95 / max.

``--synthetic N`` measures the graph alone at a size no seeded store exists for: a store of
``N`` synthetic decisions (``bench.dataset.fill``, no vectors, no indexes) is built in each
process, then a writer thread records decisions and a reader thread walks depth-2
neighbourhoods (``get_graph``), with the same pause accounting; the store is frozen after the
build when the setting is on, as ``open_app`` freezes it.

Usage: python bench/bench_gc.py --store DATA_DIR [--ops 300] [--asof 6] [--runs 2]
       python bench/bench_gc.py --synthetic 100000 [--ops 300] [--runs 2]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import percentile

QUERIES = [
    "why did we choose PostgreSQL for the billing ledger",
    "which cache did we adopt for sessions",
    "decisions about OAuth2 and the analytics warehouse",
    "what did the security team ask for",
    "Kafka or RabbitMQ for the event bus",
]


def _stats(values_ms: list[float]) -> dict[str, float]:
    if not values_ms:
        return {"count": 0}
    return {
        "median_ms": round(statistics.median(values_ms), 2),
        "p95_ms": round(percentile(values_ms, 0.95), 2),
        "max_ms": round(max(values_ms), 2),
        "count": len(values_ms),
    }


class Pauses:
    """Every collection's pause by generation (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.by_gen: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._begun: list[float] = []

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._begun.append(time.perf_counter())
        elif self._begun:
            self.by_gen[info["generation"]].append((time.perf_counter() - self._begun.pop()) * 1000)

    def report(self) -> dict[str, Any]:
        every = [p for g in self.by_gen.values() for p in g]
        return {
            "collections": {f"gen{g}": len(p) for g, p in self.by_gen.items()},
            "all": _stats(every),
            "gen2": _stats(self.by_gen[2]),
        }


def synthetic(decisions: int, ops: int, seed: int) -> dict[str, Any]:
    """The graph alone: ``decisions`` synthetic decisions, then a write/read load."""
    from bench.dataset import draft_for, fill
    from graph.algorithms.traversal import get_graph
    from graph.gcpause import freeze_heap, gc_paused
    from graph.store import DecisionStore, StoreOptions
    from service.settings import Settings

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="decigraph-gc-synth-") as tmp:
        options = StoreOptions(fsync="never", snapshot_every=0)
        store = DecisionStore.open(Path(tmp) / "data", options)
        started = time.perf_counter()
        with gc_paused():
            fill(store, decisions, rng)
        built_s = time.perf_counter() - started
        if Settings().gc_freeze:
            freeze_heap()
        ids = sorted(store.graph.nodes)
        drafts = [draft_for(rng) for _ in range(ops)]
        picks = [rng.choice(ids) for _ in range(ops)]
        pauses = Pauses()
        writes: list[float] = []
        reads: list[float] = []

        def writer() -> None:
            for draft in drafts:
                t0 = time.perf_counter()
                store.record(draft, "bench")
                writes.append((time.perf_counter() - t0) * 1000)

        def reader() -> None:
            for node in picks:
                t0 = time.perf_counter()
                with store.lock:
                    get_graph(store.graph, node, depth=2)
                reads.append((time.perf_counter() - t0) * 1000)

        gc.callbacks.append(pauses)
        threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        gc.callbacks.remove(pauses)
        full = time.perf_counter()
        gc.collect()  # one full collection, as the next generation-2 collection would run
        full_ms = (time.perf_counter() - full) * 1000
        store.close()
    return {
        "decisions": decisions,
        "build_s": round(built_s, 2),
        "writes": _stats(writes),
        "reads_getgraph_depth2": _stats(reads),
        "gc_pauses": pauses.report(),
        "full_collection_ms": round(full_ms, 1),
        "frozen_objects": gc.get_freeze_count(),
    }


def child(data: Path, ops: int, asof: int, seed: int) -> dict[str, Any]:
    """One measured run in this process (the environment says whether to freeze)."""
    from bench.dataset import draft_for
    from service.composition import Warmup, open_app
    from service.methods import build_registry
    from service.rpc.protocol import CallContext, Dispatcher
    from service.settings import Settings

    settings = Settings(data_dir=data)
    started = time.perf_counter()
    app = open_app(settings)
    Warmup(app, freeze=settings.gc_freeze).run()
    opened_s = time.perf_counter() - started
    dispatcher = Dispatcher(build_registry(app))
    pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
    begun: list[float] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            begun.append(time.perf_counter())
        elif begun:
            pauses[info["generation"]].append((time.perf_counter() - begun.pop()) * 1000)

    refused: list[str] = []

    def call(method: str, params: dict[str, Any]) -> float:
        request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
        t0 = time.perf_counter()
        answer = dispatcher.handle(request, CallContext("bench"))
        elapsed = (time.perf_counter() - t0) * 1000
        if answer is None or "error" in answer:  # a guardrail's refusal is an answer too
            refused.append(f"{method}: {str(answer)[:200]}")
        return elapsed

    rng = random.Random(seed)
    drafts = [draft_for(rng) for _ in range(ops)]
    writes: list[float] = []
    reads: list[float] = []

    def writer() -> None:
        for d in drafts:
            params = {"decision": d.text, "context": d.context, "category": d.category}
            writes.append(call("recordDecision", {**params, "tags": d.tags, "project": d.project}))

    def reader() -> None:
        for i in range(ops):
            reads.append(call("recall", {"query": QUERIES[i % len(QUERIES)], "limit": 10}))

    gc.callbacks.append(on_gc)
    wall = time.perf_counter()
    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    load_s = time.perf_counter() - wall
    under_load = {g: list(p) for g, p in pauses.items()}
    app.past.cache_size = 0
    node = next(iter(app.store.graph.nodes))
    past: list[float] = []
    head = app.store.seq
    for i in range(asof):
        seq = head - 1 - rng.randrange(max(1, head // 2))
        past.append(call("getGraph", {"nodeId": node, "depth": 2, "asOf": max(1, seq + i)}))
    gc.callbacks.remove(on_gc)
    asof_pauses = {g: p[len(under_load[g]) :] for g, p in pauses.items()}
    app.close()

    def pause_report(by_gen: dict[int, list[float]]) -> dict[str, Any]:
        every = [p for g in by_gen.values() for p in g]
        return {
            "collections": {f"gen{g}": len(p) for g, p in by_gen.items()},
            "all": _stats(every),
            "gen2": _stats(by_gen[2]),
        }

    return {
        "open_and_warm_s": round(opened_s, 2),
        "load_s": round(load_s, 2),
        "writes": _stats(writes),
        "reads": _stats(reads),
        "gc_pauses": pause_report(under_load),
        "asof_getgraph": _stats(past),
        "asof_gc_pauses": pause_report(asof_pauses),
        "frozen_objects": gc.get_freeze_count(),
        "refused": len(refused),
        "refused_first": refused[:2],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, help="a data directory (copied)")
    parser.add_argument("--synthetic", type=int, default=0, help="decisions of a synthetic graph")
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--asof", type=int, default=6)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results/gc.json"))
    parser.add_argument("--child", choices=["on", "off"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.synthetic:
        print(json.dumps(synthetic(args.synthetic, args.ops, args.seed)))
        return
    if args.child:
        print(json.dumps(child(args.store, args.ops, args.asof, args.seed)))
        return
    if args.synthetic:
        run_synthetic(args)
        return
    if args.store is None:
        parser.error("--store or --synthetic is required")
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory(prefix="decigraph-gc-") as tmp:
        for run in range(args.runs):
            for mode in ("off", "on"):  # interleaved: the host's load hits both alike
                data = Path(tmp) / "data"
                shutil.rmtree(data, ignore_errors=True)
                shutil.copytree(args.store, data, ignore=shutil.ignore_patterns("LOCK"))
                env = {**os.environ, "DECIGRAPH_GC_FREEZE": "1" if mode == "on" else "0"}
                command = [sys.executable, __file__, "--store", str(data), "--child", mode]
                command += ["--ops", str(args.ops), "--asof", str(args.asof)]
                command += ["--seed", str(args.seed + run)]
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                result = json.loads(out.stdout.strip().splitlines()[-1])
                result["load_average"] = os.getloadavg()[0]
                runs[mode].append(result)
                print(mode, json.dumps(result), flush=True)
    with (args.store / "events.jsonl").open("rb") as handle:
        events = sum(1 for _ in handle)
    report = {"events": events, "ops": args.ops, "asof": args.asof, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


def run_synthetic(args: argparse.Namespace) -> None:
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    for run in range(args.runs):
        for mode in ("off", "on"):  # interleaved
            env = {**os.environ, "DECIGRAPH_GC_FREEZE": "1" if mode == "on" else "0"}
            command = [sys.executable, __file__, "--synthetic", str(args.synthetic)]
            command += ["--child", mode, "--ops", str(args.ops), "--seed", str(args.seed + run)]
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            result["load_average"] = round(os.getloadavg()[0], 2)
            runs[mode].append(result)
            print(mode, json.dumps(result), flush=True)
    report = {"synthetic": args.synthetic, "ops": args.ops, "vectors": False, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
