"""Shared event log: replicas of one PostgreSQL log against the single-machine file log.

Everything runs in one process tree on one machine, in one run, against one PostgreSQL
primary with a synchronous standby (``tests/support/pgcluster.py``: both servers on this
machine and disk, ``fsync`` and ``synchronous_commit = on``); each configuration gets a fresh
database on it. Decisions are ``bench.dataset.draft_for``'s seeded ones (statement, owner and
ticket context, category, stakes, tags, project); writer ``i`` writes the same seeded texts in
every configuration. The machine is shared with whatever else runs on it, so writes and HTTP
run in ``--rounds`` interleaved rounds (every configuration in turn, round after round),
each phase starts once other work uses at most ``--quiet`` of the CPUs (waiting at most
``--max-wait`` s), and the report gives the CPU-seconds this run and other work used in each
phase (``cluster_cpu``).

- **Writes** (store level, ``DecisionStore.record``, no indexes or HTTP; ``cluster_writers``):
  each writer is a process of its own (``multiprocessing`` spawn) with its own data directory;
  per round it does ``--warmup`` untimed writes, waits at a barrier that releases all writers
  at once, then writes its share of ``--writes`` back to back. Configurations: the file log
  with ``fsync="always"`` (the baseline), PostgreSQL with the synchronous standby and 1
  writer, the same with the standby made asynchronous (the commit no longer waits for it:
  what the standby costs), and 3 writer processes on the synchronous cluster. Each write is
  split into stages by timing the event store's calls (lock the head row; catch up on other
  replicas' events; the inserts; COMMIT; the rest: build, hash, validate, apply).
- **Tail lag**: a follower replica (``follow()``, LISTEN/NOTIFY plus a 1 s poll) in this
  process, a writer process beside it; lag = the follower's ``time.time()`` when it applied a
  seq minus the writer's ``time.time()`` when the database acknowledged that seq's COMMIT
  (both read the same system clock). Once paced (one write every ``--lag-interval`` s, about
  a server's pace) and once back to back.
- **Catch-up**: a seeded log of N events (``bench.dataset.fill``, graph only, cached in
  ``bench/.cache/cluster-log-*``) copied into PostgreSQL with ``decigraph copy-log``; a new
  replica opens from an empty data directory (replays the whole log from the database), then
  restarts from the local snapshot its close wrote; beside them the file log opened by full
  replay (no snapshot) and from its snapshot. ``--runs`` of each, interleaved.
- **HTTP** (``--http-writes`` per replica, 0 skips it; ``cluster_http``): ``decigraph serve``
  replicas, ``recordDecision`` (embedding, guardrails, auto-edges, the event and, on
  PostgreSQL, its vectors): 1 replica on the file log, 1 on PostgreSQL, 3 on PostgreSQL with
  one client each, concurrently, all with ``OMP_NUM_THREADS=--server-threads`` (1: torch's
  default of one thread per core makes 3 replicas oversubscribe 2 cores, and any other load
  turns its thread pool's waits into ~0.5 s stalls); beside them 1 replica on the file log
  with torch's default threads.

Usage: python bench/bench_cluster.py [--writes 2000] [--rounds 4] [--lag-writes 1000]
       [--sizes 10000 100000] [--runs 3] [--http-writes 200] [--out bench/results/cluster.json]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench.cluster_cpu import Phases, loadavg
from bench.cluster_http import bench_http
from bench.cluster_writers import cell, run_writers, write_summary
from bench.common import ROOT, percentile
from bench.dataset import CACHE, fill, sim_clock
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions

POLL_S = 1.0  # the follower's poll (the server's default)
STANDBY = "standby1"  # start_cluster's synchronous standby


def specs(
    url: str | None,
    tmp: Path,
    name: str,
    writers: int,
    args: argparse.Namespace,
    count: int | None = None,
    interval: float = 0.0,
    round_: int = 0,
) -> list[dict[str, Any]]:
    """Writer ``i`` writes into ``tmp/<name>-w<i>`` (reopened round after round), seed
    ``--seed + i + 1000 * round_``: the same texts in every configuration."""
    return [
        {
            "writer": i,
            "url": url,
            "data": str(tmp / f"{name}-w{i}"),
            "seed": args.seed + i + 1000 * round_,
            "warmup": args.warmup,
            "count": args.writes // args.rounds if count is None else count,
            "interval": interval,
        }
        for i in range(writers)
    ]


def code_fingerprint() -> str:
    """The code under test (graph/, retrieval/, service/): a run is only valid if it stays the
    same from start to end (writer processes and servers import it when they start)."""
    digest = hashlib.sha256()
    for package in ("graph", "retrieval", "service"):
        for path in sorted((ROOT / package).rglob("*.py")):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def seconds(values: list[float]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(values), 3),
        "p95_s": round(percentile(values, 0.95), 3),
        "runs": len(values),
        "each_s": [round(v, 3) for v in values],
    }


# -- PostgreSQL ----------------------------------------------------------------------------------


def new_database(cluster: Any) -> str:
    return str(cluster.primary.url(cluster.primary.create_database()))


def pg_value(url: str, sql: str) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql).fetchone()
        return None if row is None else row[0]


def events_mb(url: str) -> float:
    size = pg_value(url, "SELECT pg_total_relation_size('decigraph.events')")
    return round(int(size) / 1e6, 1)


def set_synchronous(cluster: Any, on: bool) -> None:
    """Make the standby synchronous (COMMIT waits for its flush) or asynchronous."""
    from psycopg.sql import SQL, Literal

    primary = cluster.primary
    name = STANDBY if on else ""
    primary.query(SQL("ALTER SYSTEM SET synchronous_standby_names = {}").format(Literal(name)))
    primary.query("SELECT pg_reload_conf()")
    want = "sync" if on else "async"
    primary.wait_for(
        lambda: (
            primary.query(
                "SELECT 1 FROM pg_stat_replication WHERE application_name = %s AND sync_state = %s",
                (STANDBY, want),
            )
            != []
        ),
        30,
        f"{STANDBY} {want}",
    )


def postgres_facts(cluster: Any) -> dict[str, Any]:
    url = cluster.primary.url()
    names = ["server_version", "fsync", "synchronous_commit", "wal_level", "shared_buffers"]
    facts = {name: pg_value(url, f"SHOW {name}") for name in names}
    facts["standby"] = "hot standby on this machine, synchronous (application_name standby1)"
    return facts


# -- 1. writes -----------------------------------------------------------------------------------


def bench_writes(cluster: Any, tmp: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The four configurations in ``--rounds`` interleaved rounds (each a fresh set of writer
    processes on the configuration's growing log), so that other load on the machine falls
    on all of them alike."""
    configs = [  # (name, event store, writers, standby synchronous)
        ("file log, fsync=always (baseline)", None, 1, True),
        ("PostgreSQL + synchronous standby", new_database(cluster), 1, True),
        ("PostgreSQL, standby asynchronous", new_database(cluster), 1, False),
        ("PostgreSQL + synchronous standby", new_database(cluster), 3, True),
    ]
    done: list[list[list[dict[str, Any]]]] = [[] for _ in configs]
    for round_ in range(args.rounds):
        for k, (_, url, writers, synchronous) in enumerate(configs):
            if not synchronous:
                set_synchronous(cluster, False)
            try:
                found = run_writers(specs(url, tmp, f"w{k}", writers, args, round_=round_))
            finally:
                if not synchronous:
                    set_synchronous(cluster, True)
            done[k].append(found)
    rows = []
    for k, (name, url, _, _) in enumerate(configs):
        log = tmp / f"w{k}-w0" / "events.jsonl"
        log_mb = events_mb(url) if url else round(log.stat().st_size / 1e6, 1)
        rows.append(write_summary(name, done[k], log_mb))
        brief = {x: rows[-1][x] for x in ("config", "writers", "events_per_s")}
        print("writes", json.dumps(brief), json.dumps(rows[-1]["latency"]), flush=True)
    return rows


# -- 2. tail lag ---------------------------------------------------------------------------------


def bench_lag(cluster: Any, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    url = new_database(cluster)
    follower = DecisionStore.open(tmp / "follower", StoreOptions(event_store=url))
    applied: dict[int, float] = {}
    follower.listeners.append(lambda event: applied.setdefault(event.seq, time.time()))
    follower.follow(poll=POLL_S)
    report: dict[str, Any] = {"poll_s": POLL_S}
    try:
        runs = [
            ("paced", args.lag_writes, args.lag_interval),
            ("back to back", args.lag_burst, 0.0),
        ]
        for name, count, interval in runs:
            tag = name.replace(" ", "-")
            [result] = run_writers(specs(url, tmp, f"lag-{tag}", 1, args, count, interval))
            deadline = time.monotonic() + 30
            while follower.seq < result["seq"] and time.monotonic() < deadline:
                time.sleep(0.01)
            lags = [applied[seq] - acked for seq, acked in result["acked"] if seq in applied]
            report[name] = {
                "writes": count,
                "interval_ms": round(interval * 1e3, 1),
                "applied": len(lags),
                "lag": cell(lags),
                "min_lag_ms": round(min(lags) * 1e3, 3),
                "writer_latency": cell(result["latencies"]),
            }
            print("lag", name, json.dumps(report[name]), flush=True)
    finally:
        follower.close()
    return report


# -- 3. catch-up ---------------------------------------------------------------------------------


def log_fingerprint(size: int, seed: int) -> str:
    """What decides the cached log's bytes: size, seed, the generator and the graph code."""
    digest = hashlib.sha256(f"cluster-log:{size}:{seed}".encode())
    files = [ROOT / "bench" / "dataset.py", ROOT / "bench" / "synthetic.py"]
    files += sorted((ROOT / "graph").rglob("*.py"))
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def ensure_log(size: int, seed: int) -> tuple[Path, dict[str, Any]]:
    """A seeded file log of ``size`` decisions (one event each, ~2.2 edges per decision),
    built once with fsync="never" and cached; a snapshot at its head sits beside it."""
    fp = log_fingerprint(size, seed)
    home = CACHE / f"cluster-log-{size}-s{seed}-{fp}"
    if (home / "meta.json").exists():
        meta = json.loads((home / "meta.json").read_text())
        return home / "data", {**meta, "fingerprint": fp, "reused": True}
    for stale in CACHE.glob(f"cluster-log-{size}-s{seed}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    work = CACHE / f"building-cluster-log-{size}-s{seed}-{fp}"
    shutil.rmtree(work, ignore_errors=True)
    options = StoreOptions(fsync="never", snapshot_every=0)
    started = time.perf_counter()
    with DecisionStore.open(work / "data", options, clock=sim_clock(), ids=IdSource(seed)) as s:
        fill(s, size, random.Random(seed))
        meta = {
            "events": s.seq,
            "nodes": s.graph.number_of_nodes(),
            "edges": s.graph.number_of_edges(),
            "fill_s": round(time.perf_counter() - started, 1),
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    meta["log_mb"] = round((work / "data" / "events.jsonl").stat().st_size / 1e6, 1)
    (work / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    work.rename(home)
    return home / "data", {**meta, "fingerprint": fp, "reused": False}


def timed_open(data: Path, options: StoreOptions, events: int) -> float:
    # A closed store is only freed by the cyclic collector: collect it now, not (for seconds
    # at 100k events) inside the next timed open.
    gc.collect()
    start = time.perf_counter()
    store = DecisionStore.open(data, options)
    elapsed = time.perf_counter() - start
    seq = store.seq
    store.close()  # a writable replica writes its snapshot here, untimed
    if seq != events:
        raise RuntimeError(f"{data}: opened at seq {seq}, expected {events}")
    return elapsed


def bench_catchup(cluster: Any, tmp: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("DECIGRAPH_")}
    for size in args.sizes:
        source, build = ensure_log(size, args.seed)
        events = build["events"]
        url = new_database(cluster)
        command = [sys.executable, "-m", "service.cli", "copy-log", "--data-dir", str(source)]
        started = time.perf_counter()
        command += ["--to", url, "--json"]
        done = subprocess.run(command, check=True, cwd=ROOT, env=env, capture_output=True)
        copy_s = time.perf_counter() - started
        copied = json.loads(done.stdout)
        if copied["events"] != events or copied["sourceGraphHash"] != copied["targetGraphHash"]:
            raise RuntimeError(f"copy-log into {url}: {copied}")
        shared = StoreOptions(event_store=url)
        replay = StoreOptions(read_only=True, use_snapshot=False)
        snapshot = StoreOptions(read_only=True)
        times: dict[str, list[float]] = {
            "new replica": [],
            "replica restart": [],
            "file log replay": [],
            "file log snapshot": [],
        }
        for run in range(args.runs):
            replica = tmp / f"replica-{size}-{run}"
            times["new replica"].append(timed_open(replica, shared, events))
            times["replica restart"].append(timed_open(replica, shared, events))
            times["file log replay"].append(timed_open(source, replay, events))
            times["file log snapshot"].append(timed_open(source, snapshot, events))
            shutil.rmtree(replica)
        row = {
            "events": events,
            "nodes": build["nodes"],
            "edges": build["edges"],
            "file_log_mb": build["log_mb"],
            "postgres_mb": events_mb(url),
            "log": build,
            "copy_log_s": round(copy_s, 2),
            **{name: seconds(values) for name, values in times.items()},
        }
        print("catch-up", json.dumps({k: v for k, v in row.items() if k != "log"}), flush=True)
        rows.append(row)
    return rows


# -- main ----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=2_000, help="timed writes per writer")
    parser.add_argument("--warmup", type=int, default=20, help="untimed writes per writer")
    parser.add_argument("--lag-writes", type=int, default=1_000, help="paced writes")
    parser.add_argument("--lag-interval", type=float, default=0.02, help="seconds between them")
    parser.add_argument("--lag-burst", type=int, default=2_000, help="back-to-back writes")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=3, help="opens of each kind per size")
    parser.add_argument("--http-writes", type=int, default=200, help="per replica; 0 skips")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds of writes")
    parser.add_argument("--warmup-http", type=int, default=20, help="untimed, per replica")
    parser.add_argument(
        "--server-threads",
        type=int,
        default=1,
        help="OMP_NUM_THREADS of the HTTP replicas (one more replica runs torch's default)",
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--quiet",
        type=float,
        default=0.2,
        help="before each phase, wait until other work uses at most this share of the CPUs",
    )
    parser.add_argument("--max-wait", type=float, default=300, help="seconds, per phase")
    parser.add_argument("--out", type=Path, default=Path("bench/results/cluster.json"))
    args = parser.parse_args()
    from tests.support.pgcluster import start_cluster

    CACHE.mkdir(parents=True, exist_ok=True)
    code = code_fingerprint()
    began = time.perf_counter()
    report: dict[str, Any] = {
        "cores": os.cpu_count(),
        "load_at_start": loadavg(),
        "seed": args.seed,
        "writes_per_writer": args.writes // args.rounds * args.rounds,
        "rounds": args.rounds,
        "warmup_per_writer": args.warmup,
        "quiet_share": args.quiet,
        "max_wait_s": args.max_wait,
    }
    phases = Phases(args.quiet, args.max_wait)
    with tempfile.TemporaryDirectory(prefix="decigraph-cluster-") as work, start_cluster() as pg:
        tmp = Path(work)
        report["postgres"] = postgres_facts(pg)
        phases.done("start PostgreSQL")
        phases.wait_quiet()
        report["writes"] = bench_writes(pg, tmp, args)
        phases.done("writes")
        phases.wait_quiet()
        report["lag"] = bench_lag(pg, tmp, args)
        phases.done("tail lag")
        phases.wait_quiet()
        report["catchup"] = bench_catchup(pg, tmp, args)
        phases.done("catch-up")
        report["http"] = None
        if args.http_writes:
            urls = new_database(pg), new_database(pg)
            phases.wait_quiet()
            report["http"] = bench_http(*urls, tmp, args)
            phases.done("HTTP")
        report["http_writes_per_replica"] = args.http_writes // args.rounds * args.rounds
    report["load_at_end"] = loadavg()
    report["wall_s"] = round(time.perf_counter() - began, 1)
    report["phases"] = phases.rows
    report["cpu"] = {
        key: round(sum(p[key] for p in phases.rows), 1)
        for key in ("capacity_cpu_s", "this_run_cpu_s", "other_work_cpu_s", "waited_for_quiet_s")
    }
    report["code_fingerprint"] = code
    if code_fingerprint() != code:
        sys.exit("graph/, retrieval/ or service/ changed during the run: no result written")
    print(f"done in {report['wall_s']} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
