"""BENCHMARKS.md section for the contradiction pair judge (``bench/bench_judge.py``)."""

from __future__ import annotations

from typing import Any

from bench.judge_common import (
    BLOCK_PRECISION,
    BLOCK_RECALL,
    CONTRADICTING,
    FLAG_RECALL,
    LOOKALIKE_FLAGGED,
)
from bench.report_base import Report, ok

PER_PHENOMENON = 0.6


def _row(name: str, f: dict[str, Any]) -> list[str]:
    return [
        name,
        str(f["pairs"]),
        f"{f['block_precision']:.3f}",
        f"{f['block_recall']:.3f}",
        f"{f['flag_recall']:.3f}",
        f"{f['lookalikes_flagged']:.3f}",
    ]


def judge(r: Report) -> None:
    r.out("## Quality: contradiction pair judge", "")
    j = r.load("judge")
    if not j:
        return
    th = j["judge"]["thresholds"]
    r.out(
        f"Judge `{j['judge']['version']}` (`retrieval/contradiction/`), thresholds from the dev "
        f"split: block at P >= {th['block']}, review at P >= {th['review']}. Every pair is judged "
        "as if its earlier decision were relied on (a block is possible). Baselines in the same "
        "run: the hand-written grammar the judge replaced (`bench/baselines/grammar`, a hit "
        "blocks) and the cosine "
        f"of the two statements' MiniLM vectors at the dev split's best-F1 threshold "
        f"({j['cosine_threshold']}). Test split: frozen (`bench/judgedata/FROZEN`), written "
        "first by two writers who wrote nothing else, never trained or tuned on. `old540`: "
        "`bench/contradictions/pairs.jsonl`, written beside the grammar (labels: contradicts or "
        "not).",
        "",
    )
    head = [
        "split / judge",
        "pairs",
        "block precision",
        "block recall",
        "flagged recall",
        "look-alikes flagged",
    ]
    rows = []
    for split, by in j["splits"].items():
        for name in ("judge", "grammar", "cosine"):
            rows.append(_row(f"{split} / {name}", by[name]))
    r.table(head, rows)
    test = j["splits"]["test"]["judge"]
    per = test["per_phenomenon"]
    shown = [name for name in ("test", "test2", "gate", "dev", "old540") if name in j["splits"]]
    r.out(
        "Per phenomenon, judge flagged (block or review) on each split; the grammar and cosine "
        "on the test split:",
        "",
    )
    r.table(
        ["phenomenon", *[f"{name} (n)" for name in shown if name != "old540"], "grammar", "cosine"],
        [
            [
                ph,
                *[
                    _cell(j["splits"][name]["judge"]["per_phenomenon"].get(ph))
                    for name in shown
                    if name != "old540"
                ],
                f"{j['splits']['test']['grammar']['per_phenomenon'][ph]['flagged']:.2f}",
                f"{j['splits']['test']['cosine']['per_phenomenon'][ph]['flagged']:.2f}",
            ]
            for ph in per
        ],
    )
    t = j["judge_time"]
    r.out(
        f"Judge time per pair: {t['single_p50_ms']} ms median, {t['single_p95_ms']} ms p95 one at "
        f"a time; {t['batched_per_pair_ms']} ms each in batches of 16 ({t['pairs']} dev pairs).",
        "",
    )
    for name in shown:
        f = j["splits"][name]["judge"]
        weakest = min(
            (v["flagged"] for ph, v in f["per_phenomenon"].items() if ph in CONTRADICTING),
            default=0.0,
        )
        r.targets += [
            _target(f"judge: block precision ({name})", BLOCK_PRECISION, f["block_precision"]),
            _target(f"judge: block recall ({name})", BLOCK_RECALL, f["block_recall"]),
            _target(f"judge: block + review recall ({name})", FLAG_RECALL, f["flag_recall"]),
            _target(
                f"judge: look-alikes flagged ({name})",
                LOOKALIKE_FLAGGED,
                f["lookalikes_flagged"],
                at_most=True,
            ),
        ]
        if name != "old540":
            r.targets.append(
                _target(f"judge: weakest phenomenon flagged ({name})", PER_PHENOMENON, weakest)
            )


def _cell(v: dict[str, Any] | None) -> str:
    return "" if v is None else f"{v['flagged']:.2f} ({v['n']})"


def _target(name: str, bound: float, value: float, at_most: bool = False) -> list[str]:
    met = value <= bound if at_most else value >= bound
    return [name, f"{'<=' if at_most else '>='} {bound}", f"{value:.3f}", ok(met)]
