"""The compact keyword index against the dict-per-term layout it replaced (bit-for-bit), and its
memory per posting."""

from __future__ import annotations

import gc
import math
import pickle
import random
import tracemalloc
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from retrieval.keyword import KeywordIndex, KeywordScores
from retrieval.text import terms


class DictLayoutIndex:
    """The previous layout (a posting dict per term, a Counter per document), kept as the
    oracle: the compact index must give the very same floats."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.slots: dict[str, int] = {}
        self.slot_ids: list[str | None] = []
        self.free: list[int] = []
        self.lengths = np.zeros(64, dtype=np.float64)
        self.total_length = 0.0
        self.postings: dict[str, dict[int, int]] = {}
        self.doc_terms: list[Counter[str] | None] = []

    def upsert(self, doc_id: str, text: str) -> None:
        self.upsert_terms(doc_id, terms(text))

    def upsert_terms(self, doc_id: str, doc_terms: Sequence[str]) -> None:
        self.remove(doc_id)
        if self.free:
            slot = self.free.pop()
            self.slot_ids[slot] = doc_id
        else:
            slot = len(self.slot_ids)
            self.slot_ids.append(doc_id)
            self.doc_terms.append(None)
            if slot >= len(self.lengths):
                self.lengths = np.concatenate([self.lengths, np.zeros(len(self.lengths))])
        self.slots[doc_id] = slot
        counts = Counter(doc_terms)
        self.doc_terms[slot] = counts
        self.lengths[slot] = len(doc_terms)
        self.total_length += len(doc_terms)
        for term, count in counts.items():
            self.postings.setdefault(term, {})[slot] = count

    def remove(self, doc_id: str) -> None:
        slot = self.slots.pop(doc_id, None)
        if slot is None:
            return
        counts = self.doc_terms[slot]
        assert counts is not None
        for term in counts:
            del self.postings[term][slot]
            if not self.postings[term]:
                del self.postings[term]
        self.total_length -= self.lengths[slot]
        self.lengths[slot] = 0.0
        self.doc_terms[slot] = None
        self.slot_ids[slot] = None
        self.free.append(slot)

    def query(self, text: str) -> KeywordScores:
        return self.query_terms(terms(text))

    def query_terms(self, query_terms: Sequence[str]) -> KeywordScores:
        scores = np.zeros(len(self.slot_ids), dtype=np.float64)
        count = len(self.slots)
        if count:
            avg_length = self.total_length / count or 1.0
            lengths = self.lengths[: len(self.slot_ids)]
            norm = self.k1 * (1.0 - self.b + self.b * lengths / avg_length)
            for term in sorted(set(query_terms)):
                postings = self.postings.get(term)
                if not postings:
                    continue
                df = len(postings)
                idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
                slots = np.fromiter(postings.keys(), dtype=np.int64, count=df)
                tf = np.fromiter(postings.values(), dtype=np.float64, count=df)
                scores[slots] += idf * tf * (self.k1 + 1.0) / (tf + norm[slots])
        return KeywordScores(scores, self.slot_ids, self.slots)

    def terms_of(self, doc_id: str) -> Counter[str]:
        counts = self.doc_terms[self.slots[doc_id]]
        assert counts is not None
        return counts


DOMAINS = {
    "storage": (
        ["PostgreSQL", "the ledger database", "SQLite", "Cassandra", "the read replicas"],
        ["stores", "shards", "replicates", "vacuums", "partitions", "indexes"],
        ["billing events", "audit trails", "user sessions", "invoices by tenant", "snapshots"],
        ["to keep writes durable", "because joins were slow", "after the outage in March"],
    ),
    "infra": (
        ["Kubernetes", "the Nginx ingress", "Terraform", "our CI runners", "the Redis cache"],
        ["schedules", "caches", "routes", "autoscales", "retries", "throttles"],
        ["deploy pipelines", "TLS certificates", "canary releases", "cron jobs", "hot keys"],
        ["so rollbacks take seconds", "since latency doubled", "to cut cloud costs by half"],
    ),
    "security": (
        ["OAuth", "the auth service", "Vault", "the WAF", "SSO with Okta"],
        ["rotates", "encrypts", "revokes", "audits", "signs", "validates"],
        ["API tokens", "secrets", "session cookies", "service accounts", "JWT claims"],
        ["after the pen test", "to pass the SOC2 audit", "because keys leaked in logs"],
    ),
    "product": (
        ["the mobile app", "the React frontend", "search ranking", "onboarding", "GraphQL"],
        ["renders", "paginates", "personalises", "localises", "batches", "prefetches"],
        ["dashboards", "notifications", "feature flags", "checkout pages", "search results"],
        ["to lift conversion", "since users churned at signup", "for accessibility reviews"],
    ),
    "ml": (
        ["the embedding model", "MiniLM", "the ranker", "our feature store", "PyTorch jobs"],
        ["embeds", "retrains", "quantises", "evaluates", "distils", "caches"],
        ["query vectors", "training data", "click logs", "nightly batches", "eval sets"],
        ["to halve inference latency", "because recall dropped", "to fit on one GPU"],
    ),
}
EXTRA = ["cache", "cache", "retry", "latency", "ledger", "token", "shard", "queue", "kafka"]


def decision_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        subjects, verbs, objects, reasons = DOMAINS[rng.choice(sorted(DOMAINS))]
        parts.append(
            f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} "
            f"{rng.choice(reasons)}."
        )
    parts.append(" ".join(rng.choices(EXTRA, k=rng.randint(0, 6))))  # repeated terms: tf > 1
    if rng.random() < 0.1:
        parts.append(f"ticket-{rng.randint(1, 400)} owner{rng.randint(1, 60)}")  # rare terms
    if rng.random() < 0.03:
        return ""  # a document without terms still counts in N and the average length
    return " ".join(parts)


def query_texts(rng: random.Random, count: int) -> list[str]:
    out = ["", "nothing matches zzzz", "cache cache retry", "ticket-7 owner3 ledger"]
    while len(out) < count:
        out.append(" ".join(rng.choice(decision_text(rng).split() or ["x"]) for _ in range(3)))
    return out


def assert_same(new: KeywordIndex, old: DictLayoutIndex, queries: list[str]) -> None:
    assert len(new) == len(old.slots)
    assert new.ids() == set(old.slots)
    for doc_id in old.slots:
        assert doc_id in new
        assert list(new.terms_of(doc_id).items()) == list(old.terms_of(doc_id).items())
    for query in queries:
        got, want = new.query(query), old.query(query)
        assert got.scores.tobytes() == want.scores.tobytes(), query  # ==, bit for bit
        assert got.top(10) == want.top(10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_updates_match_the_dict_layout_bit_for_bit(seed: int) -> None:
    rng = random.Random(seed)
    new, old = KeywordIndex(), DictLayoutIndex()
    queries = query_texts(rng, 60)
    ids = [f"{i:08x}" for i in range(300)]
    for step in range(1500):
        doc_id = rng.choice(ids[: 40 + step // 5])  # a growing pool: inserts, then churn
        action = rng.random()
        if action < 0.15:
            new.remove(doc_id)
            old.remove(doc_id)
        else:  # an insert, or a replacement when the id is indexed already
            text = decision_text(rng)
            new.upsert(doc_id, text)
            old.upsert(doc_id, text)
        if step % 500 == 499:
            assert_same(new, old, queries)
    assert_same(new, old, queries)
    restored = pickle.loads(pickle.dumps(new, protocol=pickle.HIGHEST_PROTOCOL))
    assert_same(restored, old, queries)
    for doc_id in ids[:50]:  # the restored arrays still grow and shrink
        restored.remove(doc_id)
        old.remove(doc_id)
        text = decision_text(rng)
        restored.upsert(doc_id, text)
        old.upsert(doc_id, text)
    assert_same(restored, old, queries)


def test_every_write_reaches_the_next_query() -> None:
    """The length normalisation is cached between writes: each kind of write must drop it."""
    rng = random.Random(7)
    new, old = KeywordIndex(), DictLayoutIndex()
    queries = query_texts(rng, 6)
    ids = [f"{i:08x}" for i in range(25)]
    for step in range(300):
        doc_id = rng.choice(ids)
        if step % 4 == 3:
            new.remove(doc_id)
            old.remove(doc_id)
        else:
            text = decision_text(rng)
            new.upsert(doc_id, text)
            old.upsert(doc_id, text)
        query = queries[step % len(queries)]
        assert new.query(query).scores.tobytes() == old.query(query).scores.tobytes()
    new.k1 = old.k1 = 1.2  # tuning after a query
    new.b = old.b = 0.5
    assert_same(new, old, queries)


def test_large_term_frequencies_widen_the_frequency_array() -> None:
    new, old = KeywordIndex(), DictLayoutIndex()
    docs = {
        "aaaaaaaa": ["cach"] * 3 + ["redi"],
        "bbbbbbbb": ["cach"] * 300 + ["ledger"] * 2,  # past uint8
        "cccccccc": ["cach"] * 70_000,  # past uint16
        "dddddddd": ["ledger", "cach"],
    }
    for doc_id, doc_terms in docs.items():
        new.upsert_terms(doc_id, doc_terms)
        old.upsert_terms(doc_id, doc_terms)
    assert new.terms_of("cccccccc") == Counter({"cach": 70_000})
    assert_same(new, old, ["cache", "cache ledger", "redis"])
    new.remove("bbbbbbbb")
    old.remove("bbbbbbbb")
    new.upsert_terms("bbbbbbbb", ["ledger"] * 1000)  # a reused slot, inserted mid-array
    old.upsert_terms("bbbbbbbb", ["ledger"] * 1000)
    assert_same(new, old, ["cache", "ledger", "cache ledger"])
    new.upsert_terms("dddddddd", ["ledger", "cach", "redi"] * 400)  # kept terms, wider counts
    old.upsert_terms("dddddddd", ["ledger", "cach", "redi"] * 400)
    assert_same(new, old, ["cache", "ledger", "redis", "cache ledger"])


def test_term_ids_are_recycled_safely() -> None:
    new, old = KeywordIndex(), DictLayoutIndex()
    for index in (new, old):
        index.upsert_terms("aaaaaaaa", ["kafka", "queue"])
        index.upsert_terms("bbbbbbbb", ["redis", "queue"])
        index.remove("aaaaaaaa")  # frees the id of "kafka" (no document holds it)
        index.upsert_terms("cccccccc", ["shard", "token", "queue"])  # takes the freed id
        index.upsert_terms("bbbbbbbb", ["redis", "redis", "ledger"])  # frees "queue"? no: c
    assert new.terms_of("cccccccc") == Counter({"shard": 1, "token": 1, "queue": 1})
    assert_same(new, old, ["kafka", "queue", "shard token", "redis ledger"])


def test_records_hold_term_ids_past_uint16() -> None:
    new, old = KeywordIndex(), DictLayoutIndex()
    for i in range(70):
        doc_terms = [f"t{i}x{j}" for j in range(1000)] + ["common"] * (i % 3 + 1)
        new.upsert_terms(f"{i:08x}", doc_terms)
        old.upsert_terms(f"{i:08x}", doc_terms)
    assert len(new._terms) > 1 << 16
    new.remove("00000001")
    old.remove("00000001")
    assert_same(new, old, ["common", "t69x999", "t0x5 common", "t1x3"])


def test_a_query_leaves_no_buffer_export_behind() -> None:
    index = KeywordIndex()
    index.upsert("aaaaaaaa", "retry the billing queue")
    held = index.query("billing queue")  # kept alive: it must not pin the posting arrays
    index.upsert("bbbbbbbb", "billing retries again")  # appends to the same terms
    assert held.top(1)[0][0] == "aaaaaaaa"
    index.remove("aaaaaaaa")  # and deletes from them
    index.upsert("aaaaaaaa", "queue billing")  # inserts into the freed slot
    assert index.query("billing queue").top(5)[0][0] == "aaaaaaaa"


def test_a_snapshot_in_the_older_layout_is_refused() -> None:
    index = KeywordIndex()
    index.upsert("aaaaaaaa", "kafka partitions")
    state = index.__getstate__()
    state["_postings"] = {}
    del state["_term_ids"]
    with pytest.raises(ValueError, match="older layout"):
        KeywordIndex.__new__(KeywordIndex).__setstate__(state)


def test_memory_per_posting_stays_compact() -> None:
    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(3000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]  # Zipf-like, as text is
    docs = [
        (f"{i:08x}", rng.choices(vocabulary, weights, k=rng.randint(8, 30))) for i in range(20_000)
    ]
    postings = sum(len(set(doc_terms)) for _, doc_terms in docs)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = KeywordIndex()
        for doc_id, doc_terms in docs:
            index.upsert_terms(doc_id, doc_terms)
        size = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # The whole index (slot maps and lengths included) takes ~16.5 bytes per posting; the dict
    # layout took ~76.
    assert size / postings < 24, size / postings
