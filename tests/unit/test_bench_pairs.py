"""The labelled contradiction pairs (bench/contradictions/pairs.jsonl) are well-formed.

``bench/bench_judge.py`` measures the judge on them (``old540``, never trained on); these
checks keep the set usable: unique ids, both labels, every kind, both splits with every kind in
each, and labels that agree with their kind where the kind decides the label.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

PAIRS = Path(__file__).resolve().parents[2] / "bench" / "contradictions" / "pairs.jsonl"
KINDS = {
    "contradicting": True,
    "negation": True,
    "compatible": False,
    "refinement": False,
    "same_tool_other_purpose": False,
    "restatement": False,
    "scoped_variant": None,  # either way; the note says why
}
KEYS = {"id", "split", "domain", "kind", "a", "b", "contradicts", "note"}


@pytest.fixture(scope="module")
def pairs() -> list[dict[str, Any]]:
    lines = PAIRS.read_text(encoding="utf-8").splitlines()
    assert all(line.strip() for line in lines), "no blank lines"
    return [json.loads(line) for line in lines]


def test_rows_have_the_documented_shape(pairs: list[dict[str, Any]]) -> None:
    for p in pairs:
        assert set(p) == KEYS, p.get("id")
        assert re.fullmatch(r"p\d{3,}", p["id"]), p["id"]
        assert p["split"] in ("dev", "test", "holdout", "holdout2"), p["id"]
        assert p["kind"] in KINDS, p["id"]
        assert isinstance(p["contradicts"], bool), p["id"]
        assert isinstance(p["domain"], str), p["id"]
        assert p["domain"], p["id"]
        assert isinstance(p["note"], str), p["id"]
        assert p["note"].strip(), p["id"]
        for side in ("a", "b"):
            assert set(p[side]) == {"text", "context"}, p["id"]
            assert isinstance(p[side]["text"], str), p["id"]
            assert p[side]["text"].strip(), p["id"]
            context = p[side]["context"]
            assert context is None or (isinstance(context, str) and context.strip()), p["id"]


def test_ids_and_pairs_are_unique(pairs: list[dict[str, Any]]) -> None:
    ids = [p["id"] for p in pairs]
    assert len(ids) == len(set(ids))
    assert len({(p["a"]["text"], p["b"]["text"]) for p in pairs}) == len(pairs)
    assert all(p["a"]["text"] != p["b"]["text"] for p in pairs)


def test_size_labels_and_kinds(pairs: list[dict[str, Any]]) -> None:
    assert len(pairs) >= 300
    labels = Counter(p["contradicts"] for p in pairs)
    assert labels[True]
    assert labels[False]
    assert 0.3 <= labels[True] / len(pairs) <= 0.5
    assert {p["kind"] for p in pairs} == set(KINDS)
    assert len({p["domain"] for p in pairs}) >= 8
    scoped = {p["contradicts"] for p in pairs if p["kind"] == "scoped_variant"}
    assert scoped == {True, False}, "scoped variants labelled both ways"


def test_kind_decides_the_label_where_it_can(pairs: list[dict[str, Any]]) -> None:
    for p in pairs:
        expected = KINDS[p["kind"]]
        if expected is not None:
            assert p["contradicts"] is expected, p["id"]


def test_splits_are_about_one_third_dev_and_cover_every_kind(
    pairs: list[dict[str, Any]],
) -> None:
    dev = [p for p in pairs if p["split"] == "dev"]
    test = [p for p in pairs if p["split"] == "test"]
    assert 0.25 <= len(dev) / len(pairs) <= 0.4
    for part in (dev, test):
        assert {p["kind"] for p in part} == set(KINDS)
        assert {p["contradicts"] for p in part} == {True, False}
        assert {p["domain"] for p in part} == {p["domain"] for p in pairs}


def test_about_half_the_recorded_decisions_carry_a_context(pairs: list[dict[str, Any]]) -> None:
    with_context = sum(p["a"]["context"] is not None for p in pairs)
    assert 0.35 <= with_context / len(pairs) <= 0.7
