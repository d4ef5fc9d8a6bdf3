"""The hand-written contradiction grammar the learned judge replaced, kept only as the baseline
``bench/bench_judge.py`` measures beside the judge in the same run (the product no longer
imports it). :func:`judge` is its verdict on one pair: the stance reading first
(:mod:`.stance`, compared by :mod:`.stance_compare`), then the reading by words
(:mod:`.stance_align`).
"""

from __future__ import annotations

from .stance import parse
from .stance_align import align_conflict, different_acts, refinement
from .stance_compare import conflict


def judge(new: str, stored: str, stance: bool = True) -> tuple[str, str, float] | None:
    """Whether statement ``new`` contradicts statement ``stored``: ``(kind, reason, score)``.

    The stance reading first (a "different choice" or "rejection" dropped when one statement
    only refines the other), then the reading by words. ``stance=False``: the reading by
    words alone (for a decision found only by shared words: the stance rules assume the two
    statements share an option, a purpose or a policy). Deterministic and pure.
    """
    verdict = conflict(parse(new), parse(stored)) if stance else None
    # A choice or rejection between two statements where one only adds to the other (same
    # polarity once negations cancel: "Never deploy without a green build" and "Deploy only
    # with a green build") is a misreading of the grammar, not a conflict.
    # Rival tools for two different acts ("Lint Go code with X", "Format Go code with Y") are
    # no rivals either.
    if verdict is not None and not (
        (verdict.kind in {"choice", "rejection"} and refinement(new, stored))
        or (verdict.kind == "choice" and different_acts(new, stored))
    ):
        return verdict.kind, verdict.reason, verdict.score
    worded = align_conflict(new, stored)
    if worded is not None:
        return worded[0], worded[1], _WORD_SCORES[worded[0]]
    return None


_WORD_SCORES = {"rejection": 0.9, "negation": 0.85, "value": 0.8, "choice": 0.8}
