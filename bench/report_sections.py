"""The per-area sections of BENCHMARKS.md, each from its benchmark's JSON (see report.py)."""

from __future__ import annotations

from bench.report_base import (
    CATS,
    FLOOR,
    HYBRID,
    LOCOMO_R10,
    NA,
    RECALL_P50_MS,
    RECALL_P95_MS,
    SALIENCE_RATIO,
    Report,
    ms,
    ok,
)


def write_path(r: Report) -> None:
    r.out("## Write path", "", "### recordDecision over HTTP (no target)", "")
    http = r.load("http")
    if http:
        rows = []
        for s in http["sizes"]:
            rows.append([f"{s['decisions']:,}", f"{FLOOR} (HTTP floor)", *ms(s[FLOOR]), ""])
            rec = s["recordDecision"]
            outcomes = ", ".join(f"{k}: {v}" for k, v in rec["outcomes"].items())
            rows.append([f"{s['decisions']:,}", "recordDecision", *ms(rec), outcomes])
        r.out(
            "A real `decigraph serve` on loopback with a bearer token, default settings "
            '(`fsync="always"`, guardrails on); seeded new decisions with context, written '
            "one after another by one client (`bench/bench_http.py`). Each call embeds, derives "
            "auto-edges, runs the guardrails and appends one fdatasync-ed event.",
            "",
        )
        r.table(["store", "call", "median", "p95", "outcomes"], rows)
    r.out("### Bulk import (no target)", "")
    imp = r.load("import")
    if imp:
        rows = []
        for shape, s in imp["shapes"].items():
            steady = s["import_steady_items_per_s"]
            share = s["steady_share_of_embedding_rate"]
            rows.append(
                [
                    shape,
                    f"{s['created']:,}",
                    f"{s['import_items_per_s']:,} items/s ({s['import_wall_s']} s)",
                    NA if steady is None else f"{steady:,} items/s",
                    f"{s['embedding_only_items_per_s']:,} items/s",
                    NA if share is None else f"{share:.0%}",
                ]
            )
        r.out(
            "`decigraph import FILE.jsonl` (the CLI, a subprocess) into an empty directory; "
            "beside it the raw throughput of `MiniLMEmbedder.embed` on exactly the texts the "
            "indexes embed for those lines, warm, same run: the physical limit of the write "
            f"path. The command's fixed cost (start-up, model load, close; a one-line import) "
            f"was {imp['one_line_import_s']} s; the steady rate is measured between the "
            "command's first and last progress report (every 64 lines) (`bench/bench_import.py`).",
            "",
        )
        r.table(
            [
                "lines",
                "items",
                "import, wall",
                "import, steady",
                "embedding only",
                "steady / embedding",
            ],
            rows,
        )
    r.out("### Event log append (no target)", "")
    g = r.load("graph")
    if g:
        fa, fn = g["fsync_always"], g["fsync_never"]
        r.out(
            "`DecisionStore.record`/`link` without the indexes (`bench/bench_graph.py`): the "
            "log's share of a write.",
            "",
        )
        r.table(
            ["policy", "events", "median", "p95", "rate"],
            [
                [
                    "fsync=always",
                    f"{fa['events']:,}",
                    f"{fa['median_ms']:.3f} ms",
                    f"{fa['p95_ms']:.3f} ms",
                    f"{fa['events_per_s']:,.0f} events/s",
                ],
                [
                    "fsync=never",
                    f"{fn['events']:,}",
                    f"{fn['median_ms']:.3f} ms",
                    f"{fn['p95_ms']:.3f} ms",
                    f"{fn['events_per_s']:,.0f} events/s",
                ],
            ],
        )


def read_path(r: Report) -> None:
    r.out("## Read path", "")
    rec = r.load("recall")
    http = r.load("http") if rec else None
    if not rec:
        return
    by_size = {s["decisions"]: s for s in (http or {}).get("sizes", [])}
    r.out(
        "Same seeded queries in-process (`bench/bench_recall.py`: the store copied from the "
        "cache, indexes opened from their snapshot) and over HTTP (`bench/bench_http.py`: a "
        "real server on the same store, one keep-alive client). Query embedding (~7-10 ms) is "
        "in every figure. The floor is ChromaDB alone: embed the query + one top-10 query.",
        "",
    )
    rows = []
    for s in rec:
        h = by_size.get(s["decisions"], {})
        for name in ("chroma only", "recall", "queryDecisions hybrid", "recall, filtered"):
            label = "ChromaDB only (floor)" if name == "chroma only" else name
            rows.append([f"{s['decisions']:,}", label, *ms(s[name]), *ms(h.get(name))])
    r.table(
        ["decisions", "method", "in-process median", "in-process p95", "HTTP median", "HTTP p95"],
        rows,
    )
    large = max(rec, key=lambda s: s["decisions"])
    p50, p95 = large["recall"]["median_ms"], large["recall"]["p95_ms"]
    met = p50 <= RECALL_P50_MS and p95 <= RECALL_P95_MS
    verdict = ok(met) if large["decisions"] >= 100_000 else "not measured at 100k in this run"
    r.targets.append(
        [
            "recall at 100k, in-process",
            f"p50 <= {RECALL_P50_MS:.0f} ms, p95 <= {RECALL_P95_MS:.0f} ms",
            f"p50 {p50} ms, p95 {p95} ms at {large['decisions']:,}",
            verdict,
        ]
    )
    r.out(
        f"Target: recall at 100k in-process p50 <= 30 ms and p95 <= 60 ms: {verdict} "
        f"(p50 {p50} ms, p95 {p95} ms at {large['decisions']:,} decisions).",
        "",
    )


def graph_section(r: Report) -> None:
    r.out("## Graph", "", "### Salience", "")
    sal = r.load("salience")
    if sal:
        rows = []
        for s in sal["sizes"]:
            rows.append(
                [
                    f"{s['nodes']:,} / {s['edges']:,}",
                    f"{s['salience_s']['median'] * 1e3:,.1f} ms",
                    f"{s['salience_s']['p95'] * 1e3:,.1f} ms",
                    f"{s['networkx_s']['median'] * 1e3:,.0f} ms",
                    f"{s['igraph_s']['median'] * 1e3:,.1f} ms",
                    f"{s['ratio_ours_over_igraph']:.2f}",
                    f"{s['max_abs_diff_vs_exact']:.0e}" if "max_abs_diff_vs_exact" in s else "n/a",
                ]
            )
        r.out(
            "Salience (a damped walk, see `graph/algorithms/salience.py`) on the maintained "
            "sparse adjacency (each run after a write) next to `nx.pagerank` and igraph's "
            "compiled PRPACK on the same weighted projection; the last column compares our "
            "scores with the scale's closed form solved exactly, "
            f"seeded synthetic graphs, {sal['runs']} runs (`bench/bench_salience.py`).",
            "",
        )
        r.table(
            [
                "nodes / edges",
                "ours median",
                "ours p95",
                "nx.pagerank",
                "igraph (compiled)",
                "ours / igraph",
                "max diff vs exact",
            ],
            rows,
        )
        big = max(sal["sizes"], key=lambda s: s["nodes"])
        ratio = big["ratio_ours_over_igraph"]
        verdict = (
            ok(ratio <= SALIENCE_RATIO)
            if big["nodes"] >= 100_000
            else "not measured at 100k/500k in this run"
        )
        r.targets.append(
            [
                "salience at 100k / 500k",
                "within 3x of igraph",
                f"{ratio:.2f}x at {big['nodes']:,} / {big['edges']:,}",
                verdict,
            ]
        )
        r.out(
            f"Target: within 3x of igraph at 100k nodes / 500k edges: {verdict} ({ratio:.2f}x).", ""
        )
    r.out("### Graph queries (no target)", "")
    gq = r.load("graphq")
    if gq:
        rows = []
        for name in (
            "findPath",
            "getGraph depth 2",
            "getBlockedChain",
            "findContradictions",
            "getBlockedChain (all)",
        ):
            cell = gq.get(name)
            if cell is None:
                rows.append([name, NA, NA, "not measured (timed out)", NA, NA])
                continue
            rows.append([name, *ms(cell["ours"]), cell["baseline_name"], *ms(cell["baseline"])])
        r.out(
            f"In-process (`graph.algorithms`, what the JSON-RPC methods call; no HTTP) on the "
            f"salience benchmark's seeded graph, {gq['nodes']:,} nodes / {gq['edges']:,} edges, "
            f"{gq['reviewed_share']:.0%} of decisions reviewed as successes "
            "(`bench/bench_graphq.py`). "
            f"{gq['findPath']['pairs_with_a_path']} of {gq['findPath']['ours']['runs']} random "
            f"pairs are connected within 6 hops; depth-2 subgraphs have a median of "
            f"{gq['getGraph depth 2']['median_subgraph_nodes']:,} nodes (max "
            f"{gq['getGraph depth 2']['max_subgraph_nodes']:,}).",
            "",
        )
        r.table(["query", "median", "p95", "baseline", "baseline median", "baseline p95"], rows)


def startup(r: Report) -> None:
    r.out("## Start-up (no target)", "")
    st = r.load("startup")
    if not st:
        return
    r.out(
        f"`decigraph serve` on a copy of the {st['decisions']:,}-decision store "
        f"({st['events']:,} events), from process start to the first answered `recall` "
        f"(polled every 50 ms; it needs the store, the indexes and the model) "
        f"(`bench/bench_startup.py`). The tail is {st['tail_events']} events written through "
        "the normal write path after the store snapshot. Baseline: a bare Python process that "
        "loads the model and embeds one sentence.",
        "",
    )
    rows = [
        [name, f"{s['median_s']} s", f"{s['p95_s']} s", s["runs"], f"{s['peak_rss_mb']:,} MB"]
        for name, s in st["serve"].items()
    ]
    b = st["model_only_process"]
    rows.append(
        ["baseline: model-only process", f"{b['median_s']} s", f"{b['p95_s']} s", b["runs"], NA]
    )
    r.table(["scenario", "median", "p95", "runs", "peak RSS"], rows)
    so = st["store_open"]
    r.out("Opening the store in-process (graph only, read-only):", "")
    r.table(
        ["open", "median", "p95", "runs"],
        [[k, f"{v['median_s']} s", f"{v['p95_s']} s", v["runs"]] for k, v in so.items()],
    )


def memory(r: Report) -> None:
    r.out("## Memory (no target)", "")
    http = r.load("http")
    if not http:
        return
    base = http["model_only_process"]
    rows = []
    for s in http["sizes"]:
        m = s["memory"]
        rows.append(
            [
                f"{s['decisions']:,}",
                f"{s['data_mb']:,} MB",
                f"{m['after_first_answer']['rss_mb']:,} MB",
                f"{m['after_load']['peak_rss_mb']:,} MB",
                f"{base['peak_rss_mb']:,} MB",
            ]
        )
    r.out(
        "Resident memory of the `decigraph serve` process of the HTTP benchmark (`/proc/<pid>/"
        "status`): VmRSS after its first answer, and VmHWM (peak) after all the reads and "
        "writes. Baseline: the peak RSS of a bare Python process that loads the model and "
        "embeds one sentence (torch's fixed cost).",
        "",
    )
    r.table(
        ["decisions", "data on disk", "RSS after first answer", "peak RSS after load", "baseline"],
        rows,
    )


def quality(r: Report) -> None:
    r.out("## Quality: LoCoMo evidence recall", "")
    lo = r.load("locomo")
    if not lo:
        return
    res = lo["results"]
    r.out(
        f"LoCoMo dev split ({lo.get('conversations', 5)} conversation(s), {lo['items']:,} turns "
        f"stored as memory items through the normal write path, {lo['questions']} questions "
        "answered with `recall`); baselines over the same items in the same run "
        f"(`bench/bench_locomo.py`). Ingest {lo['ingest_items_per_s']} items/s, embedding alone "
        f"{lo['embedding_only_items_per_s']} items/s, recall {lo['recall_mean_ms']} ms mean.",
        "",
    )
    cols = ["R@5", "R@10", "R@20", *[f"{c} R@10" for c in CATS]]
    r.table(["method", *cols], [[k, *[f"{v[c]:.3f}" for c in cols]] for k, v in res.items()])
    others = [k for k in res if k != HYBRID]
    beaten = {c: res[HYBRID][f"{c} R@10"] > max(res[k][f"{c} R@10"] for k in others) for c in CATS}
    overall = res[HYBRID]["R@10"]
    full = lo.get("conversations", 5) >= 5
    for c in CATS:
        best = max(others, key=lambda k: res[k][f"{c} R@10"])
        r.targets.append(
            [
                f"LoCoMo {c} R@10",
                "beats the best baseline",
                f"{res[HYBRID][f'{c} R@10']:.3f} vs {res[best][f'{c} R@10']:.3f} ({best})",
                ok(beaten[c]) if full else "subset only",
            ]
        )
    r.targets.append(
        [
            "LoCoMo overall R@10",
            f">= {LOCOMO_R10}",
            f"{overall:.3f}",
            ok(overall >= LOCOMO_R10) if full else "subset only",
        ]
    )


def keyword(r: Report) -> None:
    r.out("## Keyword index (no target)", "")
    kw = r.load("keyword")
    if not kw:
        return
    rows = []
    for s in kw["speed"]:
        n = f"{s['documents']:,}"
        rows.append(
            [
                n,
                "add one document",
                *ms(s["decigraph add one document"]),
                f"bm25s re-index {s['bm25s add one document (re-index)']['median_ms']:,} ms",
            ]
        )
        rows.append(
            [
                n,
                "query top 10",
                *ms(s["decigraph query"]),
                "bm25s {} / {}".format(*ms(s["bm25s query"])),
            ]
        )
    rk = kw["ranking"]
    r.out(
        "decigraph's incremental BM25 against bm25s on the same tokens "
        f"(`bench/bench_keyword.py`); identical top-10 scores on {rk['same_top10_scores']:.1%} "
        f"of {rk['questions']} LoCoMo questions.",
        "",
    )
    r.table(["documents", "operation", "median", "p95", "bm25s (median / p95)"], rows)
