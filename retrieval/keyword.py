"""An incremental BM25 index: documents are added, replaced and removed one at a time.

Static BM25 libraries (bm25s, rank-bm25) rebuild their whole matrix to take one new document;
decigraph indexes on every write, so this index keeps a posting dict per term and scores a
query with a few vectorised numpy operations per query term. ``bench/bench_keyword.py``
compares it with bm25s for ranking equality and update/query latency.

Scoring is Okapi BM25 with the Lucene IDF ``log(1 + (N - df + 0.5) / (df + 0.5))``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .text import terms

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_MIN_CAPACITY = 64


@dataclass(frozen=True, slots=True)
class KeywordScores:
    """BM25 scores of one query over every slot (0 where no query term occurs)."""

    scores: FloatArray
    slot_ids: Sequence[str | None]
    slots: dict[str, int]

    def of(self, doc_id: str) -> float:
        slot = self.slots.get(doc_id)
        return 0.0 if slot is None else float(self.scores[slot])

    def of_many(self, doc_ids: Sequence[str]) -> list[float]:
        """:meth:`of` of each id, read from the score array in one step."""
        slots = [self.slots.get(doc_id) for doc_id in doc_ids]
        known = [slot for slot in slots if slot is not None]
        if not known:
            return [0.0] * len(slots)
        values = iter(self.scores[np.asarray(known, dtype=np.int64)].tolist())
        return [0.0 if slot is None else next(values) for slot in slots]

    def max(self) -> float:
        return float(self.scores.max()) if len(self.scores) else 0.0

    def top(self, k: int) -> list[tuple[str, float]]:
        """The ``k`` best documents with a score above 0, by score then id."""
        hits = np.flatnonzero(self.scores > 0)
        if len(hits) > k:
            # A cutoff at the k-th score keeps every document tied with it, so ids break ties.
            kth = np.partition(self.scores[hits], len(hits) - k)[len(hits) - k]
            hits = hits[self.scores[hits] >= kth]
        ranked = sorted(
            ((self.slot_ids[s], float(self.scores[s])) for s in hits.tolist()),
            key=lambda hit: (-hit[1], hit[0]),
        )
        return [(str(doc_id), score) for doc_id, score in ranked[:k]]

    def top_among(self, doc_ids: Iterable[str], k: int) -> list[tuple[str, float]]:
        """:meth:`top` restricted to ``doc_ids`` (scanning only their scores)."""
        slots = np.fromiter((self.slots[d] for d in doc_ids if d in self.slots), dtype=np.int64)
        if not len(slots):
            return []
        values = self.scores[slots]
        keep = values > 0
        slots, values = slots[keep], values[keep]
        if len(slots) > k:
            kth = np.partition(values, len(values) - k)[len(values) - k]
            slots, values = slots[values >= kth], values[values >= kth]
        ranked = sorted(
            (
                (str(self.slot_ids[s]), float(v))
                for s, v in zip(slots.tolist(), values.tolist(), strict=True)
            ),
            key=lambda hit: (-hit[1], hit[0]),
        )
        return ranked[:k]

    def top_accepted(self, k: int, accept: Callable[[str], bool]) -> list[tuple[str, float]]:
        """:meth:`top` restricted to documents ``accept`` passes (widening when filtered out)."""
        fetch = k * 4
        while True:
            ranked = self.top(fetch)
            accepted = first_accepted(ranked, accept, k)
            if len(accepted) >= k or len(ranked) < fetch:
                return accepted[:k]
            fetch *= 8


def first_accepted(
    ranked: Iterable[tuple[str, float]], accept: Callable[[str], bool], k: int
) -> list[tuple[str, float]]:
    """The first ``k`` hits of ``ranked`` that ``accept`` passes, in order (``accept`` is not
    asked about the hits after them: a filter check costs more than the rest of a search)."""
    out: list[tuple[str, float]] = []
    if k <= 0:
        return out
    for hit in ranked:
        if accept(hit[0]):
            out.append(hit)
            if len(out) == k:
                break
    return out


class KeywordIndex:
    """BM25 over the documents' :func:`~retrieval.text.terms`.

    Examples
    --------
    >>> index = KeywordIndex()
    >>> index.upsert("aaaaaaaa", "Use PostgreSQL for the ledger")
    >>> index.upsert("bbbbbbbb", "Cache sessions in Redis")
    >>> index.query("which database holds the ledger?").top(5)[0][0]
    'aaaaaaaa'
    >>> index.remove("aaaaaaaa"); len(index)
    1
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._slots: dict[str, int] = {}
        self._slot_ids: list[str | None] = []
        self._free: list[int] = []
        self._lengths = np.zeros(_MIN_CAPACITY, dtype=np.float64)
        self._total_length = 0.0
        self._postings: dict[str, dict[int, int]] = {}
        self._doc_terms: list[Counter[str] | None] = []
        self._arrays: dict[str, tuple[IntArray, FloatArray]] = {}

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slots

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_arrays"] = {}  # a cache: rebuilt on demand
        return state

    def ids(self) -> set[str]:
        return set(self._slots)

    def terms_of(self, doc_id: str) -> Counter[str]:
        slot = self._slots[doc_id]
        counts = self._doc_terms[slot]
        assert counts is not None
        return counts

    def upsert(self, doc_id: str, text: str) -> None:
        """Index ``text`` under ``doc_id``, replacing what it held before."""
        self.upsert_terms(doc_id, terms(text))

    def upsert_terms(self, doc_id: str, doc_terms: Sequence[str]) -> None:
        if doc_id in self._slots:
            self.remove(doc_id)
        slot = self._take_slot(doc_id)
        counts = Counter(doc_terms)
        self._doc_terms[slot] = counts
        self._lengths[slot] = len(doc_terms)
        self._total_length += len(doc_terms)
        for term, count in counts.items():
            self._postings.setdefault(term, {})[slot] = count
            self._arrays.pop(term, None)

    def remove(self, doc_id: str) -> None:
        """Drop ``doc_id`` (a no-op if it is not indexed)."""
        slot = self._slots.pop(doc_id, None)
        if slot is None:
            return
        counts = self._doc_terms[slot]
        assert counts is not None
        for term in counts:
            postings = self._postings[term]
            del postings[slot]
            if not postings:
                del self._postings[term]
            self._arrays.pop(term, None)
        self._total_length -= self._lengths[slot]
        self._lengths[slot] = 0.0
        self._doc_terms[slot] = None
        self._slot_ids[slot] = None
        self._free.append(slot)

    def query(self, text: str) -> KeywordScores:
        """Score every document against ``text``."""
        return self.query_terms(terms(text))

    def query_terms(self, query_terms: Sequence[str]) -> KeywordScores:
        scores = np.zeros(len(self._slot_ids), dtype=np.float64)
        count = len(self._slots)
        if count:
            avg_length = self._total_length / count or 1.0
            lengths = self._lengths[: len(self._slot_ids)]
            norm = self.k1 * (1.0 - self.b + self.b * lengths / avg_length)
            for term in sorted(set(query_terms)):  # a fixed order makes float sums reproducible
                postings = self._postings.get(term)
                if not postings:
                    continue
                df = len(postings)
                idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
                slots, tf = self._term_arrays(term, postings)
                scores[slots] += idf * tf * (self.k1 + 1.0) / (tf + norm[slots])
        return KeywordScores(scores, self._slot_ids, self._slots)

    def _term_arrays(self, term: str, postings: dict[int, int]) -> tuple[IntArray, FloatArray]:
        cached = self._arrays.get(term)
        if cached is None:
            slots = np.fromiter(postings.keys(), dtype=np.int64, count=len(postings))
            tf = np.fromiter(postings.values(), dtype=np.float64, count=len(postings))
            cached = (slots, tf)
            self._arrays[term] = cached
        return cached

    def _take_slot(self, doc_id: str) -> int:
        if self._free:
            slot = self._free.pop()
            self._slot_ids[slot] = doc_id
        else:
            slot = len(self._slot_ids)
            self._slot_ids.append(doc_id)
            self._doc_terms.append(None)
            if slot >= len(self._lengths):
                self._lengths = np.concatenate([self._lengths, np.zeros(len(self._lengths))])
        self._slots[doc_id] = slot
        return slot
