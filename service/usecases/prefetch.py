"""Embedding one batch ahead: the model works on batch ``k + 1`` while batch ``k`` is written.

The forward pass runs in torch's kernels, which release the GIL, so a worker thread embedding
the next batch overlaps with the writer appending and indexing the current one (on two cores,
real overlap: embedding on one, gate + append + index on the other). The worker only embeds:
it reads no graph and takes no lock, so the writes, their order and their outcomes are the
caller's, exactly as without it. ``DECIGRAPH_IMPORT_PIPELINE=0`` turns the overlap off (each
batch is then embedded in the caller's thread when asked for: the same texts, the same batches,
the same vectors), which is how the import benchmark measures what it buys.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Generic, Self, TypeVar

V = TypeVar("V")

PIPELINE_ENV = "DECIGRAPH_IMPORT_PIPELINE"


def pipeline_enabled() -> bool:
    """Whether imports embed ahead (``DECIGRAPH_IMPORT_PIPELINE``, on unless ``0``/``off``)."""
    return os.environ.get(PIPELINE_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


class Pending(Generic[V]):
    """The vectors of one batch: computed ahead in the worker, or on demand in the caller."""

    def __init__(
        self,
        embed: Callable[[Sequence[str]], list[V]],
        texts: list[str],
        future: Future[list[V]] | None,
    ) -> None:
        self._embed = embed
        self.texts = texts
        self._future = future

    def result(self) -> list[V]:
        if self._future is not None:
            return self._future.result()  # re-raises the worker's exception here
        return self._embed(self.texts) if self.texts else []

    def cancel(self) -> None:
        if self._future is not None:
            self._future.cancel()


class EmbedAhead(Generic[V]):
    """Submit batches of texts to embed; each :meth:`submit` returns a :class:`Pending`.

    Used as a context manager: leaving it waits for (or cancels) what is still queued, so no
    worker outlives the import, whatever ends it (an abort, an exception).
    """

    def __init__(self, embed: Callable[[Sequence[str]], list[V]], enabled: bool = True) -> None:
        self._embed = embed
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="embed-ahead") if enabled else None

    def submit(self, texts: list[str]) -> Pending[V]:
        if self._pool is None or not texts:
            return Pending(self._embed, texts, None)
        return Pending(self._embed, texts, self._pool.submit(self._embed, texts))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
