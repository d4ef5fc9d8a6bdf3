"""In-memory lookups the write path and recall need: who mentions an entity, what happened when.

Both are derived from node attributes only, so rebuilding them from the graph gives exactly the
state that incremental updates reach, whatever order the events came in.
"""

from __future__ import annotations

import bisect
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from graph.timeutil import parse_ts

#: A node's place in time: (when it happened, when it was recorded, id) — unique and total.
TimeKey = tuple[str, str, str]


class EntityIndex:
    """Entity key -> the nodes that mention it, ordered by :data:`TimeKey`."""

    def __init__(self) -> None:
        self._members: dict[str, list[TimeKey]] = {}
        self._keys_of: dict[str, tuple[tuple[str, ...], TimeKey]] = {}

    def __len__(self) -> int:
        return len(self._keys_of)

    def ids(self) -> set[str]:
        return set(self._keys_of)

    def keys_of(self, node_id: str) -> tuple[str, ...]:
        entry = self._keys_of.get(node_id)
        return () if entry is None else entry[0]

    def put(self, node_id: str, keys: Iterable[str], when: TimeKey) -> None:
        self.remove(node_id)
        # Interned: the same key held by many nodes is one string, not one per node (the
        # statement index's ~11 keys per decision cost ~66 MB at 100k as separate copies).
        unique = tuple(dict.fromkeys(map(sys.intern, keys)))
        self._keys_of[node_id] = (unique, when)
        for key in unique:
            bisect.insort(self._members.setdefault(key, []), when)

    def remove(self, node_id: str) -> None:
        entry = self._keys_of.pop(node_id, None)
        if entry is None:
            return
        keys, when = entry
        for key in keys:
            members = self._members[key]
            del members[bisect.bisect_left(members, when)]
            if not members:
                del self._members[key]

    def doc_freq(self, key: str) -> int:
        return len(self._members.get(key, ()))

    def idf(self, key: str) -> float:
        """Smoothed inverse document frequency of ``key`` (0 for an unknown key)."""
        df = self.doc_freq(key)
        if df == 0:
            return 0.0
        total = len(self._keys_of)
        return math.log(1.0 + (total - df + 0.5) / (df + 0.5))

    def latest(self, key: str, limit: int, before: TimeKey | None = None) -> list[str]:
        """Up to ``limit`` ids mentioning ``key``, latest first (only those before ``before``)."""
        members = self._members.get(key, [])
        end = len(members) if before is None else bisect.bisect_left(members, before)
        return [members[i][2] for i in range(end - 1, max(-1, end - 1 - limit), -1)]


@dataclass(frozen=True, slots=True)
class Neighbour:
    id: str
    hours: float


class Timeline:
    """Every node by :data:`TimeKey`, globally and per source."""

    def __init__(self) -> None:
        self._all: list[TimeKey] = []
        self._by_source: dict[str, list[TimeKey]] = {}
        self._entry: dict[str, tuple[TimeKey, str | None]] = {}

    def __len__(self) -> int:
        return len(self._entry)

    def ids(self) -> set[str]:
        return set(self._entry)

    def put(self, node_id: str, when: TimeKey, source: str | None) -> None:
        self.remove(node_id)
        self._entry[node_id] = (when, source)
        bisect.insort(self._all, when)
        if source is not None:
            bisect.insort(self._by_source.setdefault(source, []), when)

    def remove(self, node_id: str) -> None:
        entry = self._entry.pop(node_id, None)
        if entry is None:
            return
        when, source = entry
        del self._all[bisect.bisect_left(self._all, when)]
        if source is not None:
            members = self._by_source[source]
            del members[bisect.bisect_left(members, when)]
            if not members:
                del self._by_source[source]

    def previous_from_source(self, source: str, when: TimeKey) -> str | None:
        """The latest item from ``source`` that comes before ``when``."""
        members = self._by_source.get(source, [])
        index = bisect.bisect_left(members, when)
        return members[index - 1][2] if index else None

    def previous(
        self,
        when: TimeKey,
        window_hours: float,
        limit: int,
        accept: Callable[[str], bool] | None = None,
        scan_limit: int = 256,
    ) -> list[Neighbour]:
        """Up to ``limit`` items just before ``when`` (in timeline order) and within
        ``window_hours`` of it, latest first; only those ``accept`` passes. At most
        ``scan_limit`` entries are inspected, which bounds the cost beside busy streams."""
        centre = parse_ts(when[0])
        index = bisect.bisect_left(self._all, when)
        found: list[Neighbour] = []
        for position in range(index - 1, max(-1, index - 1 - scan_limit), -1):
            other = self._all[position]
            if other[2] == when[2]:
                continue
            hours = abs((centre - parse_ts(other[0])).total_seconds()) / 3600.0
            if hours > window_hours or len(found) == limit:
                break
            if accept is None or accept(other[2]):
                found.append(Neighbour(other[2], hours))
        return found

    def latest(self, limit: int, accept: Callable[[str], bool] | None = None) -> list[str]:
        """The ``limit`` most recent ids (optionally only those ``accept`` passes)."""
        out: list[str] = []
        for position in range(len(self._all) - 1, -1, -1):
            node_id = self._all[position][2]
            if accept is None or accept(node_id):
                out.append(node_id)
                if len(out) == limit:
                    break
        return out

    def time_of(self, node_id: str) -> datetime | None:
        entry = self._entry.get(node_id)
        return None if entry is None else parse_ts(entry[0][0])


#: Node attributes the facet index keeps inverted sets for (the selective, exact-match filters).
FACET_FIELDS = ("kind", "category", "stakes", "project")


class FacetIndex:
    """Field -> value -> ids, so a filter's candidate set is a few set operations.

    A node's values are kept as one shared tuple of ``(field, value)`` pairs per distinct
    combination: a store has a few hundred combinations of kind, category, stakes and project,
    so 100k nodes hold pointers to them instead of 100k dicts (28 MB -> 6 MB at 100k,
    ``bench/bench_memory.py --probe``). A snapshot pickled with per-node dicts is converted as
    it loads (:meth:`__setstate__`).
    """

    def __init__(self) -> None:
        self._sets: dict[str, dict[str, set[str]]] = {f: {} for f in FACET_FIELDS}
        self._values: dict[str, tuple[tuple[str, str], ...]] = {}
        self._combos: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        combos = self.__dict__.setdefault("_combos", {})
        values = self._values
        for node_id, held in values.items():
            if isinstance(held, dict):  # a snapshot from before the shared combinations
                values[node_id] = self._shared(tuple(held.items()))
            else:
                combos.setdefault(held, held)

    def __len__(self) -> int:
        return len(self._values)

    def ids(self) -> set[str]:
        return set(self._values)

    def values_of(self, node_id: str) -> dict[str, str]:
        """The facet values indexed for ``node_id`` (empty when it is not indexed)."""
        return dict(self._values.get(node_id, ()))

    def _shared(self, pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return self._combos.setdefault(pairs, pairs)

    def put(self, node_id: str, values: dict[str, str]) -> None:
        self.remove(node_id)
        self._values[node_id] = self._shared(tuple(values.items()))
        for field, value in values.items():
            self._sets[field].setdefault(value, set()).add(node_id)

    def remove(self, node_id: str) -> None:
        for field, value in self._values.pop(node_id, ()):
            members = self._sets[field][value]
            members.discard(node_id)
            if not members:
                del self._sets[field][value]

    def candidates(self, wanted: dict[str, list[str]]) -> set[str] | None:
        """Ids whose every named field holds one of the wanted values; ``None``: no constraint."""
        result: set[str] | None = None
        for field, values in sorted(wanted.items(), key=lambda kv: kv[0]):
            union: set[str] = set()
            for value in values:
                union |= self._sets[field].get(value, set())
            result = union if result is None else result & union
            if not result:
                return set()
        return result
