"""Which stored decisions a proposed statement is judged against.

The judge reads pairs, so it must be shown the few decisions a statement could contradict:
the accepted, active decisions nearest to it by embedding (a contradiction is about the same
subject, so it sits near the statement even when the two share few words) and, beside them,
the decisions sharing its rarest words (a product name or a number the embedding blurs), and
the decisions that the nearest ones rely on (``depends_on``): a proposal written in other words
than a foundational decision often sits nearer its dependents, which speak of the same thing
in more detail, and the decision they rely on is the one a block protects.
Bounded: at most :data:`BY_VECTOR` + :data:`BY_PARENT` + :data:`BY_WORDS` pairs per
statement, so the judge's cost per write is fixed whatever the store's size. Deterministic: ties
are broken by id.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from itertools import islice

from graph.builders import raw_adjacency
from graph.enums import EdgeType, Lifecycle, NodeKind
from graph.lifecycle import is_superseded
from retrieval.index import DualIndex
from retrieval.matrix import Vector

#: Nearest decisions by embedding judged per statement.
BY_VECTOR = 4
#: Further decisions by shared words judged per statement.
BY_WORDS = 2
#: Further decisions relied on by one of the :data:`PARENT_SCAN` nearest, judged per statement
#: (on the gate split's 640-decision store the proposal's own earlier decision is among the
#: candidates for 0.875 of contradictions without them, 0.912 with them).
BY_PARENT = 2
#: How many of the nearest items are read for the decisions they rely on.
PARENT_SCAN = 16
#: Below this cosine a stored statement is too far to be about the same thing (the 2nd
#: percentile of contradicting pairs' cosine in the judge's dev data is 0.22).
FLOOR = 0.15
#: Stored items the embedding search reads before filtering to active decisions.
SEARCH = 32

DEPENDS_ON = EdgeType.DEPENDS_ON.value


@dataclass(frozen=True, slots=True)
class Rival:
    """A stored decision to judge a statement against, and how it was found."""

    target: str
    similarity: float
    found_by: str  # "vector", "parent" or "words"


def eligible_decisions(index: DualIndex, exclude: Collection[str]) -> Callable[[str], bool]:
    """A check that a node is an accepted, active decision not in ``exclude`` (memoised: the
    two searches ask about the same nodes)."""
    G = index.store.graph
    nodes = raw_adjacency(G).nodes
    decision, accepted = NodeKind.DECISION.value, Lifecycle.ACCEPTED.value
    seen: dict[str, bool] = {}

    def eligible(node_id: str) -> bool:
        known = seen.get(node_id)
        if known is None:
            attrs = nodes.get(node_id)
            known = seen[node_id] = (
                node_id not in exclude
                and attrs is not None
                and attrs.get("kind", decision) == decision
                and attrs.get("lifecycle", accepted) == accepted
                and not is_superseded(G, node_id)
            )
        return known

    return eligible


def rivals(
    index: DualIndex,
    text: str,
    vector: Vector,
    *,
    exclude: Collection[str] = (),
    pool: int = 512,
) -> list[Rival]:
    """The decisions ``text`` (embedded as ``vector``) is judged against, nearest first.

    Parameters
    ----------
    index : DualIndex
        The indexes of the store as it is now (hold the store lock for an exact answer).
    text : str
        The proposed statement.
    vector : Vector
        Its embedding (the text a decision's record embeds: statement, context, pattern).
    exclude : collection of str
        Decisions never to judge against (the decision being updated).
    pool : int
        The embedding search's sketch pool
        (:meth:`~retrieval.matrix.EmbeddingMatrix.nearest_sketched`).
    """
    eligible = eligible_decisions(index, exclude)
    near = [
        (node_id, cosine)
        for node_id, cosine in index.matrix.nearest_sketched(vector, SEARCH, pool)
        if cosine >= FLOOR
    ]
    # islice: eligibility is read only until each quota is filled.
    nearest = ((n, c) for n, c in near if eligible(n))
    found = [Rival(n, round(c, 6), "vector") for n, c in islice(nearest, BY_VECTOR)]
    taken = {r.target for r in found}
    relied_on = dict.fromkeys(p for n, _ in near[:PARENT_SCAN] for p in _depends_on(index, n))
    parents = list(islice((p for p in relied_on if p not in taken and eligible(p)), BY_PARENT))
    if parents:
        similar = index.matrix.similarities(vector, parents)
        for node_id in parents:
            found.append(Rival(node_id, round(similar.get(node_id, 0.0), 6), "parent"))
            taken.add(node_id)
    if not text.strip():
        return found
    by_words = index.keyword.query(text).top_accepted(
        BY_WORDS, lambda node_id: node_id not in taken and eligible(node_id)
    )
    similar = index.matrix.similarities(vector, [node_id for node_id, _ in by_words])
    for node_id, _ in by_words:
        found.append(Rival(node_id, round(similar.get(node_id, 0.0), 6), "words"))
    return found


def _depends_on(index: DualIndex, node_id: str) -> list[str]:
    """What ``node_id`` relies on, by id (sorted: a deterministic order)."""
    out = raw_adjacency(index.store.graph).succ.get(node_id, {})
    return sorted(target for target, kinds in out.items() if DEPENDS_ON in kinds)
