"""Where a filtered vector search runs: ChromaDB, or an exact scan of the candidate rows.

ChromaDB's metadata filter first collects every matching id from its SQLite store, which costs
~100 ms at 100k records even when the filter matches almost everything. So:

- no filter, or a filter the facet index says matches many nodes: ask ChromaDB for an
  over-fetched top list with no ``where`` and drop what fails the filter; widen the fetch
  while it comes back short (stopping when ChromaDB runs out);
- a selective facet filter (at most ``EXACT_SCAN_LIMIT`` candidates): score exactly those rows
  of the in-memory matrix, one matrix-vector product;
- a filter the facets cannot narrow that still leaves the top list short after widening:
  push it down to ChromaDB as ``where`` (slow, rarely taken), and if even that comes back
  short (a filter on review status or tags matching few nodes), scan the matrix exactly.

Every path returns exact cosines from the matrix, sorted by (score desc, id).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .filters import RecallFilters
from .keyword import KeywordScores, first_accepted
from .matrix import EmbeddingMatrix, Vector
from .structures import FacetIndex
from .vector import VectorIndex

EXACT_SCAN_LIMIT = 20_000
OVERFETCH = 3
MAX_FETCH = 2_000

Hit = tuple[str, float]


class SearchSpace(Protocol):
    """What a search reads of an index (:class:`~retrieval.index.DualIndex` is one)."""

    @property
    def matrix(self) -> EmbeddingMatrix: ...

    @property
    def facets(self) -> FacetIndex: ...

    @property
    def vectors(self) -> VectorIndex: ...

    def flush(self) -> None:
        """Send queued vector writes to ChromaDB before it is queried."""


def search_vectors(
    index: SearchSpace,
    vector: Vector,
    k: int,
    filters: RecallFilters,
    accept: Callable[[str], bool],
) -> list[Hit]:
    """The ``k`` nodes most similar to ``vector`` that pass ``accept`` (the full filter)."""
    if k <= 0 or not len(index.matrix):
        return []
    allowed = index.facets.candidates(filters.facets())
    if allowed is not None and len(allowed) <= EXACT_SCAN_LIMIT:
        ranked = index.matrix.nearest_among(vector, allowed, k * OVERFETCH)
        accepted = first_accepted(ranked, accept, k)
        if len(accepted) < k and len(ranked) < len(allowed):
            ranked = index.matrix.nearest_among(vector, allowed, len(allowed))
            accepted = first_accepted(ranked, accept, k)
        return accepted[:k]
    index.flush()
    # Even unfiltered, superseded nodes are dropped: a little slack saves a second round trip.
    fetch = k * OVERFETCH if not filters.is_empty() else k + k // 2 + 5
    while True:
        hits = index.vectors.query(vector, fetch, None)
        exact = index.matrix.similarities(vector, [hit.id for hit in hits])
        ranked = sorted(exact.items(), key=lambda hit: (-hit[1], hit[0]))
        accepted = first_accepted(ranked, accept, k)
        if len(accepted) >= k or len(hits) < fetch:
            return accepted[:k]
        if fetch >= MAX_FETCH:
            break
        fetch = min(MAX_FETCH, fetch * 4)
    where = filters.chroma_where()
    if where is not None:
        hits = index.vectors.query(vector, k * OVERFETCH, where)
        exact = index.matrix.similarities(vector, [hit.id for hit in hits])
        ranked = sorted(exact.items(), key=lambda hit: (-hit[1], hit[0]))
        accepted = first_accepted(ranked, accept, k)
        if len(accepted) >= k or len(hits) < k * OVERFETCH:
            return accepted[:k]
    return exhaustive_search(index, vector, k, allowed, accept)


def search_keywords(
    index: SearchSpace,
    scores: KeywordScores,
    k: int,
    filters: RecallFilters,
    accept: Callable[[str], bool],
) -> list[Hit]:
    """The ``k`` best keyword hits passing the filters; selective facets scan only their rows."""
    allowed = index.facets.candidates(filters.facets())
    if allowed is not None and len(allowed) <= EXACT_SCAN_LIMIT:
        ranked = scores.top_among(allowed, k * OVERFETCH)
        accepted = first_accepted(ranked, accept, k)
        if len(accepted) < k and len(ranked) == k * OVERFETCH:
            accepted = first_accepted(scores.top_among(allowed, len(allowed)), accept, k)
        return accepted[:k]
    return scores.top_accepted(k, accept)


def exhaustive_search(
    index: SearchSpace,
    vector: Vector,
    k: int,
    allowed: set[str] | None,
    accept: Callable[[str], bool],
) -> list[Hit]:
    """Exact scan, widening until ``k`` accepted hits or no more nodes (a filter matching few)."""
    pool = allowed if allowed is not None else index.matrix.ids()
    fetch = k * OVERFETCH * 8
    while True:
        ranked = index.matrix.nearest_among(vector, pool, fetch)
        accepted = first_accepted(ranked, accept, k)
        if len(accepted) >= k or len(ranked) < fetch:
            return accepted[:k]
        fetch *= 8
