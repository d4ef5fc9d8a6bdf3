"""The start-up helper process (:mod:`retrieval.embedworker`): its vectors are the server's own,
bit for bit; it exits once the server's model is loaded; if it dies, embedding falls back to
the server's own model (a request never fails because of it)."""

from __future__ import annotations

import time

import numpy as np

from retrieval.embedder import MiniLMEmbedder
from retrieval.embedworker import BootEmbedder

TEXTS = [
    "Use PostgreSQL for the billing ledger",
    "x",
    "why " * 300,
    "Ünïcödé — 日本語 🚀",
    *[f"decision {i} about caching sessions in Redis" for i in range(40)],
]


def test_the_helper_answers_until_the_local_model_is_loaded() -> None:
    loaded: list[bool] = []
    boot = BootEmbedder(MiniLMEmbedder(threads=1), on_local=lambda: loaded.append(True))
    worker = boot.worker
    assert worker is not None
    try:
        from_helper = boot.embed(TEXTS)
        assert boot.served_by_worker == 1
        assert not boot.local.loaded  # nothing loaded here yet
        boot.start_local()
        deadline = time.monotonic() + 300
        while boot.worker is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert boot.worker is None
        assert loaded == [True]
        assert worker.proc.poll() is not None  # told to exit
        here = boot.embed(TEXTS)
        assert boot.served_by_worker == 1
        assert np.array_equal(from_helper, here)
        assert np.array_equal(here, MiniLMEmbedder(threads=1).embed(TEXTS))
    finally:
        boot.close()


def test_a_dead_helper_falls_back_to_the_local_model() -> None:
    boot = BootEmbedder(MiniLMEmbedder(threads=1))
    worker = boot.worker
    assert worker is not None
    try:
        worker.proc.kill()
        worker.proc.wait()
        vectors = boot.embed(["still answered"])
        assert boot.served_by_worker == 0
        assert boot.local.loaded
        assert np.array_equal(vectors, boot.local.embed(["still answered"]))
    finally:
        boot.close()
