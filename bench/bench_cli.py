"""``decigraph recall`` as an agent hook runs it: one process per query, wall time and peak RSS.

On a copy of the cached seeded store (``bench/dataset.py``, default 1,000 decisions):

- ``against a server``: a real ``decigraph serve`` holds the data directory; each run is a
  fresh ``decigraph recall QUERY --json`` process (the light path: one JSON-RPC call over
  ``http.client``, no store, no model); ``--runs`` runs after one untimed warm-up;
- ``alone``: the server stopped, each run opens the store and its indexes and loads the model
  in-process (``--alone-runs`` runs);
- baselines, measured in the same run: ``python -c pass`` (the floor of any Python CLI) and a
  process that only imports torch (what the heavy path cannot avoid).

Against a busy host the server's own recall (the answer's ``queryTimeMs``) can dominate the
wall time, so each recall figure also gives ``without_recall``: the wall time less that (alone,
the answer's time includes loading the model, which the first recall does).
Each run is a process timed from start to exit; its peak RSS is the child's own (GNU
``/usr/bin/time -f %M``). One ``-X importtime`` run against the server gives the import
total and the largest top-level imports.

Usage: python bench/bench_cli.py [--size 1000] [--runs 10] [--alone-runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, Server, percentile
from bench.dataset import copy_store, ensure_store

QUERY = "why did we choose PostgreSQL for the billing ledger"
CLI = [sys.executable, "-m", "service.cli"]
TIME = "/usr/bin/time"  # GNU time: the child's own peak RSS (%M, KB)


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and stdout of one child process (which must succeed).

    The child runs under ``/usr/bin/time``, a small C program, so its peak RSS is its own: a
    child forked straight from this process would count this process's pages in its
    ``ru_maxrss`` (Linux keeps the high-water mark across ``exec``).
    """
    with tempfile.NamedTemporaryFile("r") as rss, tempfile.TemporaryFile() as out:
        timed = [TIME, "-q", "-f", "%M", "-o", rss.name, *command]
        started = time.perf_counter()
        proc = subprocess.run(
            timed, cwd=ROOT, env=env, stdout=out, stderr=subprocess.PIPE, check=False
        )
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"{command} exited {proc.returncode}: {proc.stderr[-500:]!r}")
        out.seek(0)
        return wall, int(rss.read().split()[-1]) / 1024, out.read().decode()


def measure(command: list[str], env: dict[str, str], runs: int) -> dict[str, Any]:
    walls, peaks, answers = [], [], []
    for _ in range(runs):
        wall, peak, out = run_once(command, env)
        walls.append(wall)
        peaks.append(peak)
        if out.startswith("{"):  # a recall: how long the server (or the process) took to answer
            answers.append(json.loads(out)["queryTimeMs"] / 1000)
    found: dict[str, Any] = {
        "median_s": round(statistics.median(walls), 3),
        "p95_s": round(percentile(walls, 0.95), 3),
        "peak_rss_mb": round(max(peaks), 1),
        "median_rss_mb": round(statistics.median(peaks), 1),
        "runs": runs,
    }
    if answers:  # the process's own cost: its wall time less the recall it waited for
        found["recall_median_s"] = round(statistics.median(answers), 3)
        rest = [wall - answer for wall, answer in zip(walls, answers, strict=True)]
        found["without_recall_median_s"] = round(statistics.median(rest), 3)
        found["without_recall_p95_s"] = round(percentile(rest, 0.95), 3)
    return found


def stable(output: str) -> dict[str, Any]:
    """A ``--json`` answer without its timing."""
    answer: dict[str, Any] = json.loads(output)
    answer.pop("queryTimeMs", None)
    return answer


def import_profile(command: list[str], env: dict[str, str], top: int = 8) -> dict[str, Any]:
    """Total import time of one run and its largest top-level imports (cumulative ms)."""
    result = subprocess.run(
        [command[0], "-X", "importtime", *command[1:]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = re.findall(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", result.stderr)
    roots = [(int(cumulative), name) for cumulative, indent, name in rows if len(indent) == 1]
    heaviest = sorted(roots, reverse=True)[:top]
    return {
        "modules": len(rows),
        "total_ms": round(sum(c for c, _ in roots) / 1000, 1),
        "heaviest_ms": {name: round(c / 1000, 1) for c, name in heaviest},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--alone-runs", dest="alone_runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/cli.json"))
    args = parser.parse_args()
    cached, build = ensure_store(args.size, args.seed)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DECIGRAPH_")}
    env.pop("CSTP_TOKEN", None)
    report: dict[str, Any] = {"decisions": args.size, "build": build, "query": QUERY}
    with tempfile.TemporaryDirectory(prefix="decigraph-cli-") as tmp:
        data = copy_store(cached, Path(tmp) / "data")
        recall = [*CLI, "recall", QUERY, "--json", "--data-dir", str(data)]
        server = Server(data, Path(tmp) / "serve.log")
        try:
            server.wait_answer("recall", {"query": QUERY, "limit": 10})
            served_env = {**env, "CSTP_TOKEN": server.token}
            _, _, served_out = run_once(recall, served_env)  # warm-up (page cache)
            report["against_server"] = measure(recall, served_env, args.runs)
            report["imports_against_server"] = import_profile(recall, served_env)
        finally:
            server.stop()
        print("against a server", json.dumps(report["against_server"]), flush=True)
        _, _, alone_out = run_once(recall, env)
        report["alone"] = measure(recall, env, args.alone_runs)
        report["same_answer"] = stable(served_out) == stable(alone_out)
        print("alone", json.dumps(report["alone"]), flush=True)
    report["baseline_python"] = measure([sys.executable, "-c", "pass"], env, args.runs)
    torch_only = [sys.executable, "-c", "import torch"]
    report["baseline_import_torch"] = measure(torch_only, env, max(3, args.alone_runs))
    print("baselines", json.dumps(report["baseline_python"]), flush=True)
    print("         ", json.dumps(report["baseline_import_torch"]), flush=True)
    report["load_avg"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
