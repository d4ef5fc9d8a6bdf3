"""The learned pair judge with its shipped weights: the digest check, determinism, and that it
reads plain cases the right way round (statements written here, in no split)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from retrieval.contradiction.judge import WEIGHTS_DIR, JudgeWeightsError, PairJudge, read_card
from retrieval.contradiction.model import KINDS


@pytest.fixture(scope="module")
def judge() -> PairJudge:
    j = PairJudge()
    j.load()
    return j


def test_weights_match_their_card_and_fit_the_budget() -> None:
    card = read_card()
    weights = WEIGHTS_DIR / "judge.safetensors"
    assert weights.stat().st_size <= 30 * 1024 * 1024
    assert card["version"].startswith("xe-")
    assert 0 < card["thresholds"]["review"] <= card["thresholds"]["block"] < 1


def test_altered_weights_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "weights"
    shutil.copytree(WEIGHTS_DIR, copy)
    data = bytearray((copy / "judge.safetensors").read_bytes())
    data[-1] ^= 0x01
    (copy / "judge.safetensors").write_bytes(bytes(data))
    with pytest.raises(JudgeWeightsError, match="do not match their card"):
        PairJudge(copy)


def test_missing_weights_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "weights"
    shutil.copytree(WEIGHTS_DIR, copy)
    (copy / "judge.safetensors").unlink()
    with pytest.raises(JudgeWeightsError, match="missing"):
        PairJudge(copy)


PAIRS = [
    (
        "The billing service stores invoices in PostgreSQL 16 on the managed cluster.",
        "Invoices will live in MongoDB Atlas from next sprint; Postgres is dropped for billing.",
    ),
    (
        "Contractors get read-only access to the analytics warehouse.",
        "Office plants are watered every Tuesday by the facilities team.",
    ),
    (
        "Production deploys need two approving reviews on the pull request.",
        "Production deploys need two approvals, and one reviewer must be from the owning team.",
    ),
]


def test_scores_are_deterministic_and_independent_of_batching(judge: PairJudge) -> None:
    together = judge.score(PAIRS)
    judge._cache.clear()
    alone = [judge.score([pair])[0] for pair in PAIRS]
    for a, b in zip(together, alone, strict=True):
        assert a.kind == b.kind
        assert a.kind in KINDS
        assert abs(a.contradicts - b.contradicts) < 1e-4
        assert abs(a.contradicts + a.compatible + a.unrelated - 1) < 1e-4
    judge._cache.clear()
    assert judge.score(PAIRS) == together


def test_reads_plain_cases(judge: PairJudge) -> None:
    swap, unrelated, refinement = judge.score(PAIRS)
    review = judge.card["thresholds"]["review"]
    assert swap.contradicts >= review
    assert unrelated.unrelated > max(unrelated.contradicts, unrelated.compatible)
    assert refinement.contradicts < review
