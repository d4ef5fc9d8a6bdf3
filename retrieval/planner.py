"""Where a filtered vector search runs: the in-memory matrix's sketch pool, an exact scan of
the candidate rows, or ChromaDB.

- a selective facet filter (at most ``EXACT_SCAN_LIMIT`` candidates): score exactly those rows
  of the in-memory matrix, one matrix-vector product;
- no filter, or a filter the facet index says matches many nodes, with a recall pool
  (``index.vector_pool`` > 0, the default): the matrix's sign-sketch pool
  (:meth:`~retrieval.matrix.EmbeddingMatrix.nearest_sketched`) gives an over-fetched top list,
  what fails the filter is dropped and the fetch widens while it comes back short; past
  ``MAX_FETCH``, an exact scan. The answer is a function of the stored vectors alone, so every
  replay and every replica gives the same one. ChromaDB's HNSW index does not: its graph is
  built with random levels and threads, and two builds of the same 10k real vectors answered
  18 of 400 top-80 queries differently (README "Recall": at 100k decisions the pool of 2048
  also misses fewer of the exact top 80 than HNSW, and is faster);
- the same with ``vector_pool`` 0: ChromaDB answers the over-fetched list instead (the
  behaviour before), and a filter the facets cannot narrow that still leaves the list short is
  pushed down to ChromaDB as ``where`` (~100 ms at 100k records: its metadata filter first
  collects every matching id), then scanned exactly if even that comes back short.

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
#: Sketch-pool rows rescored per item fetched, at least (a wider fetch gets a wider pool).
POOL_PER_HIT = 16
#: A broad search's sketch pool by default (``Settings.recall_pool``): with 100k decisions it
#: misses fewer of the exact top 80 than ChromaDB's HNSW index (README "Recall").
DEFAULT_VECTOR_POOL = 2048

Hit = tuple[str, float]


class SearchSpace(Protocol):
    """What a search reads of an index (:class:`~retrieval.index.DualIndex` is one)."""

    @property
    def matrix(self) -> EmbeddingMatrix: ...

    @property
    def facets(self) -> FacetIndex: ...

    @property
    def vectors(self) -> VectorIndex: ...

    @property
    def vector_pool(self) -> int:
        """Sketch-pool rows a broad search rescores (0: ChromaDB answers it)."""

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
    pool = index.vector_pool
    if pool <= 0:
        index.flush()
    # Even unfiltered, superseded nodes are dropped: a little slack saves a second round trip.
    fetch = k * OVERFETCH if not filters.is_empty() else k + k // 2 + 5
    while True:
        if pool > 0:
            near = index.matrix.nearest_sketched(vector, fetch, max(pool, fetch * POOL_PER_HIT))
            found = [node_id for node_id, _ in near]
        else:
            found = [hit.id for hit in index.vectors.query(vector, fetch, None)]
        exact = index.matrix.similarities(vector, found)
        ranked = sorted(exact.items(), key=lambda hit: (-hit[1], hit[0]))
        accepted = first_accepted(ranked, accept, k)
        if len(accepted) >= k or len(found) < fetch:
            return accepted[:k]
        if fetch >= MAX_FETCH:
            break
        fetch = min(MAX_FETCH, fetch * 4)
    where = filters.chroma_where() if pool <= 0 else None
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
