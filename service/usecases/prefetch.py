"""Embedding one batch ahead: the model works on batch ``k + 1`` while batch ``k`` is written.

The forward pass runs in torch's kernels, which release the GIL, so a worker thread embedding
the next batch overlaps with the writer appending and indexing the current one (on two cores,
real overlap: embedding on one, gate + append + index on the other). The worker only embeds:
it reads no graph and takes no lock, so the writes, their order and their outcomes are the
caller's, exactly as without it. ``DECIGRAPH_IMPORT_PIPELINE=0`` (``Settings.import_pipeline``)
turns the overlap off (each
batch is then embedded in the caller's thread when asked for: the same texts, the same batches,
the same vectors), which is how the import benchmark measures what it buys.

The forward pass still needs the GIL between two operators (~70 a batch), and a thread asking
for it waits up to the interpreter's switch interval (5 ms) while the writer runs Python: up to
a third of a batch's time lost on 2 cores. While a pipeline runs, the switch interval is 0.5 ms
(:func:`short_switches`; the previous value comes back when the last pipeline ends). Measured
on 1,000 decisions, twice each, interleaved: 86 and 91 % of the raw embedding rate against 78
and 83 % with the default interval (``bench/bench_import.py``; README "Bulk import").
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from types import TracebackType
from typing import Generic, Self, TypeVar

V = TypeVar("V")

#: The setting's environment variable (``Settings.import_pipeline``), for benchmarks and tests.
PIPELINE_ENV = "DECIGRAPH_IMPORT_PIPELINE"

#: The GIL switch interval while a pipeline runs (seconds; CPython's default is 0.005).
PIPELINE_SWITCH_INTERVAL = 0.0005


class _Switches:
    """The shortened interval's users, and the interval to restore when the last one ends."""

    lock = threading.Lock()
    users = 0
    saved = 0.005


def _shorten(interval: float) -> None:
    with _Switches.lock:
        if _Switches.users == 0:
            _Switches.saved = sys.getswitchinterval()
            sys.setswitchinterval(min(interval, _Switches.saved))
        _Switches.users += 1


def _restore() -> None:
    with _Switches.lock:
        _Switches.users -= 1
        if _Switches.users == 0:
            sys.setswitchinterval(_Switches.saved)


@contextmanager
def short_switches(interval: float = PIPELINE_SWITCH_INTERVAL) -> Iterator[None]:
    """Run the body with the GIL switch interval at most ``interval``; nested and concurrent
    uses are counted, and the first one's previous interval comes back when the last ends."""
    _shorten(interval)
    try:
        yield
    finally:
        _restore()


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
        if self._pool is not None:
            _shorten(PIPELINE_SWITCH_INTERVAL)  # restored in __exit__, whatever ends the import
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            try:
                self._pool.shutdown(wait=True, cancel_futures=True)
            finally:
                _restore()
