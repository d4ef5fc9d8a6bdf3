"""BENCHMARKS.md sections for issue 16's measurements: the one-shot CLI (``bench_cli.py``)."""

from __future__ import annotations

from typing import Any

from bench.report_base import NA, Report, ok

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
