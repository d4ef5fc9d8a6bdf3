"""The judge's labelled pairs and how it is scored on them (training, calibration, bench).

Splits live in ``bench/judgedata/{train,dev,test}.jsonl``: one pair a line, ``{id, split,
writer, domain, a, b, label, phenomenon, why}`` (``a`` the earlier decision, ``b`` the proposed
one). ``test`` is frozen (its digest is in ``bench/judgedata/FROZEN``); ``dev`` picks the
thresholds; ``train`` trains.
"""

from __future__ import annotations

import functools
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
#: ``test3``: frozen, one writer, earlier decision vs an agent's next action (TASK3.md).
#: ``test2``: frozen like ``test``, written by two other writers under a brief that balances word
#: overlap within each label (``writers/TASK2.md``).
SPLITS = ("train", "dev", "test", "test2", "test3")
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


#: The cosine band of *neighbours*: statements of two different pairs close enough to be among a
#: proposal's candidates in a store of a few hundred decisions of many domains, far enough
#: (read by hand on 70 samples of the training data) to be about different things. Below
#: ~0.5 two statements of different pairs are almost never about the same question; above it
#: they often are (two writers choosing a tool for the same role).
NEIGHBOUR_BAND = (0.22, 0.45)


def neighbour_pairs(
    rows: Sequence[dict[str, Any]],
    count: int,
    seed: int,
    band: tuple[float, float] = NEIGHBOUR_BAND,
    anchors: Sequence[int] | None = None,
) -> list[tuple[str, str]]:
    """``count`` pairs of statements from two different rows with cosine inside ``band``
    (the bundled MiniLM's embeddings; seeded): the unrelated pairs a gate's candidate search
    really meets, which joining two random statements rarely produces. With ``anchors`` (row
    indexes), each pair is ``(a neighbour, the anchor row's b)``: the proposal keeps its place.
    """
    import random

    import numpy as np

    statements = [(r[side], k) for k, r in enumerate(rows) for side in ("a", "b")]
    texts = tuple(sorted({text for text, _ in statements}))
    at = {text: i for i, text in enumerate(texts)}
    vectors = _embedded(texts)
    matrix = vectors[[at[text] for text, _ in statements]]
    rng = random.Random(seed)
    low, high = band
    out: list[tuple[str, str]] = []
    tries = 0
    while len(out) < count and tries < 20 * count:
        tries += 1
        if anchors is not None:
            owner = anchors[rng.randrange(len(anchors))]
            text = rows[owner]["b"]
        else:
            text, owner = statements[rng.randrange(len(statements))]
        sims = matrix @ vectors[at[text]]
        band_hits = np.flatnonzero((sims >= low) & (sims < high))
        inside = [int(i) for i in band_hits if statements[i][1] != owner]
        if inside:
            other = statements[rng.choice(inside)][0]
            ordered = anchors is None and rng.random() < 0.5
            out.append((text, other) if ordered else (other, text))
    return out


@functools.lru_cache(maxsize=2)
def _embedded(texts: tuple[str, ...]) -> Any:
    """The bundled MiniLM's vectors of ``texts`` (a float32 matrix; cached: training mines
    twice from the same statements)."""
    import numpy as np

    from retrieval.embedder import MiniLMEmbedder

    return np.asarray(MiniLMEmbedder().embed(list(texts)), dtype=np.float32)


def calibrate(weights: Path, card: dict[str, Any]) -> dict[str, Any]:
    """Thresholds and dev figures for freshly written weights (read back as the server does)."""
    card_path = weights / "card.json"
    card_path.write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    from retrieval.contradiction.judge import PairJudge

    judge = PairJudge(weights)
    rows = load_split("dev")
    p = score_rows(lambda pairs: [s.contradicts for s in judge.score(pairs)], rows)
    thresholds = pick_thresholds(rows, p)
    neighbours = [s.contradicts for s in judge.score(neighbour_pairs(rows, 400, seed=5))]
    return {
        "thresholds": thresholds,
        "dev": {
            "data_sha256": split_digest("dev"),
            **figures(rows, p, thresholds["block"], thresholds["review"]),
            "neighbours": len(neighbours),
            "neighbours_flagged": rate(neighbours, thresholds["review"]),
            "neighbours_blocked": rate(neighbours, thresholds["block"]),
        },
    }


def rate(probabilities: Sequence[float], threshold: float) -> float:
    return round(sum(p >= threshold for p in probabilities) / max(1, len(probabilities)), 3)


def version_of(weights_file: Path) -> str:
    return "xe-" + hashlib.sha256(weights_file.read_bytes()).hexdigest()[:10]
