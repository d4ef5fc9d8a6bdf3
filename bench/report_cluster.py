"""BENCHMARKS.md section for the shared event log on PostgreSQL (``bench/bench_cluster.py``)."""

from __future__ import annotations

from typing import Any

from bench.report_base import NA, Report

FILE_STAGES = ["append + fdatasync"]
PG_STAGES = [
    "lock the head (BEGIN, SELECT ... FOR UPDATE)",
    "catch up (other replicas' events)",
    "INSERT event, UPDATE head, NOTIFY",
    "COMMIT",
]
STAGES = [*FILE_STAGES, *PG_STAGES, "build, validate, apply"]
STAGE_LABELS = {
    "append + fdatasync": "file append + fdatasync",
    "lock the head (BEGIN, SELECT ... FOR UPDATE)": "lock the head",
    "catch up (other replicas' events)": "catch up",
    "INSERT event, UPDATE head, NOTIFY": "INSERT + UPDATE + NOTIFY",
    "COMMIT": "COMMIT",
    "build, validate, apply": "build, validate, apply",
}


def lat(c: dict[str, Any], digits: int = 2) -> list[str]:
    return [f"{c[k]:,.{digits}f} ms" for k in ("median_ms", "p95_ms", "max_ms")]


def writers(w: dict[str, Any]) -> str:
    return f"{w['writers']} writer" + ("s" if w["writers"] > 1 else "")


def secs(c: dict[str, Any]) -> str:
    return f"{c['median_s']:,.2f} s / {c['p95_s']:,.2f} s"


def write_table(r: Report, c: dict[str, Any]) -> None:
    rows = c["writes"]
    base = rows[0]
    r.out("### Writes, store level", "")
    r.out(
        "`DecisionStore.record` of seeded decisions (statement and context, "
        f"{base['mean_chars']} characters on average; no indexes, no embedding), "
        f"{c['writes_per_writer']:,} timed writes per writer in {c['rounds']} rounds, the "
        "configurations interleaved round after round; in each round every writer is a process "
        f"of its own with its own data directory, does {c['warmup_per_writer']} untimed writes, "
        "then all are released together by a barrier. Each configuration has a log of its own. "
        "Latency is one `record()` call; events/s is all writers' events over the summed wall "
        "time of the rounds (first write to last in each). The baseline is the single-machine "
        'file log (`fsync="always"`); the asynchronous row only stops the COMMIT from waiting '
        "for the standby (it still streams), to show what the synchronous standby costs.",
        "",
    )
    table = []
    for w in rows:
        per = ", ".join(f"{x:,.0f}" for x in w["per_writer_events_per_s"])
        rate = f"{w['events_per_s']:,.0f}" + (f" ({per} each)" if w["writers"] > 1 else "")
        ratio = w["latency"]["median_ms"] / base["latency"]["median_ms"]
        table.append(
            [
                w["config"],
                str(w["writers"]),
                f"{w['events']:,}",
                rate,
                *lat(w["latency"], 3),
                "1.00x (baseline)" if w is base else f"{ratio:.2f}x",
                f"{w['log_mb']:,} MB",
            ]
        )
    r.table(
        [
            "event log",
            "writer processes",
            "events",
            "events/s",
            "median",
            "p95",
            "max",
            "median vs baseline",
            "log size after (with warm-up writes)",
        ],
        table,
    )
    r.out(
        "Where a write's time goes (mean ms per write; the event store's calls timed inside each "
        "write, the rest is building, hashing, validating and applying the event in Python):",
        "",
    )
    present = [s for s in STAGES if any(s in w["stages"] for w in rows)]
    stage_rows = []
    for w in rows:
        cells = [f"{w['stages'][s]['mean_ms']:.3f}" if s in w["stages"] else NA for s in present]
        stage_rows.append([f"{w['config']}, {writers(w)}", *cells])
    r.table(["event log", *[STAGE_LABELS[s] for s in present]], stage_rows)
    notes = []
    for w in rows[1:]:
        total = sum(v["mean_ms"] for v in w["stages"].values())
        top = max(w["stages"], key=lambda s: w["stages"][s]["mean_ms"])
        share = w["stages"][top]["mean_ms"] / total if total else 0.0
        notes.append(
            f"{w['config']}, {writers(w)}: {STAGE_LABELS[top]} ({share:.0%} of {total:.2f} ms)"
        )
    r.out("Largest stage: " + "; ".join(notes) + ".", "")


def lag(r: Report, c: dict[str, Any]) -> None:
    g = c["lag"]
    r.out("### Tail lag", "")
    r.out(
        "A follower replica (`follow()`: LISTEN/NOTIFY, and a poll every "
        f"{g['poll_s']:g} s in case a notification is lost) in one process, a writer replica in "
        "another, both on the synchronous cluster. Lag: the follower's `time.time()` when its "
        "listener heard the event applied, minus the writer's `time.time()` when the database "
        "acknowledged that event's COMMIT (one system clock). Beside it, the writer's own "
        "`record()` latency in the same run. A negative minimum means the follower applied the "
        "event before the writer's process got to read its acknowledgment (both wait for CPU).",
        "",
    )
    rows = []
    for name in ("paced", "back to back"):
        x = g[name]
        pace = f"one every {x['interval_ms']:g} ms" if x["interval_ms"] else "back to back"
        rows.append(
            [
                pace,
                f"{x['writes']:,} ({x['applied']:,} applied)",
                *lat(x["lag"]),
                f"{x['min_lag_ms']:.2f} ms",
                "{} / {}".format(*lat(x["writer_latency"])[:2]),
            ]
        )
    r.table(
        [
            "writes",
            "events",
            "lag median",
            "lag p95",
            "lag max",
            "lag min",
            "writer's record() median / p95",
        ],
        rows,
    )


def catchup(r: Report, c: dict[str, Any]) -> None:
    r.out("### Catch-up of a replica", "")
    r.out(
        "A seeded log (`bench.dataset.fill`: one `record` event per decision, ~2.2 edges each; "
        'built once with `fsync="never"` and cached in `bench/.cache/cluster-log-*`) copied '
        "into PostgreSQL with `decigraph copy-log`. A new replica opens from an empty data "
        "directory (replays the whole log from the database; the copied log carries no vectors, "
        "which a log written by `decigraph serve` would, so its catch-up would read more); it "
        "then closes (writing its snapshot) and restarts from that snapshot. Baseline: the same "
        "log as a file, opened by full replay (no snapshot) and from its snapshot. "
        f"Median / p95 of {c['catchup'][0]['new replica']['runs']} opens each, interleaved, each "
        "after a full garbage collection (a closed store is freed only by the cyclic "
        "collector, seconds at 100k, which would otherwise land in the next open); the "
        "database's and the file's pages are in memory (just written and read).",
        "",
    )
    rows = []
    for x in c["catchup"]:
        pg, file = x["new replica"]["median_s"], x["file log replay"]["median_s"]
        rows.append(
            [
                f"{x['events']:,} ({x['nodes']:,} nodes, {x['edges']:,} edges)",
                f"{x['file_log_mb']:,} MB / {x['postgres_mb']:,} MB",
                secs(x["new replica"]),
                secs(x["file log replay"]),
                f"{pg / file:.2f}x" if file else NA,
                secs(x["replica restart"]),
                secs(x["file log snapshot"]),
                f"{x['copy_log_s']:,.1f} s",
            ]
        )
    r.table(
        [
            "events",
            "log: file / PostgreSQL",
            "new replica (replay from PostgreSQL)",
            "baseline: file log full replay",
            "ratio",
            "replica restart (local snapshot)",
            "file log from its snapshot",
            "copy-log (with its two verifying replays)",
        ],
        rows,
    )


def http(r: Report, c: dict[str, Any]) -> None:
    h = c.get("http")
    r.out("### recordDecision over HTTP, 1 and 3 replicas", "")
    if not h:
        r.out("*Not measured in this run (`--http-writes 0`).*", "")
        return
    r.out(
        "`decigraph serve` replicas, each its own process and data directory (and embedded "
        "ChromaDB), after `/ready` and warm-up writes; "
        f"{c['http_writes_per_replica']:,} seeded `recordDecision` calls per replica "
        "(`bench_http`'s decisions with context), one client per replica, the clients of the 3 "
        f"replicas concurrent; {c['rounds']} interleaved rounds. Each write embeds its texts "
        "(the model), judges the guardrails, derives edges, appends the event (on "
        "PostgreSQL with its vectors); the other replicas apply and index it with those "
        "vectors, without embedding again. Calls/s is all clients' calls over the summed wall "
        "time of the rounds. The replicas run with `OMP_NUM_THREADS=1`: with torch's default "
        "(a thread per core) 3 replicas oversubscribe the 2 cores, and any other load on the "
        "machine stalls its thread pool; the last row is a file-log replica with the default, "
        "measured beside the others.",
        "",
    )
    base = h[0]
    rows = []
    for x in h:
        ratio = x["latency"]["median_ms"] / base["latency"]["median_ms"]
        rows.append(
            [
                str(x["replicas"]),
                x["event_store"] + (" (baseline)" if x is base else ""),
                str(x.get("torch_threads", "default")),
                f"{x['writes']:,}",
                f"{x['calls_per_s']:,.1f}",
                *lat(x["latency"]),
                f"{ratio:.2f}x",
                ", ".join(f"{k}: {v}" for k, v in x["outcomes"].items()),
            ]
        )
    r.table(
        [
            "replicas",
            "event log",
            "torch threads",
            "calls",
            "calls/s",
            "median",
            "p95",
            "max",
            "median vs baseline",
            "outcomes",
        ],
        rows,
    )


def cluster(r: Report) -> None:
    r.out("## Shared event log: replicas on PostgreSQL (no target)", "")
    c = r.load("cluster")
    if not c:
        return
    pg = c["postgres"]
    version = str(pg["server_version"]).split()[0]
    r.out(
        f"PostgreSQL {version}, a primary and a synchronous hot standby started by the test "
        "harness (`tests/support/pgcluster.py`) on this machine and on the same disk as the "
        f"file log (fsync {pg['fsync']}, synchronous_commit {pg['synchronous_commit']}, "
        f"shared_buffers {pg['shared_buffers']}); a fresh database per configuration "
        f"(`bench/bench_cluster.py`, one run of {c['wall_s']:,.0f} s including the waits "
        "below). **The machine has "
        f"{c['cores']} cores**: the writer processes, the primary's backends and WAL sender, "
        "the standby's WAL receiver and replay, and (for HTTP) the servers' embedding all "
        "share them, so 3 writers compete for CPU as much as for the log's head. Load average "
        f"{c['load_at_start']} at the start, {c['load_at_end']} at the end. The machine is "
        f"shared: before each phase the run waits (at most {c['max_wait_s']:,.0f} s) until "
        f"other work uses at most {c['quiet_share']:.0%} of the CPUs over 10 s, and it counts "
        "the CPU-seconds its own process tree and everything else used during each phase "
        "(other work inflates every figure of its phase):",
        "",
    )
    r.table(
        ["phase", "wall", "waited before", "CPU capacity", "this run", "other work"],
        [
            [
                p["phase"],
                f"{p['wall_s']:,.0f} s",
                f"{p['waited_for_quiet_s']:,.0f} s",
                f"{p['capacity_cpu_s']:,.0f} CPU-s",
                f"{p['this_run_cpu_s']:,.0f} CPU-s",
                f"{p['other_work_cpu_s']:,.0f} CPU-s "
                f"({p['other_work_cpu_s'] / max(p['capacity_cpu_s'], 1e-9):.0%})",
            ]
            for p in c["phases"]
        ],
    )
    write_table(r, c)
    lag(r, c)
    catchup(r, c)
    http(r, c)
