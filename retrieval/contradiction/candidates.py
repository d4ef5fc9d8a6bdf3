"""Which stored decisions a proposed statement is judged against.

The judge reads pairs, so it must be shown the few decisions a statement could contradict:
the accepted, active decisions nearest to it by embedding (a contradiction is about the same
subject, so it sits near the statement even when the two share few words) and, beside them,
the decisions sharing its rarest words (a product name or a number the embedding blurs).
Bounded: at most :data:`BY_VECTOR` + :data:`BY_WORDS` pairs per statement, so the judge's cost
per write is fixed whatever the store's size. Deterministic: ties are broken by id.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from graph.builders import raw_adjacency
from graph.enums import Lifecycle, NodeKind
from graph.lifecycle import is_superseded
from retrieval.index import DualIndex
from retrieval.matrix import Vector

#: Nearest decisions by embedding judged per statement.
BY_VECTOR = 4
#: Further decisions by shared words judged per statement.
BY_WORDS = 2
#: Below this cosine a stored statement is too far to be about the same thing (the 2nd
#: percentile of contradicting pairs' cosine in the judge's dev data is 0.22).
FLOOR = 0.15
#: Stored items the embedding search reads before filtering to active decisions.
SEARCH = 32


@dataclass(frozen=True, slots=True)
class Rival:
    """A stored decision to judge a statement against, and how it was found."""

    target: str
    similarity: float
    found_by: str  # "vector" or "words"


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
    found: list[Rival] = []
    for node_id, cosine in index.matrix.nearest_sketched(vector, SEARCH, pool):
        if cosine < FLOOR or len(found) == BY_VECTOR:
            break
        if eligible(node_id):
            found.append(Rival(node_id, round(cosine, 6), "vector"))
    taken = {r.target for r in found}
    if not text.strip():
        return found
    by_words = index.keyword.query(text).top_accepted(
        BY_WORDS, lambda node_id: node_id not in taken and eligible(node_id)
    )
    similar = index.matrix.similarities(vector, [node_id for node_id, _ in by_words])
    for node_id, _ in by_words:
        found.append(Rival(node_id, round(similar.get(node_id, 0.0), 6), "words"))
    return found
