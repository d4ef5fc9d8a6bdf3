"""BENCHMARKS.md section for history reads (``bench/bench_history.py``)."""

from __future__ import annotations

from typing import Any

from bench.report_base import NA, Report, ms


def _row(name: str, cell: dict[str, Any] | None, note: str) -> list[str]:
    median, p95 = ms(cell)
    runs = NA if not cell else str(cell["runs"])
    return [name, median, p95, runs, note]


def history(r: Report) -> None:
    r.out("## History: asOf reads and decision histories", "")
    h = r.load("history")
    if not h:
        return
    r.out(
        "The seeded file log of N decisions (`bench_cluster.ensure_log`: one record event each, "
        "~2.2 edges per decision), copied per size. A past graph is the log replayed with the "
        "live store's own `GraphState.apply` (exact), from the nearest checkpoint "
        "(`graph/timetravel.py`). Rows: building the history index (the first time-resolution "
        "or history question reads the log once); `asOf` with no checkpoint at all (replayed "
        "from the first event: a store written without snapshots, the worst case); `asOf` with "
        "checkpoints every 5,000 events (what a server's kept snapshots, every 10,000, and "
        "earlier questions leave; memory cache off, random points); `getGraph` depth 2 as of a "
        "past seq, cold (checkpoint + replay + that graph's salience) and with the past graph "
        "cached (the explorer's slider revisiting a point), beside the live `getGraph` depth 2 "
        "(baseline: the store now, salience cached per seq); `getDecisionHistory` for random "
        "decisions (`bench/bench_history.py`).",
        "",
    )
    for size, s in h["sizes"].items():
        r.out(
            f"**{int(size):,} events** (log {s.get('log_mb', NA)} MB; one pass writing a "
            f"checkpoint every 5,000 events: {s['checkpoint_pass_s']} s, "
            f"{s['checkpoints_mb']} MB of checkpoints; median replay from the nearest "
            f"checkpoint: {s['asof_checkpointed_replayed_median']:,.0f} events; one past graph "
            f"held in memory near the head: {s.get('past_graph_rss_mb', NA)} MB of RSS)",
            "",
        )
        build = {
            "median_ms": s["history_index_build_ms"],
            "p95_ms": s["history_index_build_ms"],
            "runs": 1,
        }
        r.table(
            ["what", "median", "p95", "runs", "note"],
            [
                _row("history index build", build, "once per process, then by listener"),
                _row("asOf, no checkpoint", s["asof_no_checkpoint_ms"], "replay from seq 1"),
                _row("asOf, checkpoints every 5,000", s["asof_checkpointed_ms"], "load + replay"),
                _row("asOf getGraph depth 2, cold", s["asof_getgraph_cold_ms"], "+ salience"),
                _row("asOf getGraph depth 2, cached", s["asof_getgraph_cached_ms"], ""),
                _row("live getGraph depth 2 (baseline)", s["live_getgraph_ms"], ""),
                _row("getDecisionHistory", s["decision_history_ms"], "index built"),
            ],
        )


def feed(r: Report) -> None:
    r.out("## Change feed: `GET /events` and `cstp.listEvents`", "")
    f = r.load("feed")
    if not f:
        return
    b = f["backlog"]
    r.out(
        f"A real `decigraph serve` (fsync={f['fsync']}) on loopback, its log filled beforehand "
        f"with {b['events']:,} events; clients are `httpx` streams parsed in threads of the "
        "benchmark process on the same 2 cores (`bench/bench_feed.py`). Backlog: one client "
        "reads the whole log from `after=0`; beside it the same log read by `listEvents` pages "
        "of 1,000 (the baseline). Live: clients connected at the head while a writer appends "
        f"link/unlink events in JSON-RPC batches of {f['batch']} (no embedding, so the "
        "figures are the feed's and the log's); latency from each event's commit stamp to the "
        "client parsing it. Every client must receive every event once, in order, or the run "
        "fails.",
        "",
    )
    r.table(
        ["what", "rate", "runs"],
        [
            [
                f"backlog over SSE ({b['events']:,} events)",
                f"{b['sse_events_per_s']['median']:,} events/s",
                ", ".join(f"{x:,}" for x in b["sse_events_per_s"]["runs"]),
            ],
            [
                "backlog by listEvents pages (baseline)",
                f"{b['list_events_per_s']['median']:,} events/s",
                ", ".join(f"{x:,}" for x in b["list_events_per_s"]["runs"]),
            ],
        ],
    )
    rows = []
    for live in f["live"]:
        lat = live["latency_ms"]
        rows.append(
            [
                str(live["clients"]),
                f"{live['events']:,}",
                f"{live['writer_events_per_s']:,}/s",
                f"{live['per_client_events_per_s']:,}/s",
                f"{live['delivered_events_per_s']:,}/s",
                f"{lat['median']:.2f} ms",
                f"{lat['p95']:.2f} ms",
                f"{lat['max']:.2f} ms",
            ]
        )
    r.table(
        ["clients", "events", "writer", "per client", "delivered", "latency p50", "p95", "max"],
        rows,
    )
