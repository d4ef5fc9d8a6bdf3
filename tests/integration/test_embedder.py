"""The real bundled model: offline, lazily imported, normalised, and semantically sensible."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval.embedder import DIMENSION, MiniLMEmbedder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_vectors_are_unit_length_float32(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["Use PostgreSQL for the ledger", "Adopt Kafka for events"])
    assert vectors.shape == (2, DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, DIMENSION)


def test_similar_meanings_are_closer(embedder: MiniLMEmbedder) -> None:
    query, near, far = embedder.embed(
        [
            "which database did we choose for payments",
            "We chose PostgreSQL as the database for the billing ledger",
            "The team lunch moves to Thursdays",
        ]
    )
    assert float(query @ near) > float(query @ far) + 0.2


def test_batches_give_the_same_vectors(embedder: MiniLMEmbedder) -> None:
    texts = [f"decision number {i} about caching" for i in range(40)]
    whole = embedder.embed(texts)
    small = MiniLMEmbedder(batch_size=7).embed(texts)
    np.testing.assert_allclose(whole, small, atol=1e-5)


def test_graph_and_cli_never_import_torch() -> None:
    code = (
        "import sys, graph.store, graph.algorithms.salience, service.cli, retrieval.embedder;"
        "bad = [m for m in ('torch', 'sentence_transformers') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _unshare_works() -> bool:
    try:
        return (
            subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False).returncode
            == 0
        )
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not _unshare_works(), reason="needs `unshare -n` (a private network namespace)")
def test_embeds_with_the_network_unreachable() -> None:
    # A fresh network namespace has no routes: any download attempt would fail at once.
    code = (
        "from pathlib import Path\n"
        "routes = Path('/proc/net/route').read_text().splitlines()[1:]\n"
        "assert not routes, f'network reachable: {routes}'\n"
        "from retrieval.embedder import MiniLMEmbedder\n"
        "v = MiniLMEmbedder().embed(['offline embedding works'])\n"
        "print(v.shape)\n"
    )
    result = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"(1, {DIMENSION})"
