"""Run every benchmark, then write BENCHMARKS.md from the JSON this run wrote (``make bench``).

Each script runs as a subprocess with its own ``--out``; a result file left by an earlier run
is deleted first, so every figure in the report comes from this run (a step that fails or
times out shows as "not measured" with its log). The seeded stores (10k and 100k decisions)
are built once (``bench/dataset.py``) and reused by recall, HTTP and start-up, and across runs
while their fingerprint matches; the report says which.

``--quick`` runs everything at small sizes (1k/2k decisions, 10k-node graphs, one LoCoMo
conversation, few queries) in a few minutes, into ``bench/.cache/results-quick/``; its report
says it is a quick run and its figures are not comparable to the targets.

Usage: python bench/run_all.py [--quick] [--only NAME ...] [--report BENCHMARKS.md]
       [--merge] [--pin SIZE=DIR ...] [--args NAME="ARGS" ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT
from bench.dataset import PIN_ENV
from bench.report import render

FULL_SIZES, QUICK_SIZES = (10_000, 100_000), (1_000, 2_000)

# The shared-log benchmark at small sizes (1k/5k-event catch-up, 300 writes per writer).
CLUSTER_QUICK = [
    "--writes", "300", "--lag-writes", "100", "--lag-burst", "300",
    "--sizes", "1000", "5000", "--runs", "2", "--http-writes", "20", "--rounds", "2",
    "--max-wait", "30",
]  # fmt: skip

# name -> (script, full arguments, quick arguments, timeout in seconds for a full run)
STEPS: dict[str, tuple[str, list[str], list[str], int]] = {
    "dataset-small": ("dataset.py", ["--size", "10000"], ["--size", "1000"], 3600),
    "dataset-large": ("dataset.py", ["--size", "100000"], ["--size", "2000"], 7200),
    "graph": ("bench_graph.py", [], ["--events", "5000", "--fsync-events", "300"], 1800),
    "salience": (
        "bench_salience.py",
        [],
        ["--nodes", "10000", "--edges", "50000", "--sizes", "", "--runs", "5"],
        1800,
    ),
    "graphq": (
        "bench_graphq.py",
        [],
        ["--nodes", "10000", "--edges", "50000", "--picks", "20", "--whole-runs", "1"],
        1800,
    ),
    "keyword": ("bench_keyword.py", [], ["--sizes", "2000"], 1800),
    "locomo": ("bench_locomo.py", [], ["--conversations", "1"], 3600),
    # The pair judge on the frozen test splits, dev and the old 540 pairs, with its baselines.
    "judge": ("bench_judge.py", [], [], 1800),
    # The guardrail end to end through a real server on the frozen gate split.
    "gate": ("bench_gate.py", [], ["--limit", "40"], 1800),
    # Scripted agent sessions over MCP through a real server, this tree and the baseline commit.
    "agent-sessions": ("bench_agent_sessions.py", [], ["--set", "dev"], 3600),
    "recall": ("bench_recall.py", [], ["--sizes", "1000", "2000", "--queries", "30"], 1800),
    "http": (
        "bench_http.py",
        [],
        ["--sizes", "1000", "2000", "--queries", "30", "--writes", "30"],
        1800,
    ),
    "import": ("bench_import.py", [], ["--items", "200"], 1800),
    "cstp": ("bench_cstp.py", [], ["--size", "1000", "--calls", "30", "--writes", "20"], 1800),
    "startup": ("bench_startup.py", [], ["--size", "2000", "--runs", "1", "--tail", "50"], 3600),
    # Starts its own PostgreSQL primary + synchronous standby (tests/support/pgcluster.py).
    "cluster": ("bench_cluster.py", [], CLUSTER_QUICK, 1800),
    "history": (
        "bench_history.py",
        [],
        ["--sizes", "1000", "5000", "--points", "6", "--cold", "1"],
        1800,
    ),
    # GET /events: backlog replay and live delivery to 1 and 4 clients (a real server).
    "feed": ("bench_feed.py", [], ["--backlog", "2000", "--live", "500", "--runs", "1"], 1800),
    # `decigraph recall` one shot (an agent hook): against a running server, alone, baselines.
    "cli": ("bench_cli.py", [], ["--runs", "5", "--alone-runs", "1"], 1800),
    # remember / recall p50-p95-max quiet and with a CPU burner, per torch-thread setting.
    "tails": (
        "bench_tails.py",
        [],
        ["--size", "1000", "--writes", "105", "--queries", "55", "--threads", "0", "1"],
        3600,
    ),
    # recordDecision at 100k against its floor, and before (the exact whole-graph gate).
    "writes": (
        "bench_writes.py",
        ["--sizes", "100000", "--writes", "200", "--compare"],
        ["--sizes", "2000", "--writes", "40", "--block", "10"],
        3600,
    ),
    # A write's neighbour pool against the exact scan (agreement and time, the 100k store).
    "neighbours": (
        "bench_neighbours.py",
        ["--size", "100000"],
        ["--size", "2000", "--queries", "50", "--pools", "128", "512"],
        1800,
    ),
    # Recall's vector candidates: the sketch pool against ChromaDB's HNSW and the exact scan.
    "recallpool": (
        "bench_recall_pool.py",
        ["--size", "100000"],
        ["--size", "2000", "--queries", "30", "--rebuild-size", "1000"],
        1800,
    ),
    # Generation-2 pauses with the loaded heap frozen and not (a synthetic 100k graph).
    "gc": (
        "bench_gc.py",
        ["--synthetic", "100000", "--ops", "1000", "--runs", "1"],
        ["--synthetic", "2000", "--ops", "200", "--runs", "1"],
        1800,
    ),
}


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    import os

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gb": round(mem_kb / 1024**2, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def versions() -> dict[str, str]:
    dists = ["torch", "chromadb", "sentence-transformers", "networkx", "numpy", "scipy", "igraph"]
    return {d: version(d) for d in [*dists, "uvicorn", "bm25s"]}


def git_commit() -> str:
    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip()

    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return commit + (" (with uncommitted changes)" if git("status", "--porcelain") else "")


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_step(name: str, args: list[str], out: Path, log: Path, timeout: int) -> dict[str, Any]:
    script = STEPS[name][0]
    out.unlink(missing_ok=True)
    command = [sys.executable, str(ROOT / "bench" / script), *args, "--out", str(out)]
    print(f"[bench] {name}: {' '.join(command[1:])}", flush=True)
    started = time.perf_counter()
    status = "ok"
    with log.open("w") as handle:
        try:
            rc = subprocess.run(
                command, check=False, cwd=ROOT, stdout=handle, stderr=handle, timeout=timeout
            )
            if rc.returncode != 0:
                status = f"failed (exit {rc.returncode})"
        except subprocess.TimeoutExpired:
            status = f"timed out after {timeout} s"
    wall = time.perf_counter() - started
    if status == "ok" and not out.exists():
        status = "wrote no result"
    print(f"[bench] {name}: {status} in {wall:.0f} s (log {log})", flush=True)
    return {"status": status, "wall_s": round(wall, 1), "log": str(log.relative_to(ROOT))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few minutes")
    parser.add_argument("--only", nargs="+", choices=sorted(STEPS), help="run just these")
    parser.add_argument("--report", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="with --only: keep the last run's other steps and record these as re-runs",
    )
    parser.add_argument(
        "--pin",
        nargs="+",
        default=[],
        metavar="SIZE=DIR",
        help="use this store-* cache directory for SIZE instead of building (bench/dataset.py)",
    )
    parser.add_argument(
        "--args",
        nargs="+",
        default=[],
        metavar="NAME=ARGS",
        help="run step NAME with these arguments (shell words) instead of its own; recorded",
    )
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.args)
    if args.pin:  # the steps are subprocesses: they read it from the environment
        os.environ[PIN_ENV] = ",".join(args.pin)
    results = ROOT / ("bench/.cache/results-quick" if args.quick else "bench/results")
    logs = ROOT / "bench/.cache/logs" / ("quick" if args.quick else "full")
    results.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    small, large = QUICK_SIZES if args.quick else FULL_SIZES
    sized = {
        "recall": ["--sizes", str(small), str(large)],
        "http": ["--sizes", str(small), str(large)],
        "startup": ["--size", str(large)],
    }
    run: dict[str, Any] = {
        "quick": args.quick,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions(),
        "commit": git_commit(),
        "load_at_start": loadavg(),
        "sizes": [small, large],
        "results_dir": str(results.relative_to(ROOT)),
        "command": "make bench" if not args.quick else "python bench/run_all.py --quick",
        "pinned_stores": args.pin,
        "steps": {},
    }
    previous = results / "run.json"
    merged = args.merge and args.only and previous.exists()
    if merged:  # the last run stays the report's run; these steps are listed as re-runs
        fresh, run = run, json.loads(previous.read_text())
        run.setdefault("reruns", [])
    for name, (_, full, quick, timeout) in STEPS.items():
        if args.only and name not in args.only:
            continue
        step_args = quick if args.quick else full
        if not args.quick and name in sized:
            step_args = sized[name]
        if name in overrides:
            step_args = shlex.split(overrides[name])
        step = run_step(name, step_args, results / f"{name}.json", logs / f"{name}.log", timeout)
        if name in overrides:
            step["args"] = step_args
        if merged:
            step |= {"commit": fresh["commit"], "started": fresh["started"]}
            run["reruns"] = [x for x in run["reruns"] if x["step"] != name]  # the latest only
            run["reruns"].append({"step": name, **step})
        run["steps"][name] = step
    if not merged:
        run["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
        run["load_at_end"] = loadavg()
    (results / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    args.report.write_text(render(results))
    print(f"[bench] wrote {args.report} from {results}", flush=True)


if __name__ == "__main__":
    main()
