"""The judge's labelled pairs: well formed, the test split frozen, no pair in two splits."""

from __future__ import annotations

import hashlib
from collections import Counter

from bench.judge_common import (
    COMPATIBLE,
    CONTRADICTING,
    DATA,
    SPLITS,
    check_row,
    figures,
    load_split,
    pair_key,
    pick_thresholds,
    split_path,
)


def test_every_row_is_well_formed_with_a_unique_id() -> None:
    ids: list[str] = []
    for split in SPLITS:
        for row in load_split(split):
            assert check_row(row) is None, row
            assert row["split"] == split
            ids.append(row["id"])
    assert len(ids) == len(set(ids))


def test_the_test_splits_are_the_frozen_ones() -> None:
    frozen = dict(line.split()[::-1] for line in (DATA / "FROZEN").read_text().splitlines())
    for split in ("test", "test2"):
        digest = frozen[f"bench/judgedata/{split}.jsonl"]
        assert hashlib.sha256(split_path(split).read_bytes()).hexdigest() == digest


def test_no_pair_is_in_two_splits_either_way_round() -> None:
    seen: dict[tuple[str, str], str] = {}
    for split in SPLITS:
        for row in load_split(split):
            k = pair_key(row["a"], row["b"])
            assert k not in seen, (split, seen.get(k), row["id"])
            seen[k] = split


def test_every_phenomenon_is_covered_by_every_split() -> None:
    for split in SPLITS:
        counts = Counter(r["phenomenon"] for r in load_split(split))
        # test3 is one writer's 240 action-style pairs: every phenomenon, fewer of each.
        least = 2 if split == "test3" else 10
        for phenomenon in (*CONTRADICTING, *COMPATIBLE):
            assert counts[phenomenon] >= least, (split, phenomenon)
    assert len({r["domain"] for r in load_split("train")}) >= 40
    assert len({r["writer"] for r in load_split("train")}) >= 5


def rows(*labels: str) -> list[dict[str, str]]:
    phen = {"contradicts": "value", "compatible": "refinement", "unrelated": "cross_domain"}
    return [{"label": lab, "phenomenon": phen[lab]} for lab in labels]


def test_figures_count_tiers_by_label() -> None:
    r = rows("contradicts", "contradicts", "compatible", "unrelated")
    f = figures(r, [0.99, 0.6, 0.7, 0.1], block=0.9, review=0.5)
    assert f["block_recall"] == 0.5
    assert f["flag_recall"] == 1.0
    assert f["block_precision"] == 1.0
    assert f["lookalikes_flagged"] == 1.0
    assert f["unrelated_flagged"] == 0.0
    assert f["per_phenomenon"]["value"] == {"n": 2, "flagged": 1.0, "blocked": 0.5}


def test_thresholds_keep_block_precision_above_target() -> None:
    r = rows(*["contradicts"] * 40, *["compatible"] * 40)
    p = [0.5 + i / 100 for i in range(40)] + [0.3 + i / 100 for i in range(40)]
    t = pick_thresholds(r, p)
    f = figures(r, p, t["block"], t["review"])
    assert f["block_precision"] >= 0.97
    assert t["review"] <= t["block"]
