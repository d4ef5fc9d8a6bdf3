"""The incremental BM25 index against a from-scratch reference, and the term pipeline."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.keyword import KeywordIndex
from retrieval.text import STOPWORDS, terms

WORDS = [
    "cache",
    "redis",
    "ledger",
    "postgres",
    "queue",
    "kafka",
    "retry",
    "timeout",
    "billing",
    "auth",
    "token",
    "shard",
]


def reference_bm25(
    docs: dict[str, list[str]], query: list[str], k1: float = 1.5, b: float = 0.75
) -> dict[str, float]:
    n = len(docs)
    avg = sum(len(d) for d in docs.values()) / n
    df = Counter(t for d in docs.values() for t in set(d))
    out = {}
    for doc_id, doc in docs.items():
        tf = Counter(doc)
        score = 0.0
        for term in sorted(set(query)):
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(doc) / avg))
        out[doc_id] = score
    return out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The caches were invalidated", ["cach", "invalid"]),
        ("Use PostgreSQL, not MySQL!", ["use", "postgresql", "mysql"]),
        ("snake_case and e-mail", ["snake", "case", "e", "mail"]),
        ("Café déjà vu", ["café", "déjà", "vu"]),
        ("", []),
    ],
)
def test_terms(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_stopwords_are_dropped_before_stemming() -> None:
    assert not set(terms(" ".join(sorted(STOPWORDS))))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 9), st.lists(st.sampled_from(WORDS), min_size=0, max_size=8)),
        min_size=1,
        max_size=30,
    ),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
)
def test_incremental_index_equals_reference(
    ops: list[tuple[int, list[str]]], query: list[str]
) -> None:
    index = KeywordIndex()
    docs: dict[str, list[str]] = {}
    for key, words in ops:
        doc_id = f"{key:08x}"
        if words:
            index.upsert_terms(doc_id, words)
            docs[doc_id] = words
        else:
            index.remove(doc_id)
            docs.pop(doc_id, None)
    assert index.ids() == set(docs)
    if not docs:
        assert index.query_terms(query).top(5) == []
        return
    expected = reference_bm25(docs, query)
    scores = index.query_terms(query)
    for doc_id, value in expected.items():
        assert scores.of(doc_id) == pytest.approx(value, rel=1e-9, abs=1e-12)
    ranked = sorted(((d, s) for d, s in expected.items() if s > 0), key=lambda x: (-x[1], x[0]))
    assert [d for d, _ in scores.top(len(docs))] == [d for d, _ in ranked]


def test_ties_break_by_id_and_top_respects_k() -> None:
    index = KeywordIndex()
    for doc_id in ("cccccccc", "aaaaaaaa", "bbbbbbbb"):
        index.upsert(doc_id, "retry the billing queue")
    index.upsert("dddddddd", "unrelated words entirely")
    top = index.query("billing retries").top(2)
    assert [d for d, _ in top] == ["aaaaaaaa", "bbbbbbbb"]
    assert top[0][1] == top[1][1] > 0
    assert index.query("nothing matches here").top(3) == []


def test_update_replaces_old_terms_and_slots_are_reused() -> None:
    index = KeywordIndex()
    index.upsert("aaaaaaaa", "kafka partitions")
    index.upsert("aaaaaaaa", "redis cluster")
    assert index.query("kafka").top(1) == []
    assert index.query("redis").top(1)[0][0] == "aaaaaaaa"
    index.remove("aaaaaaaa")
    index.remove("aaaaaaaa")  # removing twice is harmless
    index.upsert("bbbbbbbb", "redis again")
    assert len(index) == 1
    assert index.query("redis").top(5)[0][0] == "bbbbbbbb"


def test_scores_do_not_depend_on_insertion_order() -> None:
    rng = random.Random(3)
    docs = {f"{i:08x}": " ".join(rng.choices(WORDS, k=6)) for i in range(40)}
    first, second = KeywordIndex(), KeywordIndex()
    for doc_id, text in docs.items():
        first.upsert(doc_id, text)
    for doc_id in reversed(list(docs)):
        second.upsert(doc_id, docs[doc_id])
    for query in ("cache ledger", "auth token shard", "retry"):
        assert first.query(query).top(10) == second.query(query).top(10)
