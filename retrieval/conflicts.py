"""Which active decisions a statement contradicts: the detector behind the graph guardrail.

Candidates come from the statement index (:mod:`.statements`), never from the embedding of the
stored text, so a decision's context cannot hide it: decisions sharing an option or a purpose
with the statement, and decisions sharing the most of its content words. Each candidate's
statement is read twice, both readings cached: as a stance (:func:`.stance.parse`, compared by
:func:`.stance_compare.conflict`; a "different choice" between two statements one of which
only adds detail to the other is a refinement, not a conflict) and, when that finds nothing,
by its words (:func:`.stance_align.align_conflict`: negation, another value, another name,
an explicit rejection). Only accepted, active decisions are candidates. Bounded: at most
:data:`MAX_CANDIDATES` candidates by stance keys (:data:`PER_KEY` from each key) plus
:data:`MAX_WORD_CANDIDATES` by shared words.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.builders import raw_adjacency
from graph.enums import Lifecycle, NodeKind
from graph.lifecycle import is_superseded

from .index import DualIndex
from .stance import parse
from .stance_align import align_conflict, different_acts, refinement
from .stance_compare import conflict

#: Latest active decisions taken from one index key, and entries inspected to find them.
PER_KEY = 8
SCAN = 32
#: Statements compared with a new one by stance keys, at most.
MAX_CANDIDATES = 32
#: Statements compared by shared words: the ``WORDS`` rarest words of the statement give their
#: ``PER_WORD`` latest active decisions each; the ``MAX_WORD_CANDIDATES`` sharing the most
#: of those words are compared (a word as common as "Kafka" still finds the one about topics).
MAX_WORD_CANDIDATES = 24
WORDS = 6
PER_WORD = 32


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
    G = index.store.graph
    decision = NodeKind.DECISION.value

    seen: dict[str, bool] = {}  # both lookups ask about the same decisions again and again
    # effective_lifecycle(G, n) is ACCEPTED, read on NetworkX's own node dict: a write asks
    # about ~100 decisions, and the node views and enum lookups cost a third of the whole pass.
    nodes = raw_adjacency(G).nodes
    accepted = Lifecycle.ACCEPTED.value

    def active(node_id: str) -> bool:
        known = seen.get(node_id)
        if known is None:
            attrs = nodes.get(node_id)
            known = seen[node_id] = (
                node_id != exclude
                and attrs is not None
                and attrs.get("kind", decision) == decision
                and attrs.get("lifecycle", accepted) == accepted
                and not is_superseded(G, node_id)
            )
        return known

    statements = index.statements
    targets = statements.candidates(stance, active, PER_KEY, MAX_CANDIDATES, SCAN)
    by_words = statements.sharing_words(
        text, active, WORDS, PER_WORD, 2 * PER_WORD, MAX_WORD_CANDIDATES
    )
    found: list[Found] = []
    by_stance = set(targets)
    for target in dict.fromkeys([*targets, *by_words]):
        verdict = judge(text, str(G.nodes[target]["text"]), stance=target in by_stance)
        if verdict is not None:
            found.append(Found(target, *verdict))
    found.sort(key=lambda f: (-f.score, f.target))
    return found
