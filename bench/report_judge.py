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
    r.out("Per phenomenon, test split (flagged = block or review):", "")
    r.table(
        ["phenomenon", "n", "judge flagged", "judge blocked", "grammar", "cosine"],
        [
            [
                ph,
                str(v["n"]),
                f"{v['flagged']:.2f}",
                f"{v['blocked']:.2f}",
                f"{j['splits']['test']['grammar']['per_phenomenon'][ph]['flagged']:.2f}",
                f"{j['splits']['test']['cosine']['per_phenomenon'][ph]['flagged']:.2f}",
            ]
            for ph, v in per.items()
        ],
    )
    t = j["judge_time"]
    r.out(
        f"Judge time per pair: {t['single_p50_ms']} ms median, {t['single_p95_ms']} ms p95 one at "
        f"a time; {t['batched_per_pair_ms']} ms each in batches of 16 ({t['pairs']} dev pairs).",
        "",
    )
    worst = min(per[ph]["flagged"] for ph in CONTRADICTING if ph in per)
    r.targets += [
        [
            "judge: block precision (test)",
            f">= {BLOCK_PRECISION}",
            f"{test['block_precision']:.3f}",
            ok(test["block_precision"] >= BLOCK_PRECISION),
        ],
        [
            "judge: block recall (test)",
            f">= {BLOCK_RECALL}",
            f"{test['block_recall']:.3f}",
            ok(test["block_recall"] >= BLOCK_RECALL),
        ],
        [
            "judge: block + review recall (test)",
            f">= {FLAG_RECALL}",
            f"{test['flag_recall']:.3f}",
            ok(test["flag_recall"] >= FLAG_RECALL),
        ],
        [
            "judge: look-alikes flagged (test)",
            f"<= {LOOKALIKE_FLAGGED}",
            f"{test['lookalikes_flagged']:.3f}",
            ok(test["lookalikes_flagged"] <= LOOKALIKE_FLAGGED),
        ],
        [
            "judge: weakest phenomenon flagged (test)",
            f">= {PER_PHENOMENON}",
            f"{worst:.2f}",
            ok(worst >= PER_PHENOMENON),
        ],
    ]
