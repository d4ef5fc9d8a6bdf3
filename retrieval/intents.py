"""Query intents and the named, typed weight presets that recall uses for each.

An intent decides which relation family a traversal should trust: a WHY question follows
causal edges, a WHEN question temporal ones, an ENTITY question shared subjects. Detection is a
word-bounded pattern vote (no model), and callers can always override it.
"""

from __future__ import annotations

import re
from enum import StrEnum
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field, model_validator

from graph.enums import RelationFamily


class Intent(StrEnum):
    WHY = "why"
    WHEN = "when"
    ENTITY = "entity"
    GENERAL = "general"


class FamilyWeights(BaseModel):
    """How much a step along each relation family counts (they sum to 1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    causal: float = Field(ge=0.0, le=1.0)
    temporal: float = Field(ge=0.0, le=1.0)
    entity: float = Field(ge=0.0, le=1.0)
    semantic: float = Field(ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sums_to_one(self) -> FamilyWeights:
        total = self.causal + self.temporal + self.entity + self.semantic
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"family weights must sum to 1, got {total:.4f}")
        return self

    def of(self, family: RelationFamily) -> float:
        return float(getattr(self, family.value))

    def relative(self) -> dict[RelationFamily, float]:
        """Each family's weight divided by the largest: the intent's favourite counts 1.

        Recall scales these by the preset's ``propagation``, so an intent changes *which*
        relations a traversal trusts, not how far scores spread overall.
        """
        top = max(self.of(family) for family in RelationFamily) or 1.0
        return {family: self.of(family) / top for family in RelationFamily}


class WeightPreset(BaseModel):
    """A named recall configuration: family weights plus the traversal's bounds.

    ``propagation`` caps what a node passes to a neighbour: score x relative family weight x
    edge weight x propagation (below 1, so a neighbour never outranks its source on borrowed
    evidence alone); ``beam_width`` nodes are expanded per depth, at most ``max_nodes``
    are scored in all, and nodes with more than ``max_fanout`` neighbours (hubs) are scored but
    not expanded.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    intent: Intent
    families: FamilyWeights
    beam_width: int = Field(ge=1, le=200)
    max_depth: int = Field(ge=0, le=8)
    max_nodes: int = Field(ge=1, le=5_000)
    propagation: float = Field(default=0.3, ge=0.0, le=1.0)
    max_fanout: int = Field(default=200, ge=1, le=100_000)
    effect_weight: float = Field(default=1.0, ge=0.0, le=1.0)
    """What a causal-family step counts when it walks from a cause to its effect (a decision to
    what depends on it) rather than from an effect to its cause; below 1 for WHY questions,
    whose answers are causes."""


def _preset(
    name: str,
    intent: Intent,
    weights: tuple[float, float, float, float],
    beam: int,
    depth: int,
    effect_weight: float = 1.0,
) -> WeightPreset:
    causal, temporal, entity, semantic = weights
    return WeightPreset(
        name=name,
        intent=intent,
        families=FamilyWeights(causal=causal, temporal=temporal, entity=entity, semantic=semantic),
        beam_width=beam,
        max_depth=depth,
        max_nodes=500,
        effect_weight=effect_weight,
    )


#: The default preset per intent (family weights from the four-graph model; MAGMA/mnemon).
PRESETS: MappingProxyType[Intent, WeightPreset] = MappingProxyType(
    {
        Intent.WHY: _preset("why-causal", Intent.WHY, (0.70, 0.20, 0.05, 0.05), 15, 3, 0.4),
        Intent.WHEN: _preset("when-temporal", Intent.WHEN, (0.15, 0.65, 0.10, 0.10), 10, 3),
        Intent.ENTITY: _preset("entity-subject", Intent.ENTITY, (0.10, 0.05, 0.55, 0.30), 10, 3),
        Intent.GENERAL: _preset("general-even", Intent.GENERAL, (0.25, 0.25, 0.25, 0.25), 10, 3),
    }
)

_CUES: dict[Intent, re.Pattern[str]] = {
    Intent.WHY: re.compile(
        r"\b(why|reasons?|because|causes?|caused|motivat\w*|rationale|led to|lead to|"
        r"what made|how come|justif\w*|explain\w*|purpose|due to|result(?:ed)? in)\b",
        re.IGNORECASE,
    ),
    Intent.WHEN: re.compile(
        r"\b(when|what time|what date|which (?:day|date|year|month|week)|how long ago|"
        r"timeline|since when|until when|first time|last time|before|after|during|ago|"
        r"yesterday|today|last (?:week|month|year)|in \d{4})\b",
        re.IGNORECASE,
    ),
    Intent.ENTITY: re.compile(
        r"\b(who|whom|whose|which (?:person|team|people|service|system|component)|"
        r"what do (?:we|you|i) know about|tell me about|everything about|all about)\b",
        re.IGNORECASE,
    ),
}
_PRIORITY = (Intent.WHY, Intent.WHEN, Intent.ENTITY)  # tie order: the more specific first


def detect_intent(query: str) -> Intent:
    """The intent with the most cue matches in ``query``; ties go WHY, WHEN, ENTITY; else GENERAL.

    Examples
    --------
    >>> detect_intent("Why did we move off MongoDB?")
    <Intent.WHY: 'why'>
    >>> detect_intent("When did Caroline go to the support group?")
    <Intent.WHEN: 'when'>
    >>> detect_intent("Who owns the billing service?")
    <Intent.ENTITY: 'entity'>
    >>> detect_intent("database choice for the ledger")
    <Intent.GENERAL: 'general'>
    """
    votes = {intent: len(_CUES[intent].findall(query)) for intent in _PRIORITY}
    best = max(_PRIORITY, key=lambda intent: (votes[intent], -_PRIORITY.index(intent)))
    return best if votes[best] > 0 else Intent.GENERAL
