"""BENCHMARKS.md section for the contradiction guardrail end to end (``bench/bench_gate.py``)."""

from __future__ import annotations

from bench.judge_common import BLOCK_PRECISION, BLOCK_RECALL, FLAG_RECALL, LOOKALIKE_FLAGGED
from bench.report_base import Report, ok


def gate(r: Report) -> None:
    r.out("## Quality: the contradiction guardrail through a real server", "")
    g = r.load("gate")
    if not g:
        return
    f, t = g["figures"], g["check_ms"]
    r.out(
        f"`bench/bench_gate.py`: a real `decigraph serve` (default settings, judge "
        f"`{g['judge']['version']}`) given the frozen gate split's {f['cases']} cases over "
        "`/cstp`: each earlier decision with its three dependents (`depends_on`), all in one "
        f"store ({g['store_decisions']} decisions, 40 domains), then each proposal asked with "
        "`checkGuardrails` in CSTP's shape. Blocked / flagged: the answer blocks on / raises "
        "(block or review) the case's own earlier decision.",
        "",
    )
    r.table(
        ["block precision", "block recall", "flagged recall", "look-alikes flagged",
         "unrelated flagged", "false blocks", "other cases' decisions raised per check",
         "checkGuardrails median", "p95"],
        [[f"{f['block_precision']:.3f}", f"{f['block_recall']:.3f}", f"{f['flag_recall']:.3f}",
          f"{f['lookalikes_flagged']:.3f}", f"{f['unrelated_flagged']:.3f}",
          str(f["false_blocks"]), f"{f['other_cases_raised_per_check']:.2f}",
          f"{t['median_ms']:.1f} ms", f"{t['p95_ms']:.1f} ms"]],
    )  # fmt: skip
    r.table(
        ["phenomenon", "n", "flagged", "blocked"],
        [
            [ph, str(v["n"]), f"{v['flagged']:.2f}", f"{v['blocked']:.2f}"]
            for ph, v in f["per_phenomenon"].items()
        ],
    )
    r.targets += [
        ["guardrail e2e: block precision (gate)", f">= {BLOCK_PRECISION}",
         f"{f['block_precision']:.3f}", ok(f["block_precision"] >= BLOCK_PRECISION)],
        ["guardrail e2e: block recall (gate)", f">= {BLOCK_RECALL}",
         f"{f['block_recall']:.3f}", ok(f["block_recall"] >= BLOCK_RECALL)],
        ["guardrail e2e: block + review recall (gate)", f">= {FLAG_RECALL}",
         f"{f['flag_recall']:.3f}", ok(f["flag_recall"] >= FLAG_RECALL)],
        ["guardrail e2e: look-alikes flagged (gate)", f"<= {LOOKALIKE_FLAGGED}",
         f"{f['lookalikes_flagged']:.3f}", ok(f["lookalikes_flagged"] <= LOOKALIKE_FLAGGED)],
        ["guardrail e2e: checkGuardrails p95 (target at 100k; measured at "
         f"{g['store_decisions']})", "<= 15 ms", f"{t['p95_ms']:.1f} ms",
         ok(t["p95_ms"] <= 15)],
    ]  # fmt: skip
