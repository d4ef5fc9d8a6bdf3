"""An incremental BM25 index: documents are added, replaced and removed one at a time.

Static BM25 libraries (bm25s, rank-bm25) rebuild their whole matrix to take one new document;
decigraph indexes on every write, so this index keeps a posting list per term and scores a
query with a few vectorised numpy operations per query term. ``bench/bench_keyword.py``
compares it with bm25s for ranking equality and update/query latency.

The layout is compact: 16 bytes per posting for the whole index at 100k documents (10.6 for
the postings and document records), was 73 with a dict per term and a ``Counter`` per document.
Each term has an id and two typed arrays, its documents' slots (``int32``, kept sorted, so a
removal is a bisection and a shift) and their frequencies (``uint8``, widened to ``uint16`` or
``uint32`` only for a term that needs it); each document keeps its term ids packed in one
``bytes`` record, for :meth:`KeywordIndex.remove` and :meth:`KeywordIndex.terms_of` (which
reads the counts back from the postings). A query copies a term's arrays out through
``np.frombuffer`` (``int64`` slots, ``float64`` frequencies) and evaluates the same float
operations in the same order as the dict layout did, so the scores are identical bit for bit
(``tests/unit/test_keyword_layout.py`` keeps that layout as the oracle). The per-slot length
normalisation is cached until the next write.

Scoring is Okapi BM25 with the Lucene IDF ``log(1 + (N - df + 0.5) / (df + 0.5))``.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
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
    >>> index.terms_of("bbbbbbbb")
    Counter({'cach': 1, 'session': 1, 'redi': 1})
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
        # Terms by id: an id is recycled only once no document holds its term any more.
        self._term_ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._free_terms: list[int] = []
        # Per term id: the slots holding it (sorted) and, aligned, its frequency in each.
        self._posting_slots: list[array[int]] = []
        self._posting_tfs: list[array[int]] = []
        # Per slot: the document's term ids, packed (see _pack); its counts are in the postings.
        self._doc_terms: list[bytes | None] = []
        # (k1, b, each slot's k1 * (1 - b + b * length / average length)) between two writes.
        self._norm: tuple[float, float, FloatArray] | None = None

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slots

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_norm"] = None  # a cache: rebuilt by the next query
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        if "_term_ids" not in state:  # an older layout: the snapshot is rebuilt instead
            raise ValueError("keyword index pickled in an older layout")
        self.__dict__.update(state)

    def ids(self) -> set[str]:
        return set(self._slots)

    def terms_of(self, doc_id: str) -> Counter[str]:
        """The document's term counts, in the order the terms first occur in it."""
        slot = self._slots[doc_id]
        record = self._doc_terms[slot]
        assert record is not None
        counts: Counter[str] = Counter()
        for term_id in _unpack(record):
            slots = self._posting_slots[term_id]
            counts[self._terms[term_id]] = self._posting_tfs[term_id][bisect_left(slots, slot)]
        return counts

    def idf(self, term: str) -> float:
        """BM25's inverse document frequency of ``term`` (a term no document holds gets the
        highest value the index can give)."""
        count = len(self._slots)
        term_id = self._term_ids.get(term)
        df = len(self._posting_slots[term_id]) if term_id is not None else 0
        return math.log(1.0 + (count - df + 0.5) / (df + 0.5))

    def upsert(self, doc_id: str, text: str) -> None:
        """Index ``text`` under ``doc_id``, replacing what it held before."""
        self.upsert_terms(doc_id, terms(text))

    def upsert_terms(self, doc_id: str, doc_terms: Sequence[str]) -> None:
        self._norm = None
        counts = Counter(doc_terms)
        slot = self._slots.get(doc_id)
        if slot is None:
            slot = self._take_slot(doc_id)
            kept: set[int] = set()
        else:  # a replacement keeps its slot (a remove then an insert would take it back too)
            kept = self._release(slot, counts)
        self._lengths[slot] = len(doc_terms)
        self._total_length += len(doc_terms)
        term_ids = self._term_ids
        posting_slots, posting_tfs = self._posting_slots, self._posting_tfs
        ids: list[int] = []
        for term, count in counts.items():
            term_id = term_ids.get(term)
            if term_id is None:
                term_id = self._new_term(term)
            slots, tfs = posting_slots[term_id], posting_tfs[term_id]
            if count >= 1 << (8 * tfs.itemsize):  # too large for the term's frequency type
                tfs = posting_tfs[term_id] = _widened(tfs, count)
            if term_id in kept:  # the slot is in the postings already: a new frequency
                tfs[bisect_left(slots, slot)] = count
            else:
                if not slots or slots[-1] < slot:  # a new slot: the common case
                    position = len(slots)
                    slots.append(slot)
                else:  # a reused slot
                    position = bisect_left(slots, slot)
                    slots.insert(position, slot)
                tfs.insert(position, count)
            ids.append(term_id)
        self._doc_terms[slot] = _pack(ids)

    def remove(self, doc_id: str) -> None:
        """Drop ``doc_id`` (a no-op if it is not indexed)."""
        slot = self._slots.pop(doc_id, None)
        if slot is None:
            return
        self._norm = None
        self._release(slot)
        self._lengths[slot] = 0.0
        self._doc_terms[slot] = None
        self._slot_ids[slot] = None
        self._free.append(slot)

    def _release(self, slot: int, keep: Counter[str] | None = None) -> set[int]:
        """Take ``slot`` out of the postings of its terms, except those in ``keep``, and out of
        the total length; the ids of the terms it stays in."""
        record = self._doc_terms[slot]
        assert record is not None
        kept: set[int] = set()
        for term_id in _unpack(record):
            if keep and self._terms[term_id] in keep:
                kept.add(term_id)
                continue
            slots = self._posting_slots[term_id]
            position = bisect_left(slots, slot)
            del slots[position]
            del self._posting_tfs[term_id][position]
            if not slots:
                self._drop_term(term_id)
        self._total_length -= self._lengths[slot]
        return kept

    def query(self, text: str) -> KeywordScores:
        """Score every document against ``text``."""
        return self.query_terms(terms(text))

    def query_terms(self, query_terms: Sequence[str]) -> KeywordScores:
        scores = np.zeros(len(self._slot_ids), dtype=np.float64)
        count = len(self._slots)
        if count:
            norm = self._normalisation(count)
            saturation = self.k1 + 1.0
            for term in sorted(set(query_terms)):  # a fixed order makes float sums reproducible
                term_id = self._term_ids.get(term)
                if term_id is None:
                    continue
                df = len(self._posting_slots[term_id])
                idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
                slots, tf = self._term_arrays(term_id)
                # idf * tf * (k1 + 1) / (tf + norm[slots]), in place on the fresh copies: the
                # same IEEE operations on the same operands (+ and * commute exactly).
                denominator = norm[slots]
                denominator += tf
                tf *= idf
                tf *= saturation
                tf /= denominator
                scores[slots] += tf
        return KeywordScores(scores, self._slot_ids, self._slots)

    def _normalisation(self, count: int) -> FloatArray:
        """Each slot's ``k1 * (1 - b + b * length / avg_length)``, computed once per write (half
        of a query's time at 100k documents), read-only."""
        cached = self._norm
        if cached is not None and cached[:2] == (self.k1, self.b):
            return cached[2]
        avg_length = self._total_length / count or 1.0
        norm = self.b * self._lengths[: len(self._slot_ids)]
        norm /= avg_length  # in place: the same operations as the expression, on one array
        norm += 1.0 - self.b
        norm *= self.k1
        norm.flags.writeable = False
        self._norm = (self.k1, self.b, norm)
        return norm

    def _term_arrays(self, term_id: int) -> tuple[IntArray, FloatArray]:
        """Copies of a term's postings as numpy arrays (no view outlives this call: an array
        with a live buffer export refuses to grow)."""
        held_slots, held_tfs = self._posting_slots[term_id], self._posting_tfs[term_id]
        slots = np.frombuffer(held_slots, dtype=held_slots.typecode).astype(np.int64)
        tf = np.frombuffer(held_tfs, dtype=held_tfs.typecode).astype(np.float64)
        return slots, tf

    def _new_term(self, term: str) -> int:
        if self._free_terms:
            term_id = self._free_terms.pop()
            self._terms[term_id] = term
        else:
            term_id = len(self._terms)
            self._terms.append(term)
            self._posting_slots.append(array("i"))
            self._posting_tfs.append(array("B"))
        self._term_ids[term] = term_id
        return term_id

    def _drop_term(self, term_id: int) -> None:
        """Free the id of a term no document holds (no record refers to it any more)."""
        del self._term_ids[self._terms[term_id]]
        self._terms[term_id] = ""
        self._posting_slots[term_id] = array("i")
        self._posting_tfs[term_id] = array("B")
        self._free_terms.append(term_id)

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


def _pack(ids: list[int]) -> bytes:
    """A document's term ids (in the order its terms first occur) as a kind byte, 0 for
    ``uint16`` ids or 1 for ``uint32``, then the ids."""
    try:
        return b"\x00" + array("H", ids).tobytes()
    except OverflowError:
        return b"\x01" + array("I", ids).tobytes()


def _unpack(record: bytes) -> list[int]:
    return array("I" if record[0] else "H", record[1:]).tolist()


def _widened(tfs: array[int], count: int) -> array[int]:
    """``tfs`` in a typecode wide enough for ``count`` too (``uint16``, else ``uint32``)."""
    return array("H" if count < 1 << 16 else "I", tfs)
