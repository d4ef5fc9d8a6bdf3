"""BENCHMARKS.md sections for issue 16 (performance, round two): writes against their floor,
the import against raw embedding, recall's target, start-up's timeline, GC pauses and memory
at 10k/100k/300k (``make bench-large``)."""

from __future__ import annotations

import json

from bench.report_base import NA, Report, ms, ok

WRITE_P50_MS, WRITE_P95_MS = 20.0, 30.0
IMPORT_SHARE = 0.85
RECALL_ROUND2_P50_MS = 15.0
STARTUP_S = 8.0
PEAK_RSS_MB = 1200.0

#: Write stages in the order a request meets them (``bench_writes.py`` names).
WRITE_STAGES = [
    "embed",
    "gate",
    "gate.salience",
    "gate.contradictions",
    "neighbour_scan (beside the gate)",
    "auto_edges",
    "append+fsync",
    "index",
    "flush",
    "chroma",
    "gc",
    "http+asgi",
    "server",
]


WRITE_LABELS = {
    "new": "recordDecision",
    "exact_scan": "recordDecision, exact neighbour scan",
    "exact": "recordDecision, exact scan and whole-graph gate (before)",
}


def _ms1(value: float | None) -> str:
    return NA if value is None else f"{value:,.1f} ms"


def writes(r: Report) -> None:
    """``recordDecision`` at 100k against its floor, with the per-stage breakdown."""
    r.out("### recordDecision against its floor (issue 16)", "")
    w = r.load("writes")
    if not w:
        return
    r.out(
        "A real `decigraph serve` per store (default settings: `fsync=always`, guardrails on, "
        "one torch thread), one client writing seeded decisions with context in sequence "
        "(`bench/bench_writes.py`). The floor is measured in the same run, interleaved with the "
        "writes: one embedding of the same stored text, warm, in the benchmark's process; one "
        "~1 KB append + `fdatasync`; one no-op HTTP call to the same server. The other rows are "
        "further servers interleaved block by block on the same decisions: *exact neighbour "
        "scan* reads every stored vector for the automatic edges (`DECIGRAPH_NEIGHBOUR_POOL=0`); "
        "*before* also recomputes the whole-graph salience in the gate "
        "(`DECIGRAPH_GATE_SALIENCE=exact`), the write path before issue 16.",
        "",
    )
    rows = []
    for s in w["stores"]:
        floor = s["floor"]
        size = f"{s['decisions']:,}"
        for name, run in s["runs"].items():
            outcomes = ", ".join(f"{k}: {v}" for k, v in sorted(run["outcomes"].items()))
            label = WRITE_LABELS.get(name, f"recordDecision, {name}")
            rows.append(
                [
                    size,
                    label,
                    _ms1(run["p50_ms"]),
                    _ms1(run["p95_ms"]),
                    _ms1(run["max_ms"]),
                    outcomes,
                ]
            )
        for part in ("embed", "fsync", "http"):
            cell = floor[part]
            rows.append([size, f"floor: {part}", *ms(cell), NA, ""])
        rows.append(
            [
                size,
                "**floor** (sum)",
                _ms1(floor["floor_median_ms"]),
                _ms1(floor["floor_p95_ms"]),
                NA,
                f"load {s.get('loadavg_median', NA)}",
            ]
        )
    r.table(["decisions", "what", "p50", "p95", "max", "outcomes"], rows)
    big = max(w["stores"], key=lambda s: s["decisions"])
    new = big["runs"]["new"]
    r.out(
        "Where the time goes (stage means over the median requests and over the slowest 5 %, "
        f"{big['decisions']:,} decisions, spans the server records itself):",
        "",
    )
    stage_rows = []
    for stage in WRITE_STAGES:
        cells = []
        for name in big["runs"]:
            run = big["runs"][name]
            mid = run["stages_median_ms"].get(stage)
            slow = run["stages_slowest_5pct_ms"].get(stage)
            cells.append(
                NA if mid is None and slow is None else f"{mid or 0:.1f} / {slow or 0:.1f}"
            )
        if any(c != NA for c in cells):
            stage_rows.append([stage, *cells])
    r.table(["stage (ms)", *(f"{n}: median / slowest 5 %" for n in big["runs"])], stage_rows)
    measured = f"p50 {new['p50_ms']:.1f} ms, p95 {new['p95_ms']:.1f} ms"
    r.targets.append(
        [
            f"recordDecision over HTTP at {big['decisions']:,}",
            f"p50 <= {WRITE_P50_MS:.0f} ms, p95 <= {WRITE_P95_MS:.0f} ms",
            f"{measured} (floor {big['floor']['floor_median_ms']:.1f} ms)",
            ok(new["p50_ms"] <= WRITE_P50_MS and new["p95_ms"] <= WRITE_P95_MS),
        ]
    )


def neighbours(r: Report) -> None:
    """The write's neighbour pool against the exact scan (``bench_neighbours.py``)."""
    n = r.load("neighbours")
    if not n:
        return
    r.out(
        "### The neighbour pool against the exact scan (issue 16)",
        "",
        f"Each query's nearest stored items, found by an exact scan of every vector and by the "
        f"neighbour pool (sign-sketch ranking, the closest `pool` rescored exactly; default "
        f"{n['default_pool']}), over the same matrix: the {n['decisions']:,} decisions of the "
        f"seeded store, plus, for *dialog*, {n['dialog_turns']:,} LoCoMo dev turns minus the "
        "held-out queries. *decisions*: new decisions from the store's generator (statement + "
        "context); *dialog*: held-out turns, whose true neighbours are other turns. Links are "
        "the `semantic` edges written (cosine >= 0.80, top 3), suggestions the `relates_to` "
        "candidates returned (0.40-0.80, top 5); *same top 16* compares the whole list the "
        "rules read from. Times interleaved query by query (`bench/bench_neighbours.py`).",
        "",
    )
    rows = []
    for name, data in n["sets"].items():
        pair = data["interleaved"]
        default = data["pools"][str(n["default_pool"])]
        rows.append(
            [
                name,
                str(data["queries"]),
                *ms(pair["exact"]),
                *ms(pair["pool"]),
                f"{default['links_missed']} of {default['links_exact']}",
                f"{default['suggestions_missed']} of {default['suggestions_exact']}",
                f"{default['same_top16']:.1%}",
            ]
        )
    r.table(
        [
            "set",
            "queries",
            "exact p50",
            "exact p95",
            "pool p50",
            "pool p95",
            "links missed",
            "suggestions missed",
            "same top 16",
        ],
        rows,
    )
    sweep = []
    for name, data in n["sets"].items():
        for pool, row in data["pools"].items():
            sweep.append(
                [
                    name,
                    pool,
                    *ms(row),
                    f"{row['same_links']:.1%}",
                    f"{row['same_suggestions']:.1%}",
                    f"{row['same_top16']:.1%}",
                ]
            )
    r.out("By pool size (the share of queries whose links, suggestions, top 16 equal exact):", "")
    r.table(["set", "pool", "p50", "p95", "same links", "same suggestions", "same top 16"], sweep)


def import_target(r: Report) -> None:
    """The import's steady rate as a share of raw embedding, pipelined and not."""
    imp = r.run["steps"].get("import")
    if imp is None or imp["status"] != "ok":
        return
    data = json.loads((r.dir / "import.json").read_text())
    r.out("### Bulk import against raw embedding (issue 16)", "")
    rows = []
    shares = []
    for shape, s in data["shapes"].items():
        old = s.get("without_pipeline") or {}
        share = s["steady_share_of_embedding_rate"]
        shares.append((shape, share))
        rows.append(
            [
                shape,
                NA if share is None else f"{share:.0%}",
                " / ".join(f"{x:.0%}" for x in s.get("share_of_each_repeat", [])) or NA,
                NA
                if old.get("steady_share_of_embedding_rate") is None
                else f"{old['steady_share_of_embedding_rate']:.0%}",
                *ms(s.get("import_batch_ms")),
                *ms(s.get("embedding_batch_ms")),
            ]
        )
    r.out(
        "Pipelined (the next batch embedded in a worker thread while the current one is gated, "
        "appended and indexed) against the same import without the overlap "
        f"(`DECIGRAPH_IMPORT_PIPELINE=0`), interleaved; torch threads: {data.get('torch_threads')}"
        f"; load average {data.get('load_average_before')} before, "
        f"{data.get('load_average_after')} after. Per 64-line batch:",
        "",
    )
    r.table(
        [
            "shape",
            "steady / embedding (median repeat)",
            "each repeat",
            "without the pipeline",
            "batch median",
            "batch p95",
            "embedding batch median",
            "embedding batch p95",
        ],
        rows,
    )
    for shape, share in shares:
        r.targets.append(
            [
                f"bulk import, {shape}",
                f">= {IMPORT_SHARE:.0%} of raw embedding",
                NA if share is None else f"{share:.0%}",
                "not measured" if share is None else ok(share >= IMPORT_SHARE),
            ]
        )


def recall_target(r: Report) -> None:
    """Issue 16's in-process recall target at 100k, beside the ChromaDB-only floor."""
    step = r.run["steps"].get("recall")
    if step is None or step["status"] != "ok":
        return
    sizes = json.loads((r.dir / "recall.json").read_text())
    large = max(sizes, key=lambda s: s["decisions"])
    cell, floor = large["recall"], large["chroma only"]
    before = large.get("recall, reference path")
    if before:
        r.out(
            f"At {large['decisions']:,} decisions the read path before this round (kept as "
            "`bench/recall_reference.py`, interleaved query by query, same answers) took "
            f"{before['median_ms']:.1f} ms median, {before['p95_ms']:.1f} ms p95.",
            "",
        )
    r.targets.append(
        [
            f"recall in-process at {large['decisions']:,} (issue 16)",
            f"p50 <= {RECALL_ROUND2_P50_MS:.0f} ms",
            f"p50 {cell['median_ms']:.1f} ms (ChromaDB-only floor {floor['median_ms']:.1f} ms)",
            ok(cell["median_ms"] <= RECALL_ROUND2_P50_MS)
            if large["decisions"] >= 100_000
            else "not measured at 100k",
        ]
    )


def startup_timeline(r: Report) -> None:
    """Start-up's stage timeline and its target."""
    step = r.run["steps"].get("startup")
    if step is None or step["status"] != "ok":
        return
    st = json.loads((r.dir / "startup.json").read_text())
    clean = st["serve"].get("clean restart")
    if not clean:
        return
    timeline = clean.get("timeline_s") or {}
    if timeline:
        r.out(
            "The served process's own timeline of a clean restart (seconds since it started, "
            "printed on stderr as `decigraph: start-up: ...`):",
            "",
        )
        r.table(list(timeline), [[f"{v:.2f} s" for v in timeline.values()]])
    rows = []
    for key, label in (
        ("serve_sentence_transformers", "served, `sentence_transformers` runtime (before)"),
        ("serve_process", "served, model first in a helper process"),
    ):
        cell = (st.get(key) or {}).get("clean restart")
        if cell:
            rows.append([label, f"{cell['median_s']} s", f"{cell['p95_s']} s", cell["runs"]])
    for key, label in (
        ("model_only_process", "model-only process, `sentence_transformers`"),
        ("model_only_process_lean", "model-only process, lean runtime"),
    ):
        cell = st.get(key)
        if cell:
            rows.append([label, f"{cell['median_s']} s", f"{cell['p95_s']} s", cell["runs"]])
    if rows:
        r.out("Beside the default (clean restart), same run:", "")
        r.table(["variant", "median", "p95", "runs"], rows)
    r.targets.append(
        [
            f"start-up to first recall at {st['decisions']:,}",
            f"<= {STARTUP_S:.0f} s",
            f"{clean['median_s']} s (p95 {clean['p95_s']} s)",
            ok(clean["median_s"] <= STARTUP_S),
        ]
    )
    boot = (st.get("serve_process") or {}).get("clean restart")
    if boot:
        r.targets.append(
            [
                f"start-up at {st['decisions']:,}, `DECIGRAPH_MODEL_BOOT=process` (opt-in)",
                f"<= {STARTUP_S:.0f} s",
                f"{boot['median_s']} s (p95 {boot['p95_s']} s)",
                ok(boot["median_s"] <= STARTUP_S),
            ]
        )


def gc_pauses(r: Report) -> None:
    """Generation-2 pauses with and without freezing the loaded heap (``bench_gc.py``)."""
    r.out("### Garbage-collection pauses", "")
    g = r.load("gc")
    if not g:
        return
    what = f"a synthetic {g['synthetic']:,}-decision graph" if g.get("synthetic") else "a store"
    r.out(
        f"{g['ops']:,} operations (writes and depth-2 `getGraph` reads) on {what} "
        "(`bench/bench_gc.py`), with the loaded heap frozen (`DECIGRAPH_GC_FREEZE`, the default) "
        "and without, alternately.",
        "",
    )
    rows = []
    for mode, runs in g["runs"].items():
        for run in runs:
            pauses = run["gc_pauses"]
            reads = run.get("reads_getgraph_depth2") or run.get("reads") or {}
            rows.append(
                [
                    mode,
                    f"{pauses['gen2']['max_ms']:,.1f} ms" if pauses["gen2"]["count"] else NA,
                    f"{pauses['all']['p95_ms']:,.1f} ms",
                    _ms1(run.get("full_collection_ms")),
                    _ms1(reads.get("p95_ms")),
                    _ms1(reads.get("max_ms")),
                    _ms1(run["writes"].get("max_ms")),
                    f"{run.get('load_average', NA)}",
                ]
            )
    r.table(
        [
            "freeze",
            "worst gen-2 pause",
            "pause p95",
            "full collection",
            "read p95",
            "read max",
            "write max",
            "load",
        ],
        rows,
    )


def _mb(figure: dict[str, float] | None) -> str:
    return NA if figure is None else f"{figure['median']:,.0f} MB"


def large(r: Report) -> None:
    """Memory at 10k, 100k and 300k decisions (``make bench-large``, committed on its own)."""
    r.out("## Memory at 10k, 100k and 300k decisions (`make bench-large`)", "")
    path = r.dir / "large.json"
    if not path.exists():
        r.out("*Not measured (`make bench-large` writes `bench/results/large.json`).*", "")
        return
    d = json.loads(path.read_text())
    r.out(
        f"A real `decigraph serve` per size ({d['queries']} recalls and as many hybrid "
        f"`queryDecisions`, then {d['writes']} accepted writes: past the flush batch of 512, "
        "so ChromaDB loads its HNSW index to apply them), RSS before that flush, settled and "
        "peak, with the compact layout "
        "(*new*) and without it (`DECIGRAPH_COMPACT_MEMORY=0`, *old*), interleaved "
        f"(`bench/bench_memory.py`; {d['runs']} run(s) per variant; load average "
        f"{[round(x, 1) for x in d['load_average_start']]} at the start). A process that only "
        f"loads the model peaks at {d['model_only_process']['peak_rss_mb']:,.0f} MB.",
        "",
    )
    rows = []
    for s in d["per_size"]:
        served = s["served"]
        rows.append(
            [
                f"{s['decisions']:,}",
                s["source"],
                _mb(served["new"].get("before_flush_rss_mb")),
                *(
                    f"{served[v][k]['median']:,.0f} MB"
                    for v in ("new", "old")
                    for k in ("after_load_rss_mb", "peak_rss_mb")
                ),
                f"{served['new']['start_to_first_answer_s']['median']} s",
            ]
        )
    r.table(
        [
            "decisions",
            "store",
            "new: before ChromaDB's first flush",
            "new: settled",
            "new: peak",
            "old: settled",
            "old: peak",
            "first answer (new)",
        ],
        rows,
    )
    mid = next((s for s in d["per_size"] if s["decisions"] == 100_000), None)
    if mid:
        parts = mid["breakdown_mb"]["new"]
        r.out("Where the 100k process's memory goes (new; a '-' row is part of the row above):", "")
        r.table(["part", "MB"], [[k.replace("  ", "- "), f"{v:,.1f}"] for k, v in parts.items()])
        peak = mid["served"]["new"]["peak_rss_mb"]["median"]
        r.targets.append(
            [
                "peak RSS at 100,000",
                f"<= {PEAK_RSS_MB:,.0f} MB",
                f"{peak:,.0f} MB",
                ok(peak <= PEAK_RSS_MB),
            ]
        )
    per = d["per_decision"]["new"]
    r.out(
        f"Per decision (least squares over the sizes): {per['peak_rss']['per_decision_kb']} KB "
        f"peak plus {per['peak_rss']['fixed_mb']:,.0f} MB fixed; a replica of 1M decisions "
        f"would need about {per['peak_rss']['at_1m_mb_extrapolated'] / 1024:,.1f} GB "
        "(an extrapolation, not a measurement). Per part:",
        "",
    )
    r.table(
        ["part", "KB per decision", "fixed MB", "at 1M (extrapolated)"],
        [
            [
                k,
                f"{v['per_decision_kb']}",
                f"{v['fixed_mb']:,.0f}",
                f"{v['at_1m_mb_extrapolated']:,.0f} MB",
            ]
            for k, v in per["parts"].items()
        ],
    )
