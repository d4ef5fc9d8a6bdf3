"""Every node's embedding in one in-memory float32 matrix.

ChromaDB answers "which items are nearest to this query"; recall also needs the exact cosine
of arbitrary nodes (anchors found by keyword or recency, neighbours reached by traversal), and
the write path needs the nearest existing items of a new one without flushing Chroma first.
One matrix product serves both: at 100k x 384 it is ~150 MB and a full scan takes ~15 ms.

Beside the rows the matrix keeps each vector's sign sketch (one bit per dimension: 48 bytes
at 384). :meth:`EmbeddingMatrix.nearest_sketched` ranks every row by the Hamming distance of
sketches (reading 1/32 of the bytes a full scan reads), then rescores the closest ``pool`` rows
exactly; the write path's neighbour scan uses it (``bench/bench_neighbours.py`` measures how
often it agrees with the exact scan).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from graph.compact import ENABLED as COMPACT_MEMORY

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]

_MIN_CAPACITY = 64


def _sketch_words(dimension: int) -> int:
    return (dimension + 63) // 64


def sign_sketch(vectors: Matrix) -> npt.NDArray[np.uint64]:
    """One bit per dimension (set where the component is positive), packed into uint64 words.

    Examples
    --------
    >>> int(sign_sketch(np.array([[0.5, -0.5, 0.1]], dtype=np.float32))[0, 0]) == 0b10100000
    True
    """
    rows = np.atleast_2d(vectors)
    words = _sketch_words(rows.shape[1])
    packed = np.packbits(rows > 0, axis=1)
    padded = np.zeros((rows.shape[0], words * 8), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view(np.uint64)


class EmbeddingMatrix:
    """Unit vectors by node id; rows stay dense (a removal moves the last row into the gap).

    Examples
    --------
    >>> m = EmbeddingMatrix(2)
    >>> m.put("aaaaaaaa", np.array([1.0, 0.0], dtype=np.float32))
    >>> m.put("bbbbbbbb", np.array([0.6, 0.8], dtype=np.float32))
    >>> m.nearest(np.array([0.0, 1.0], dtype=np.float32), 1)
    [('bbbbbbbb', 0.800000011920929)]
    """

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._rows = np.zeros((_MIN_CAPACITY, dimension), dtype=np.float32)
        # One row per sketch word, one column per vector: XOR and popcount then run over long
        # contiguous runs (a row-major (n, 6) layout is ten times slower to reduce).
        self._sketches = np.zeros((_sketch_words(dimension), _MIN_CAPACITY), dtype=np.uint64)
        self._ids: list[str] = []
        self._row: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_rows"] = self._rows[: max(len(self._ids), 1)]  # a view: not the spare capacity
        state.pop("_sketches", None)  # derived from the rows: recomputed on load
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        used = len(self._ids)
        self._rows = _with_capacity(self._rows, used)
        self._sketches = np.zeros((_sketch_words(self.dimension), len(self._rows)), np.uint64)
        self._sketches[:, :used] = sign_sketch(self._rows[:used]).T

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._row

    def ids(self) -> set[str]:
        return set(self._row)

    def get(self, node_id: str) -> Vector | None:
        row = self._row.get(node_id)
        return None if row is None else self._rows[row]

    def put(self, node_id: str, vector: Vector) -> None:
        if vector.shape != (self.dimension,):
            raise ValueError(
                f"vector for {node_id} has shape {vector.shape}, not ({self.dimension},)"
            )
        row = self._row.get(node_id)
        if row is None:
            row = len(self._ids)
            if row == len(self._rows):
                self._rows = _with_capacity(self._rows, row + 1)
                grown = np.zeros((self._sketches.shape[0], len(self._rows)), np.uint64)
                grown[:, :row] = self._sketches[:, :row]
                self._sketches = grown
            self._ids.append(node_id)
            self._row[node_id] = row
        self._rows[row] = vector
        self._sketches[:, row] = sign_sketch(vector)[0]

    def remove(self, node_id: str) -> None:
        row = self._row.pop(node_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        moved = self._ids.pop()
        if row != last:
            self._rows[row] = self._rows[last]
            self._sketches[:, row] = self._sketches[:, last]
            self._ids[row] = moved
            self._row[moved] = row

    def similarities(self, query: Vector, node_ids: Iterable[str]) -> dict[str, float]:
        """Cosine of ``query`` with each known node in ``node_ids`` (unknown ids are skipped)."""
        known = [node_id for node_id in node_ids if node_id in self._row]
        if not known:
            return {}
        rows = np.fromiter((self._row[i] for i in known), dtype=np.int64, count=len(known))
        values = self._rows[rows] @ query
        return dict(zip(known, values.tolist(), strict=True))

    def nearest_among(
        self, query: Vector, node_ids: Iterable[str], k: int
    ) -> list[tuple[str, float]]:
        """The ``k`` most similar of ``node_ids`` by cosine (ties by id), scanning only them."""
        known = [node_id for node_id in node_ids if node_id in self._row]
        if not known or k <= 0:
            return []
        rows = np.fromiter((self._row[i] for i in known), dtype=np.int64, count=len(known))
        scores = self._rows[rows] @ query
        if k < len(known):
            # Everything tied with the k-th score stays in, so ids decide ties at the cut.
            kth = np.partition(scores, len(known) - k)[len(known) - k]
            picked = np.flatnonzero(scores >= kth)
        else:
            picked = np.arange(len(known))
        ranked = sorted(
            ((known[i], float(scores[i])) for i in picked.tolist()),
            key=lambda hit: (-hit[1], hit[0]),
        )
        return ranked[:k]

    def nearest(
        self, query: Vector, k: int, exclude: Sequence[str] = ()
    ) -> list[tuple[str, float]]:
        """The ``k`` most similar nodes by cosine, ties broken by id (exact scan)."""
        n = len(self._ids)
        if n == 0 or k <= 0:
            return []
        scores = self._rows[:n] @ query
        for node_id in exclude:
            row = self._row.get(node_id)
            if row is not None:
                scores[row] = -np.inf
        take = min(n, k + 16)  # a little slack so ids can break ties at the cut
        top = np.argpartition(-scores, take - 1)[:take] if take < n else np.arange(n)
        ranked = sorted(
            ((self._ids[r], float(scores[r])) for r in top.tolist() if np.isfinite(scores[r])),
            key=lambda hit: (-hit[1], hit[0]),
        )
        return ranked[:k]

    def nearest_sketched(self, query: Vector, k: int, pool: int) -> list[tuple[str, float]]:
        """The ``k`` most similar nodes among the ``pool`` whose sign sketches are closest to
        the query's, by exact cosine (ties by id); :meth:`nearest` when ``pool`` covers all.

        Every row tied with the ``pool``-th sketch distance is rescored too, so the answer
        depends only on the stored vectors (not on their row order) and is the same on every
        replica. Approximate: a neighbour whose sketch is farther than ``pool`` others is
        missed; at a high cosine the sketches agree on almost every bit, so such misses are
        confined to the weakest of the ``k``.
        """
        n = len(self._ids)
        if pool <= 0 or n <= max(pool, k):
            return self.nearest(query, k)
        if k <= 0:
            return []
        sketch = sign_sketch(query)[0]
        distances = np.bitwise_count(self._sketches[0, :n] ^ sketch[0]).astype(np.uint16)
        for word in range(1, len(sketch)):
            distances += np.bitwise_count(self._sketches[word, :n] ^ sketch[word])
        # The distances are small integers: a histogram finds the pool's cut in one pass.
        cut = int(np.searchsorted(np.cumsum(np.bincount(distances)), pool))
        rows = np.flatnonzero(distances <= cut)
        # Row by row (not one BLAS product, whose rounding depends on where a row sits in the
        # block): a pair's cosine is then the same whatever the matrix's row order.
        scores = np.multiply(self._rows[rows], query).sum(axis=1, dtype=np.float32)
        take = min(len(rows), k + 16)
        top = np.argpartition(-scores, take - 1)[:take] if take < len(rows) else None
        picked = rows if top is None else rows[top]
        values = scores if top is None else scores[top]
        ranked = sorted(
            zip((self._ids[r] for r in picked.tolist()), values.tolist(), strict=True),
            key=lambda hit: (-hit[1], hit[0]),
        )
        return ranked[:k]


def _with_capacity(rows: Matrix, used: int) -> Matrix:
    """``rows``' first ``used`` rows in a matrix with room to grow: twice as many rows as
    needed (at least :data:`_MIN_CAPACITY`), ``rows`` itself when it already has room.

    The spare rows come from ``np.zeros`` (calloc: pages the kernel maps only when written), so
    capacity costs address space, not resident memory; only the copy of the used rows is held
    twice, and only while it is made. (Doubling with ``np.concatenate`` and ``np.zeros_like``
    wrote every spare row: at 100k x 384 the first write after a restart peaked at three times
    the matrix and kept twice of it resident.)
    """
    if used < len(rows):
        return rows
    if not COMPACT_MEMORY:  # DECIGRAPH_COMPACT_MEMORY=0: the previous growth, for benchmarks
        return rows if used == len(rows) else np.concatenate([rows, np.zeros_like(rows)])
    capacity = max(_MIN_CAPACITY, 2 * used)
    grown = np.zeros((capacity, rows.shape[1]), dtype=rows.dtype)
    grown[: min(used, len(rows))] = rows[:used]
    return grown
