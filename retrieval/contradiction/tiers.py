"""Verdict tiers: what the guardrail does with the judge's probability for one pair.

- ``block``: a confident contradiction (P(contradicts) at or above the block threshold) of an
  accepted decision that others rely on. The write is refused unless the call supersedes the
  decision, overrides with a reason, or declares the pair compatible.
- ``review``: a plausible contradiction (at or above the review threshold), or a confident one
  of a decision nothing relies on yet. The write goes through; the pair is recorded as a
  suspected contradiction that ``findContradictions`` shows until someone resolves it.

The thresholds are the judge's (``card.json``), picked on the dev split only
(``bench/judge_common.py``: block where dev precision stays at or above 0.97; review where
flagged recall stays at or above 0.93 with at most 20 % of compatible look-alikes flagged).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from graph.drafts import EdgeDraft
from graph.enums import EdgeType

Tier = Literal["block", "review"]

#: The one-line reason an agent is shown, by the kind of contradiction the judge reads.
REASONS = {
    "substitution": "another choice for the same role",
    "negation": "one stops or forbids what the other does",
    "value": "another value for the same setting",
    "paraphrased_role": "another choice for the same role",
    "antonym": "the opposite approach",
    "implied_alternative": "an alternative that rules it out",
    "exception": "an exception to its rule",
    "reversal": "reverses it (required/optional, allowed/forbidden, on/off)",
    "scope_variant": "another choice for the same scope",
    "subordinate": "a clause that undoes it",
}


@dataclass(frozen=True, slots=True)
class Thresholds:
    """P(contradicts) at which a pair is blocked (when relied on) or raised for review."""

    block: float
    review: float

    def __post_init__(self) -> None:
        if not 0.0 < self.review <= self.block <= 1.0:
            raise ValueError(f"need 0 < review <= block <= 1, got {self.review}, {self.block}")


@dataclass(frozen=True, slots=True)
class Conflict:
    """A stored decision a proposed statement may contradict, and the tier it falls in."""

    target: str
    probability: float
    tier: Tier
    kind: str
    judge: str  # the judge's version
    statement: str = ""  # the target's statement, as shown to the caller

    @property
    def reason(self) -> str:
        return REASONS.get(self.kind, "a contradiction")

    def to_view(self) -> dict[str, object]:
        """The form an answer shows: which decision, its statement, how sure, why."""
        return {
            "id": self.target,
            "statement": self.statement[:200],
            "p": round(self.probability, 3),
            "tier": self.tier,
            "reason": self.reason,
        }

    def to_note(self) -> dict[str, object]:
        """The form written into the event (replay reads it; nothing is judged again)."""
        return {"target": self.target, "p": self.probability, "tier": self.tier, "kind": self.kind}


#: The ``signal`` of a ``contradicts`` edge the judge raised and nobody has confirmed yet.
SUSPECTED = "suspected"
#: The ``signal`` of a ``relates_to`` edge declaring two decisions compatible: the judge never
#: raises that pair again.
COMPATIBLE = "compatible"


def suspected_edge(source: str, c: Conflict) -> EdgeDraft:
    """The ``contradicts`` edge a raised pair is kept as until someone resolves it."""
    return EdgeDraft(
        source,
        c.target,
        EdgeType.CONTRADICTS,
        weight=round(max(c.probability, 1e-6), 6),
        origin="auto",
        meta={
            "signal": SUSPECTED,
            "p": c.probability,
            "tier": c.tier,
            "kind": c.kind,
            "judge": c.judge,
        },
    )


def compatible_edge(source: str, target: str) -> EdgeDraft:
    """The edge declaring ``source`` and ``target`` compatible."""
    return EdgeDraft(source, target, EdgeType.RELATES_TO, meta={"signal": COMPATIBLE})


def tier_of(probability: float, relied_on: bool, thresholds: Thresholds) -> Tier | None:
    """The tier of a pair: ``block`` only for a confident contradiction of a decision others
    rely on; ``review`` for any other at or above the review threshold; None below it.

    Examples
    --------
    >>> t = Thresholds(block=0.97, review=0.6)
    >>> cases = [(0.99, True), (0.99, False), (0.7, True), (0.2, True)]
    >>> [tier_of(p, relied, t) for p, relied in cases]
    ['block', 'review', 'review', None]
    """
    if probability >= thresholds.block and relied_on:
        return "block"
    if probability >= thresholds.review:
        return "review"
    return None
