"""Packed integer keys -> slots, held in sorted numpy arrays instead of a dict.

:class:`graph.adjacency.SparseAdjacency` finds an edge's slot from its packed
``(source, target, type)`` key. A ``dict[int, int]`` of 224k edges costs 24 MB at 100k decisions
(its table plus a Python int object per key and per slot); :class:`SlotMap` keeps the keys and
slots in two sorted arrays (12 bytes an edge) and the few keys added since the last merge in a
small dict, merged back once it holds an eighth of the arrays' size. A lookup is a binary search
(about a microsecond), a removal marks its slot free in place; so each operation stays O(log n)
and the merges are amortised O(log n) per insertion.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
SlotArray = npt.NDArray[np.int32]

_GONE = -1  # a removed key's slot, until the next merge drops it
_MERGE_MIN = 4096  # recent keys kept in the dict before a merge is worth its O(n) copy


class SlotMap:
    """A mapping of non-negative int64 keys to non-negative int32 slots.

    Examples
    --------
    >>> m = SlotMap.from_arrays(np.array([30, 10], dtype=np.int64), np.array([0, 1]))
    >>> m.get(10), m.get(20), len(m)
    (1, None, 2)
    >>> m[20] = 2
    >>> m.pop(30), 30 in m, sorted(m.items())
    (0, False, [(10, 1), (20, 2)])
    """

    def __init__(self) -> None:
        self._keys: IntArray = np.zeros(0, dtype=np.int64)
        self._slots: SlotArray = np.zeros(0, dtype=np.int32)
        self._recent: dict[int, int] = {}
        self._live = 0

    @classmethod
    def from_arrays(cls, keys: npt.ArrayLike, slots: npt.ArrayLike) -> SlotMap:
        """A map of ``keys[i] -> slots[i]``; the keys must be distinct.

        Raises
        ------
        ValueError
            When the keys repeat or the arrays differ in length.
        """
        k = np.asarray(keys, dtype=np.int64)
        s = np.asarray(slots, dtype=np.int32)
        if k.shape != s.shape or k.ndim != 1:
            raise ValueError("keys and slots must be one-dimensional and of the same length")
        order = np.argsort(k, kind="stable")
        out = cls()
        out._keys, out._slots = k[order], s[order]
        if len(k) > 1 and bool(np.any(out._keys[1:] == out._keys[:-1])):
            raise ValueError("keys must be distinct")
        out._live = len(k)
        return out

    def _find(self, key: int) -> int:
        """The position of ``key`` in the sorted arrays, or -1."""
        keys = self._keys
        pos = int(np.searchsorted(keys, key))
        return pos if pos < len(keys) and int(keys[pos]) == key else -1

    def get(self, key: int) -> int | None:
        slot = self._recent.get(key)
        if slot is not None:
            return slot
        pos = self._find(key)
        if pos < 0:
            return None
        found = int(self._slots[pos])
        return None if found == _GONE else found

    def __contains__(self, key: int) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return self._live

    def __setitem__(self, key: int, slot: int) -> None:
        pos = self._find(key)
        if pos >= 0:  # held in the arrays (perhaps removed): set it in place
            self._live += int(self._slots[pos]) == _GONE
            self._slots[pos] = slot
            return
        self._live += key not in self._recent
        self._recent[key] = slot
        if len(self._recent) > max(_MERGE_MIN, len(self._keys) >> 3):
            self._merge()

    def pop(self, key: int, default: int | None = None) -> int | None:
        slot = self._recent.pop(key, None)
        if slot is None:
            pos = self._find(key)
            if pos < 0 or int(self._slots[pos]) == _GONE:
                return default
            slot = int(self._slots[pos])
            self._slots[pos] = _GONE
        self._live -= 1
        return slot

    def __delitem__(self, key: int) -> None:
        if self.pop(key) is None:
            raise KeyError(key)

    def items(self) -> list[tuple[int, int]]:
        """Every ``(key, slot)``, in no particular order."""
        kept = self._slots != _GONE
        pairs = list(zip(self._keys[kept].tolist(), self._slots[kept].tolist(), strict=True))
        return pairs + list(self._recent.items())

    def _merge(self) -> None:
        kept = self._slots != _GONE
        count = len(self._recent)
        keys = np.concatenate(
            [self._keys[kept], np.fromiter(self._recent.keys(), dtype=np.int64, count=count)]
        )
        slots = np.concatenate(
            [self._slots[kept], np.fromiter(self._recent.values(), dtype=np.int32, count=count)]
        )
        order = np.argsort(keys, kind="stable")
        self._keys, self._slots = keys[order], slots[order]
        self._recent = {}
