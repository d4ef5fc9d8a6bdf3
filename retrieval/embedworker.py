"""The model in a helper process while the server's own copy loads: a start-up that uses both
cores.

A server starting on a large store spends seconds loading its snapshot and indexes and seconds
importing torch and loading the model. Threads cannot overlap them: both are Python code under
the GIL (measured: loading the model in a thread beside the store's load saved nothing,
README "Start-up and GC pauses"). So :class:`BootEmbedder` starts a helper process
(``python -m retrieval.embedworker``) that loads the same model with the same settings while the
server opens its store; until the server's own model is loaded (:meth:`BootEmbedder.
start_local`, called once the store and the indexes are open), embeddings are computed there,
over a pipe. Same code, same weights, same torch threads and batch size: the vectors are bit
for bit the ones the server computes itself (``tests/integration/test_embedworker.py``). Once
the local model is warm, the helper is told to exit (its stdin closes); it also exits when the
server dies. Should the helper fail, embedding waits for the local model instead.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from .embedder import DIMENSION, MODEL_NAME, MiniLMEmbedder, Vectors

_ROOT = str(Path(__file__).resolve().parent.parent)


class EmbedWorker:
    """The helper process and its pipe (one request at a time)."""

    def __init__(self, threads: int | None, batch_size: int, runtime: str) -> None:
        env = {**os.environ, "DECIGRAPH_MODEL_RUNTIME": runtime}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
        command = [sys.executable, "-m", "retrieval.embedworker", str(threads or 0)]
        self.proc = subprocess.Popen(
            [*command, str(batch_size)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.ready = threading.Event()
        self.failed = False
        self._lock = threading.Lock()
        threading.Thread(
            target=self._await_ready, name="decigraph-embedworker", daemon=True
        ).start()

    def _await_ready(self) -> None:
        assert self.proc.stdout is not None
        try:
            self.failed = self.proc.stdout.read(1) != b"R"
        except (OSError, ValueError):
            self.failed = True
        self.ready.set()

    def embed(self, texts: Sequence[str]) -> Vectors | None:
        """The vectors, or ``None`` when the helper is gone (the caller embeds itself)."""
        with self._lock:
            if self.failed or self.proc.poll() is not None:
                return None
            stdin, stdout = self.proc.stdin, self.proc.stdout
            assert stdin is not None
            assert stdout is not None
            try:
                body = json.dumps(list(texts)).encode()
                stdin.write(struct.pack("<I", len(body)) + body)
                stdin.flush()
                return _read_answer(stdout, len(texts))
            except (OSError, ValueError, struct.error):
                self.failed = True
                return None

    def close(self) -> None:
        with self._lock:
            self.failed = True
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()  # the helper's cue to exit
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            finally:
                if self.proc.stdout is not None:
                    self.proc.stdout.close()


def _read_answer(stream: IO[bytes], rows: int) -> Vectors:
    kind = stream.read(1)
    (size,) = struct.unpack("<I", _exactly(stream, 4))
    payload = _exactly(stream, size)
    if kind != b"V":
        raise ValueError(f"the embedding helper failed: {payload.decode(errors='replace')}")
    vectors = np.frombuffer(payload, dtype=np.float32).reshape(rows, DIMENSION)
    return vectors.copy()


def _exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise ValueError("the embedding helper closed its pipe")
    return data


class BootEmbedder:
    """:class:`MiniLMEmbedder` (``local``) that answers from a helper process until its own
    model is loaded (module docstring). ``on_local`` runs once the local model is warm."""

    def __init__(self, local: MiniLMEmbedder, on_local: Callable[[], None] | None = None) -> None:
        self.local = local
        self.on_local = on_local
        self.worker: EmbedWorker | None = EmbedWorker(
            local.threads, local.batch_size, local.runtime
        )
        self._started = threading.Event()
        #: Set once the local model is loaded (or failed to) and the helper stopped.
        self.local_done = threading.Event()
        #: Embeddings the helper computed (tests, the start-up report).
        self.served_by_worker = 0

    @property
    def model_name(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def threads(self) -> int | None:
        return self.local.threads

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        worker = self.worker
        while worker is not None and not self.local.loaded:
            if worker.ready.wait(0.05):
                vectors = worker.embed(texts)
                if vectors is not None:
                    self.served_by_worker += 1
                    return vectors
                break  # the helper failed: load here (or wait for the load under way)
        return self.local.embed(texts)

    def start_local(self) -> None:
        """Load the local model in a background thread, once the helper is ready (two loads at
        once would only slow the first on a busy host); then stop the helper."""
        if self._started.is_set():
            return
        self._started.set()
        threading.Thread(target=self._load_local, name="decigraph-model", daemon=True).start()

    def _load_local(self) -> None:
        worker = self.worker
        if worker is not None:
            worker.ready.wait()
        try:
            self.local.embed(["decigraph warm-up"])
            if self.on_local is not None:
                self.on_local()
        finally:
            self.close()
            self.local_done.set()

    def close(self) -> None:
        worker = self.worker
        if worker is not None:
            worker.close()  # a request still on it ends first; later ones embed here
        self.worker = None


def main() -> None:
    """The helper: load the model, say ``R``, then answer ``<len><json texts>`` requests with
    ``V<len><float32 rows>`` (or ``E<len><message>``) until stdin closes."""
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the channel
    threads, batch_size = int(sys.argv[1]), int(sys.argv[2])
    embedder = MiniLMEmbedder(batch_size=batch_size, threads=threads or None)
    embedder.embed(["decigraph warm-up"])
    channel.write(b"R")
    channel.flush()
    requests = sys.stdin.buffer
    while True:
        header = requests.read(4)
        if len(header) < 4:
            return
        (size,) = struct.unpack("<I", header)
        try:
            texts = json.loads(requests.read(size))
            payload = np.ascontiguousarray(embedder.embed(texts), dtype=np.float32).tobytes()
            kind = b"V"
        except Exception as exc:  # answered, not fatal: the server falls back to its own model
            payload, kind = f"{type(exc).__name__}: {exc}".encode(), b"E"
        channel.write(kind + struct.pack("<I", len(payload)) + payload)
        channel.flush()


if __name__ == "__main__":
    main()
