"""BENCHMARKS.md section for CSTP parity over HTTP (``bench/bench_cstp.py``)."""

from __future__ import annotations

from bench.report_base import FLOOR, Report, ms


def cstp_parity(r: Report) -> None:
    r.out("## CSTP parity: MCP, CSTP's request shapes and the new methods (HTTP)", "")
    c = r.load("cstp")
    if not c:
        return
    rows = c["rows"]
    r.out(
        f"A real `decigraph serve` on a copy of the {c['decisions']:,}-decision store; one client,"
        f" sequential calls on loopback ({c['calls']} reads, {c['writes']} writes of each shape,"
        " interleaved). Each comparison has its baseline beside it, measured in the same run.",
        "",
    )
    pairs = [
        ("get_decision /mcp", "getDecision /cstp"),
        ("query_decisions /mcp", "queryDecisions hybrid /cstp"),
        ("recordDecision, CSTP CLI's shape", "recordDecision, decigraph's params"),
    ]
    table = []
    for call, baseline in pairs:
        got, base = rows[call], rows[baseline]
        ratio = got["median_ms"] / base["median_ms"] if base["median_ms"] else float("nan")
        table.append([call, *ms(got), baseline, *ms(base), f"{ratio:.2f}x"])
    r.table(
        ["call", "median", "p95", "baseline", "median", "p95", "median ratio"],
        table,
    )
    floor = ms(rows[FLOOR])
    r.out(
        f"New CSTP methods, with the HTTP floor (`{FLOOR}`: {floor[0]} median, {floor[1]} p95):", ""
    )
    r.table(
        ["method", "median", "p95"],
        [[name, *ms(cell)] for name, cell in rows["new methods"].items()],
    )
