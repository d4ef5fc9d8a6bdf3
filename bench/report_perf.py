"""BENCHMARKS.md sections for issue 16's measurements: the one-shot CLI (``bench_cli.py``)."""

from __future__ import annotations

from typing import Any

from bench.report_base import NA, Report, ms, ok

CLI_TARGET_S = 0.3


def _cli_row(name: str, cell: dict[str, Any] | None, note: str) -> list[str]:
    if not cell:
        return [name, NA, NA, NA, NA, note]
    own = cell.get("without_recall_median_s")
    return [
        name,
        f"{cell['median_s']:.3f} s",
        f"{cell['p95_s']:.3f} s",
        f"{cell['peak_rss_mb']:.1f} MB",
        NA if own is None else f"{own:.3f} s",
        note,
    ]


def cli(r: Report) -> None:
    r.out("## The one-shot CLI: `decigraph recall` as an agent hook calls it", "")
    c = r.load("cli")
    if not c:
        return
    load = ", ".join(f"{x:.1f}" for x in c.get("load_avg", []))
    r.out(
        f"A fresh `decigraph recall` process per call on a {c['decisions']:,}-decision store "
        "(`bench/bench_cli.py`): against a running `decigraph serve` holding the directory "
        "(the light path: stdlib HTTP, no store, index or model import), and alone (no server: "
        "the process opens the store and loads the model); beside them a bare `python -c pass` "
        'and a process that only imports torch. Peak RSS from `/usr/bin/time`. "Own" is the '
        "wall time less the recall the server reported (`queryTimeMs`). Load average at the "
        f"end: {load or NA}. Same answer both ways: {c.get('same_answer', NA)}.",
        "",
    )
    r.table(
        ["what", "median", "p95", "peak RSS", "own (median)", "note"],
        [
            _cli_row("against a server", c.get("against_server"), "target <= 0.3 s"),
            _cli_row("alone (no server)", c.get("alone"), "torch + model per call"),
            _cli_row("python -c pass (baseline)", c.get("baseline_python"), ""),
            _cli_row("import torch only (baseline)", c.get("baseline_import_torch"), ""),
        ],
    )
    served = c.get("against_server")
    if served:
        r.targets.append(
            [
                "CLI recall against a server",
                f"<= {CLI_TARGET_S} s",
                f"{served['median_s']:.3f} s",
                ok(served["median_s"] <= CLI_TARGET_S),
            ]
        )


TAIL_RATIO = 2.0
#: Stages in the order a request meets them (``bench_tails.STAGES`` names).
TAIL_STAGES = [
    "embed",
    "auto_edges",
    "append+fsync",
    "index",
    "flush",
    "chroma",
    "vector_query",
    "keyword",
    "collect",
    "traverse",
    "rank",
    "gc",
    "http+asgi",
]


def _threads_label(config: dict[str, Any]) -> str:
    setting = config["torch_threads_setting"]
    real = config.get("torch_threads_in_server")
    name = "torch default" if setting == 0 else f"{setting}"
    return f"{name} ({real} in the server)" if real is not None else name


def tails(r: Report) -> None:
    """Latency tails under CPU contention (``bench_tails.py``) with the per-stage breakdown."""
    r.out("## Latency tails on a busy host", "")
    t = r.load("tails")
    if not t:
        return
    store = t["recall_store"]
    r.out(
        "A real `decigraph serve`, one client making sequential calls over one keep-alive "
        f"connection (`bench/bench_tails.py`): `remember` of {t['writes_per_phase']:,} LoCoMo "
        f"turns into a fresh store, and `recall` of {t['queries_per_phase']:,} seeded queries "
        f"against the {store['decisions']:,}-decision seeded store. Each phase runs *quiet* "
        f"and then *busy* ({t['busy']}), for each torch intra-op thread setting "
        "(`DECIGRAPH_TORCH_THREADS`: 1 is the default; 0 is torch's own, one thread per core, "
        "what every earlier release did). The load average at each phase's start is shown: "
        "other work on the machine counts as quiet here.",
        "",
    )
    rows = []
    for config in t["configs"]:
        for key in ("remember quiet", "remember busy", "recall quiet", "recall busy"):
            cell = config.get(key)
            if not cell:
                continue
            rows.append(
                [
                    _threads_label(config),
                    key,
                    f"{cell['p50_ms']:,.1f} ms",
                    f"{cell['p95_ms']:,.1f} ms",
                    f"{cell['max_ms']:,.1f} ms",
                    f"{cell['p95_over_p50']:.2f}",
                    f"{cell['loadavg_at_start'][0]:.2f}",
                ]
            )
    r.table(["torch threads", "phase", "p50", "p95", "max", "p95 / p50", "load"], rows)
    chosen = next((c for c in t["configs"] if c["torch_threads_setting"] == 1), None)
    if chosen is None:
        return
    r.out(
        "Where the time goes, default setting (1 thread): each stage's mean over the median "
        "requests (the middle 10 %) and over the slowest 5 %, from spans the server records "
        "itself (`graph/tracing.py` hook; `gc` is time inside the cyclic collector; "
        "`http+asgi` is the client's time less the method's).",
        "",
    )
    every = ("remember quiet", "remember busy", "recall quiet", "recall busy")
    phases = [k for k in every if k in chosen]
    header = ["stage"] + [f"{k}: median / slowest 5 %" for k in phases]
    stage_rows = []
    for stage in [*TAIL_STAGES, "client"]:
        cells = []
        seen = False
        for key in phases:
            mid = chosen[key]["stages_median_ms"].get(stage)
            slow = chosen[key]["stages_slowest_5pct_ms"].get(stage)
            seen = seen or bool(mid) or bool(slow)
            cells.append(f"{mid or 0:,.1f} / {slow or 0:,.1f} ms")
        if seen:
            stage_rows.append(["**total**" if stage == "client" else stage, *cells])
    r.table(header, stage_rows)
    for key in phases:
        cell = chosen[key]
        r.targets.append(
            [
                f"{key.split()[0]} over HTTP, {key.split()[1]} (p95 <= 2x p50)",
                f"<= {TAIL_RATIO:.0f}x",
                f"{cell['p95_over_p50']:.2f}x (p50 {cell['p50_ms']:.0f} ms, "
                f"p95 {cell['p95_ms']:.0f} ms)",
                ok(cell["p95_over_p50"] <= TAIL_RATIO),
            ]
        )


#: Issue 16's targets for the answers the live store keeps up to date (``graph.riskindex``):
#: result key -> (cell, what, goal in ms, statistic). ``findContradictions`` is judged as its
#: clients call it (the method's default ``limit`` of 20); the whole list is shown beside it.
MAINTAINED_TARGETS = {
    "findContradictions (maintained)": ("ours_limit_20", "findContradictions", 5.0, "p50"),
    "getBlockedChain all (maintained)": ("ours", "every blocked chain", 100.0, "p95"),
    "getGraph depth 2 paged": ("ours", "getGraph depth 2", 30.0, "p95"),
}


def graph_maintained(r: Report) -> None:
    """The graph queries answered from maintained structures (``bench_graphq.py``)."""
    r.out("### Graph queries answered from maintained structures", "")
    gq = r.load("graphq")
    if not gq or "maintenance per event" not in gq:
        return
    rows = []
    for name, (which, label, goal, stat) in MAINTAINED_TARGETS.items():
        cell = gq[name]
        base = [cell["baseline_name"], *ms(cell["baseline"])]
        if which != "ours":
            rows.append([f"{name}, default limit 20", *ms(cell[which]), *base])
        rows.append([f"{name}, whole list" if which != "ours" else name, *ms(cell["ours"]), *base])
        value = cell[which]["median_ms" if stat == "p50" else "p95_ms"]
        r.targets.append(
            [
                f"{label} at {gq['nodes']:,} nodes",
                f"{stat} <= {goal:g} ms",
                f"{value:,.2f} ms",
                ok(value <= goal),
            ]
        )
    upkeep = gq["maintenance per event"]
    blocked = gq["getBlockedChain all (maintained)"]
    contra = gq["findContradictions (maintained)"]
    r.out(
        "The live store keeps the contradiction pairs and every blocked chain up to date as "
        "events are applied (`graph/riskindex.py`); each answer is timed right after a change "
        "(a review toggled, a new salience mapping, a new `depends_on`/`blocks` edge), "
        "alternating with the from-scratch function on the same graph. "
        f"{contra['pairs']:,} contradiction pairs, {blocked['blocked_decisions']:,} blocked "
        f"decisions; the index is built on the first query ({blocked['first_query_build_s']} s) "
        f"and then costs {upkeep['per_event_us']} µs per applied event "
        f"({upkeep['overhead_pct']} % of replaying {upkeep['events']:,} events). "
        "`getGraph` pages hubs at `maxNodes` (default 500).",
        "",
    )
    r.table(["query", "median", "p95", "baseline", "baseline median", "baseline p95"], rows)


def recall_pool(r: Report) -> None:
    """Recall's vector candidates: sketch pool, ChromaDB's HNSW, exact (``bench_recall_pool``)."""
    n = r.load("recallpool")
    if not n:
        return
    r.out(
        "### Recall's vector candidates: the sketch pool against ChromaDB (issue 16)",
        "",
        f"A recall of 10 fetches the {n['fetch']} stored items nearest to the query, then "
        "rescores them exactly. Against the exact top list of the "
        f"{n['decisions']:,} decisions' real vectors: how many items ChromaDB's HNSW index and "
        f"the sketch pool (the closest `pool` sign sketches rescored, at least "
        f"{n['pool_rows_at_least']}; default {n['default_pool']}) miss, of the exact top "
        f"{n['fetch']} and of the exact top 10, summed over the queries; times interleaved "
        "query by query (`bench/bench_recall_pool.py`). *questions*: the recall benchmark's "
        "seeded questions; *decisions*: new decisions from the store's generator.",
        "",
    )
    rows = []
    for name, sources in n["agreement"].items():
        for source, row in sources.items():
            label = "ChromaDB HNSW" if source == "chromadb" else f"pool {source}"
            rows.append(
                [
                    name,
                    label,
                    *ms(row),
                    str(row["missed_of_top80"]),
                    str(row["queries_missing_any"]),
                    str(row["missed_of_top10"]),
                ]
            )
    r.table(
        ["set", "source", "p50", "p95", "missed of top 80", "queries missing", "missed of top 10"],
        rows,
    )
    rep = n["reproducibility"]
    r.out(
        f"Reproducibility: the first {rep['vectors']:,} vectors written identically into two "
        f"fresh ChromaDB collections answered {rep['chromadb_differing_queries']} of "
        f"{rep['queries']} queries differently; two matrices holding them (one filled in "
        f"reverse order) answered {rep['pool_differing_queries']} differently through the pool.",
        "",
    )
