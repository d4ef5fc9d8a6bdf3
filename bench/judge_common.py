"""The judge's labelled pairs and how it is scored on them (training, calibration, bench).

Splits live in ``bench/judgedata/{train,dev,test}.jsonl``: one pair a line, ``{id, split,
writer, domain, a, b, label, phenomenon, why}`` (``a`` the earlier decision, ``b`` the proposed
one). ``test`` is frozen (its digest is in ``bench/judgedata/FROZEN``); ``dev`` picks the
thresholds; ``train`` trains.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from retrieval.contradiction.labels import KINDS, LABELS

#: ``JUDGE_DATA`` points elsewhere for experiments.
DATA = Path(os.environ.get("JUDGE_DATA") or Path(__file__).resolve().parent / "judgedata")
#: ``test2``: frozen like ``test``, written by two other writers under a brief that balances word
#: overlap within each label (``writers/TASK2.md``).
SPLITS = ("train", "dev", "test", "test2")
CONTRADICTING = KINDS
COMPATIBLE = (
    "refinement",
    "other_scope",
    "permission_beside_rule",
    "complementary",
    "sequencing",
    "restatement",
    "different_quantity",
    "lookalike_negation",
)
UNRELATED = ("same_domain_unrelated", "cross_domain")
PHENOMENA = {
    **dict.fromkeys(CONTRADICTING, "contradicts"),
    **dict.fromkeys(COMPATIBLE, "compatible"),
    **dict.fromkeys(UNRELATED, "unrelated"),
}
#: Targets from the issue: block precision and recall, flagged recall, look-alikes flagged.
BLOCK_PRECISION, BLOCK_RECALL, FLAG_RECALL, LOOKALIKE_FLAGGED = 0.95, 0.50, 0.90, 0.25


def split_path(split: str) -> Path:
    return DATA / f"{split}.jsonl"


def load_split(split: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in split_path(split).read_text().splitlines() if line.strip()]


def split_digest(split: str) -> str:
    return hashlib.sha256(split_path(split).read_bytes()).hexdigest()


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The same pair whatever the order, case or spacing (how duplicates are found)."""
    norm = [" ".join(s.lower().split()) for s in (a, b)]
    return (min(norm), max(norm))


def check_row(row: dict[str, Any]) -> str | None:
    """Why a row is malformed, or None."""
    for key in ("domain", "a", "b", "label", "phenomenon"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            return f"{key} missing or empty"
    if row["label"] not in LABELS:
        return f"label {row['label']!r} is not one of {LABELS}"
    if PHENOMENA.get(row["phenomenon"]) != row["label"]:
        return f"phenomenon {row['phenomenon']!r} does not go with label {row['label']!r}"
    if row["a"].strip().lower() == row["b"].strip().lower():
        return "a and b are the same statement"
    return None


def flags(p: float, block: float, review: float) -> str:
    return "block" if p >= block else "review" if p >= review else "pass"


def figures(
    rows: Sequence[dict[str, Any]], p: Sequence[float], block: float, review: float
) -> dict[str, Any]:
    """Tier figures for pairs whose earlier decision others rely on (so a block is possible)."""
    tiers = [flags(x, block, review) for x in p]
    pos = [t for r, t in zip(rows, tiers, strict=True) if r["label"] == "contradicts"]
    blocked = [r["label"] for r, t in zip(rows, tiers, strict=True) if t == "block"]
    compat = [t for r, t in zip(rows, tiers, strict=True) if r["label"] == "compatible"]
    unrel = [t for r, t in zip(rows, tiers, strict=True) if r["label"] == "unrelated"]
    per: dict[str, list[str]] = defaultdict(list)
    for r, t in zip(rows, tiers, strict=True):
        per[r["phenomenon"]].append(t)

    def share(ts: Sequence[str], *which: str) -> float:
        return round(sum(t in which for t in ts) / len(ts), 3) if ts else 0.0

    return {
        "pairs": len(rows),
        "contradictions": len(pos),
        "blocked": len(blocked),
        "block_precision": round(blocked.count("contradicts") / len(blocked), 3)
        if blocked
        else 1.0,
        "block_recall": share(pos, "block"),
        "flag_recall": share(pos, "block", "review"),
        "lookalikes_flagged": share(compat, "block", "review"),
        "lookalikes_blocked": share(compat, "block"),
        "unrelated_flagged": share(unrel, "block", "review"),
        "per_phenomenon": {
            ph: {
                "n": len(ts),
                "flagged": share(ts, "block", "review"),
                "blocked": share(ts, "block"),
            }
            for ph, ts in sorted(per.items())
        },
    }


def pick_thresholds(rows: Sequence[dict[str, Any]], p: Sequence[float]) -> dict[str, float]:
    """Thresholds from the dev split: ``block`` the lowest whose precision keeps a margin over
    the target (0.97); ``review`` the highest keeping flagged recall at 0.93, unless that flags
    more than 20 % of the look-alikes (then the lowest that flags at most 20 %)."""
    grid = [round(0.01 * i, 2) for i in range(5, 100)]
    block = 0.99
    for t in grid:
        f = figures(rows, p, t, t)
        if f["block_precision"] >= 0.97 and f["blocked"] >= 10 and t >= 0.5:
            block = t
            break
    review = grid[0]
    for t in grid:
        if t > block:
            break
        f = figures(rows, p, block, t)
        if f["flag_recall"] >= 0.93:
            review = t
    while figures(rows, p, block, review)["lookalikes_flagged"] > 0.20 and review < block:
        review = round(review + 0.01, 2)
    return {"block": block, "review": review}


def score_rows(
    score: Callable[[list[tuple[str, str]]], list[float]], rows: Sequence[dict[str, Any]]
) -> list[float]:
    return score([(r["a"], r["b"]) for r in rows])


def calibrate(weights: Path, card: dict[str, Any]) -> dict[str, Any]:
    """Thresholds and dev figures for freshly written weights (read back as the server does)."""
    card_path = weights / "card.json"
    card_path.write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    from retrieval.contradiction.judge import PairJudge

    judge = PairJudge(weights)
    rows = load_split("dev")
    p = score_rows(lambda pairs: [s.contradicts for s in judge.score(pairs)], rows)
    thresholds = pick_thresholds(rows, p)
    return {
        "thresholds": thresholds,
        "dev": {
            "data_sha256": split_digest("dev"),
            **figures(rows, p, thresholds["block"], thresholds["review"]),
        },
    }


def version_of(weights_file: Path) -> str:
    return "xe-" + hashlib.sha256(weights_file.read_bytes()).hexdigest()[:10]
