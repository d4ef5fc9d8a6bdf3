"""``recordDecision`` over HTTP on a seeded store, against its floor measured in the same run,
with the per-stage breakdown of the median and of the slowest 5 % of requests.

For each store (``--store DATA_DIR``, repeatable: the pinned copies; else the cached seeded
stores of ``--sizes``) a private copy is served by a real ``decigraph serve`` (default
settings: ``fsync="always"``, guardrails on, embedded ChromaDB, one torch thread), started with
the recording span factory of ``bench_tails.py`` (``embed``, ``store.append``, ``index.*``,
the JSON-RPC method, wrapped ``gate`` / ``auto_edges`` / ``salience`` / ``contradictions``
stages, every garbage collection). The client is one ``httpx`` connection, calls in sequence:
seeded new decisions (statement, context, category, stakes, tags, project: ``bench_http``'s
``recordDecision`` params), each timed from request to response. Answers refused by a
guardrail are timed and counted too.

**Floor**, measured in the same run, interleaved with the writes (after every block of
``--block`` writes): the same decisions' stored texts embedded one at a time, warm, in this
process (``MiniLMEmbedder``, one torch thread, as the server runs it); one ~1 KB append +
``fdatasync`` to a file beside the store; one no-op HTTP call (``GET /.well-known/agent.json``)
to the same server. ``floor`` = the sum of the three medians (and of the three p95s).

``--compare`` serves two more copies and interleaves the servers block by block on the same
decisions: ``exact_scan`` with ``DECIGRAPH_NEIGHBOUR_POOL=0`` (the neighbour scan reads every
stored vector, as before the neighbour pool) and ``exact`` with that and
``DECIGRAPH_GATE_SALIENCE=exact`` too (the gate recomputes the whole-graph salience after each
write: the write path before issue 16); every row is reported.

JSON: ``{"stores": [{"decisions", "path", "loadavg_median", "loadavg_per_block",
"runs": {"new": ROW, "exact_scan": ROW, "exact": ROW (the last two with --compare)},
"floor": FLOOR}], "cores", "wall_s"}``;
``ROW = {"median_ms", "p50_ms", "p95_ms", "max_ms", "mean_ms", "p95_over_p50", "runs",
"outcomes", "stages_median_ms", "stages_slowest_5pct_ms"}`` (stage means in ms over the middle
10 % and the slowest 5 % of requests: server, http+asgi, embed, gate, gate.salience,
gate.contradictions, auto_edges, append+fsync, index, flush, chroma, gc);
``FLOOR = {"embed", "fsync", "http": {"median_ms", "p95_ms", "runs"}, "floor_median_ms",
"floor_p95_ms"}``.

Usage: python bench/bench_writes.py [--store DATA_DIR ...] [--sizes 100000] [--writes 300]
       [--block 20] [--compare] [--out bench/results/writes.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_http import record_params
from bench.bench_tails import HOOK, breakdown, loadavg, stage_times
from bench.common import ROOT, Server, summary
from bench.dataset import copy_store, ensure_store

# Stages the tails hook does not wrap: the gate's salience and contradiction pass.
EXTRA_HOOK = """
if _out:
    import graph.store as _gstore
    import service.usecases.gate as _gate
    _gstore.DecisionStore.salience = _timed("salience", _gstore.DecisionStore.salience)
    if hasattr(_gstore.DecisionStore, "salience_of"):
        _gstore.DecisionStore.salience_of = _timed("salience", _gstore.DecisionStore.salience_of)
    _gate.detect_contradictions = _timed("contradictions", _gate.detect_contradictions)
    import service.usecases.writes as _w
    if hasattr(_w, "semantic_neighbours"):
        _w.semantic_neighbours = _timed("scan", _w.semantic_neighbours)
"""

STAGES = {
    "embed": "embed",
    "gate": "gate",
    "salience": "gate.salience",
    "contradictions": "gate.contradictions",
    "auto_edges": "auto_edges",
    "scan": "neighbour_scan (beside the gate)",
    "store.append": "append+fsync",
    "index.dual": "index",
    "index.flush": "flush",
    "index.chroma": "chroma",
    "gc": "gc",
}
METHOD = "cstp.recordDecision"


def stored_text(params: dict[str, Any]) -> str:
    from retrieval.text import compose_embedding_text

    return compose_embedding_text(params["decision"], params.get("context"), None)


class Floor:
    """The floor's three parts, timed one at a time: embed, fdatasync-ed append, no-op HTTP."""

    def __init__(self, directory: Path) -> None:
        from retrieval.embedder import MiniLMEmbedder

        self.embedder = MiniLMEmbedder(threads=1)
        self.embedder.embed(["warm the model up"])
        self.file = (directory / "floor.log").open("ab")
        self.line = (json.dumps({"pad": "x" * 1000}) + "\n").encode()
        self.times: dict[str, list[float]] = {"embed": [], "fsync": [], "http": []}

    def measure(self, server: Server, texts: list[str]) -> None:
        card = f"{server.url}/.well-known/agent.json"
        for text in texts:
            start = time.perf_counter()
            self.embedder.embed([text])
            mid = time.perf_counter()
            self.file.write(self.line)
            self.file.flush()
            os.fdatasync(self.file.fileno())
            end = time.perf_counter()
            server.client.get(card)
            done = time.perf_counter()
            self.times["embed"].append((mid - start) * 1000.0)
            self.times["fsync"].append((end - mid) * 1000.0)
            self.times["http"].append((done - end) * 1000.0)

    def report(self) -> dict[str, Any]:
        parts = {name: summary(values, 2) for name, values in self.times.items()}
        return {
            **parts,
            "floor_median_ms": round(sum(p["median_ms"] for p in parts.values()), 2),
            "floor_p95_ms": round(sum(p["p95_ms"] for p in parts.values()), 2),
        }


def serve(data: Path, tmp: Path, name: str, extra: dict[str, str]) -> tuple[Server, Path]:
    hook = tmp / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK + EXTRA_HOOK)
    spans = tmp / f"spans-{name}.json"
    env = {
        "DECIGRAPH_BENCH_SPANS": str(spans),
        "PYTHONPATH": os.pathsep.join([str(hook), str(ROOT)]),
        **extra,
    }
    return Server(data, tmp / f"serve-{name}.log", env), spans


def run_store(source: Path, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    modes: dict[str, dict[str, str]] = {"new": {}}
    if args.compare:
        modes["exact_scan"] = {"DECIGRAPH_NEIGHBOUR_POOL": "0"}
        modes["exact"] = {"DECIGRAPH_GATE_SALIENCE": "exact", "DECIGRAPH_NEIGHBOUR_POOL": "0"}
    servers: dict[str, tuple[Server, Path]] = {}
    windows: dict[str, list[list[float]]] = {m: [] for m in modes}
    outcomes: dict[str, Counter[str]] = {m: Counter() for m in modes}
    loads: list[list[float]] = []
    floor = Floor(tmp)
    rng = random.Random(args.seed + 2)
    params = [record_params(rng) for _ in range(args.writes + args.warmup)]
    try:
        for mode, extra in modes.items():
            data = copy_store(source, tmp / f"data-{mode}")
            servers[mode] = serve(data, tmp, mode, extra)
        for server, _ in servers.values():
            server.wait_answer("recall", {"query": "warm up", "limit": 10})
        for server, _ in servers.values():  # untimed warm-up writes (same on every server)
            for p in params[: args.warmup]:
                server.call("recordDecision", p)
        timed = params[args.warmup :]
        for start in range(0, len(timed), args.block):
            block = timed[start : start + args.block]
            loads.append(loadavg())
            for mode, (server, _) in servers.items():
                for p in block:
                    began = time.perf_counter()
                    answer = server.call("recordDecision", p)
                    windows[mode].append([began, time.perf_counter()])
                    error = answer.get("error")
                    outcomes[mode]["ok" if error is None else f"error {error['code']}"] += 1
            floor.measure(servers["new"][0], [stored_text(p) for p in block])
            print(f"[writes] {source}: {start + len(block)}/{len(timed)}", flush=True)
    finally:
        for server, _ in servers.values():
            server.stop()
    runs: dict[str, Any] = {}
    for mode, (_, spans_file) in servers.items():
        spans = json.loads(spans_file.read_text())["spans"]
        names = {**STAGES, METHOD: "server"}
        rows = stage_times(windows[mode], spans, names)
        row = breakdown(rows)
        runs[mode] = {"median_ms": row["p50_ms"], **row, "outcomes": dict(outcomes[mode])}
    return {
        "path": str(source),
        "decisions": count_decisions(source),
        "loadavg_per_block": loads,
        "loadavg_median": [round(statistics.median(col), 2) for col in zip(*loads, strict=True)],
        "runs": runs,
        "floor": floor.report(),
    }


def count_decisions(data: Path) -> int:
    meta = data.parent / "meta.json"
    if meta.exists():
        return int(json.loads(meta.read_text())["decisions"])
    with (data / "events.jsonl").open("rb") as handle:
        return sum(1 for _ in handle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, action="append", help="a data directory to copy")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--block", type=int, default=20, help="writes per interleaved block")
    parser.add_argument("--compare", action="store_true", help="also serve the exact gate")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=Path("bench/results/writes.json"))
    args = parser.parse_args()
    started = time.perf_counter()
    stores = args.store or [ensure_store(size, args.seed)[0] for size in args.sizes]
    with tempfile.TemporaryDirectory(prefix="decigraph-writes-") as tmp:
        results = []
        for number, store in enumerate(stores):
            work = Path(tmp) / f"s{number}"
            work.mkdir()
            results.append(run_store(store, args, work))
    report = {
        "seed": args.seed,
        "client": "httpx, one keep-alive connection, sequential calls, loopback",
        "cores": os.cpu_count(),
        "stores": results,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    for r in results:
        for mode, row in r["runs"].items():
            print(
                f"[writes] {r['decisions']} {mode}: median {row['median_ms']} p95 {row['p95_ms']}"
                f" max {row['max_ms']} ms; floor {r['floor']['floor_median_ms']} ms"
            )
            print("   slowest 5 %:", row["stages_slowest_5pct_ms"])
            print("   median:     ", row["stages_median_ms"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
