"""Which active decisions a statement contradicts: the detector behind the graph guardrail.

Candidates come from the statement index (:mod:`.statements`), never from the embedding of the
stored text, so a decision's context cannot hide it; each candidate's statement is parsed
(:func:`.stance.parse`, cached) and compared (:func:`.stance_compare.conflict`). Only accepted,
active decisions are candidates. Bounded: at most :data:`MAX_CANDIDATES` comparisons, each
index key contributing its :data:`PER_KEY` latest active decisions.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.enums import Lifecycle, NodeKind
from graph.lifecycle import effective_lifecycle

from .index import DualIndex
from .stance import parse
from .stance_compare import conflict

#: Latest active decisions taken from one index key, and entries inspected to find them.
PER_KEY = 8
SCAN = 32
#: Statements compared with a new one, at most.
MAX_CANDIDATES = 32


@dataclass(frozen=True, slots=True)
class Found:
    """A stored decision the statement contradicts, with the kind, reason and confidence."""

    target: str
    kind: str
    reason: str
    score: float


def find_conflicts(index: DualIndex, text: str, exclude: str | None = None) -> list[Found]:
    """Active decisions whose statement contradicts ``text``, strongest first (then by id).

    ``exclude``: the decision being updated (it never contradicts itself).
    """
    stance = parse(text)
    if not stance.claims:
        return []
    G = index.store.graph
    decision = NodeKind.DECISION.value

    def active(node_id: str) -> bool:
        if node_id == exclude or node_id not in G:
            return False
        attrs = G.nodes[node_id]
        return attrs.get("kind", decision) == decision and (
            effective_lifecycle(G, node_id) is Lifecycle.ACCEPTED
        )

    found: list[Found] = []
    for target in index.statements.candidates(stance, active, PER_KEY, MAX_CANDIDATES, SCAN):
        verdict = conflict(stance, parse(str(G.nodes[target]["text"])))
        if verdict is not None:
            found.append(Found(target, verdict.kind, verdict.reason, verdict.score))
    found.sort(key=lambda f: (-f.score, f.target))
    return found
