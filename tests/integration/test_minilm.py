"""The lean runtime (:mod:`retrieval.minilm`) gives the vectors ``sentence_transformers`` gives,
bit for bit: the stored vectors and every ranking stay what they were."""

from __future__ import annotations

import random

import numpy as np
import pytest

from retrieval.embedder import MiniLMEmbedder

WORDS = [
    "use",
    "postgres",
    "kafka",
    "redis",
    "for",
    "the",
    "billing",
    "ledger",
    "cache",
    "sessions",
    "because",
    "latency",
    "compliance",
    "review",
    "team",
    "adopt",
    "replace",
    "legacy",
    "stack",
    "oauth2",
    "warehouse",
    "owner",
    "ticket",
    "decided",
    "migrate",
]


def corpus() -> list[str]:
    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))) for _ in range(150)]
    texts += [
        "  leading and trailing spaces  ",
        "x",
        "Ünïcödé — 日本語のテキスト 🚀 Ærøskøbing",
        "[CLS] [SEP] [MASK] [PAD]",
        "\t\n",
        "why " * 400,  # past max_seq_length: truncated
        " ".join(WORDS * 30),
    ]
    return texts


@pytest.mark.parametrize("batch_size", [32, 7])
def test_lean_vectors_equal_sentence_transformers(batch_size: int) -> None:
    texts = corpus()
    lean = MiniLMEmbedder(batch_size=batch_size, threads=1, runtime="lean")
    library = MiniLMEmbedder(batch_size=batch_size, threads=1, runtime="sentence-transformers")
    rng = random.Random(batch_size)
    for size in (1, 2, 5, batch_size, batch_size + 1, 70, len(texts)):
        batch = rng.sample(texts, min(size, len(texts)))
        a, b = lean.embed(batch), library.embed(batch)
        assert a.dtype == b.dtype == np.float32
        assert np.array_equal(a, b), f"batch of {size}: max diff {np.abs(a - b).max()}"
    assert type(lean._model).__name__ == "LeanMiniLM"
    assert type(library._model).__name__ == "SentenceTransformer"
