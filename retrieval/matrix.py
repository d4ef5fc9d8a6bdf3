"""Every node's embedding in one in-memory float32 matrix.

ChromaDB answers "which items are nearest to this query"; recall also needs the exact cosine
of arbitrary nodes (anchors found by keyword or recency, neighbours reached by traversal), and
the write path needs the nearest existing items of a new one without flushing Chroma first.
One matrix product serves both: at 100k x 384 it is ~150 MB and a full scan takes a few ms.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from graph.compact import ENABLED as COMPACT_MEMORY

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]

_MIN_CAPACITY = 64


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
        self._ids: list[str] = []
        self._row: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_rows"] = self._rows[: max(len(self._ids), 1)]  # a view: not the spare capacity
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._rows = _with_capacity(self._rows, len(self._ids))

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
            self._ids.append(node_id)
            self._row[node_id] = row
        self._rows[row] = vector

    def remove(self, node_id: str) -> None:
        row = self._row.pop(node_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        moved = self._ids.pop()
        if row != last:
            self._rows[row] = self._rows[last]
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
    grown = np.zeros((capacity, rows.shape[1]), dtype=np.float32)
    grown[: min(used, len(rows))] = rows[:used]
    return grown
