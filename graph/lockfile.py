"""Locks: the exclusive writer lock on a data directory (``flock``: freed when the holder
dies), and the two in-process locks of a store (:class:`StoreLocks`)."""

from __future__ import annotations

import fcntl
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import StoreLockedError


class DirectoryLock:
    """Hold ``<data_dir>/LOCK`` exclusively while a store is open for writing.

    ``flock`` locks belong to the open file description, so the kernel drops the lock when the
    holder exits, including on ``kill -9``: a crash never leaves a stale lock behind.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "LOCK"
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown holder"
            os.close(fd)
            raise StoreLockedError(str(self.path.parent), holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


class StoreLocks:
    """A store's two locks, always taken in this order.

    ``write`` keeps writers (and the follower of a shared log) one at a time for a whole write
    section; ``state`` guards the in-memory state and is what readers hold. A writer lets go of
    ``state`` while it waits on the log (:meth:`io_wait`: an fsync, a commit waiting for a
    standby, another replica's head lock), so reads never wait for I/O, and nothing can change
    the state meanwhile (no one else can write).
    """

    def __init__(self) -> None:
        self.write = threading.RLock()
        self.state = threading.RLock()

    def _owns(self, lock: threading.RLock) -> bool:
        return bool(lock._is_owned())  # type: ignore[attr-defined]

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold ``write``. A thread already reading (holding ``state``) lets go of it while it
        waits, so the two are never taken in the other order (a deadlock)."""
        if self._owns(self.write) or not self._owns(self.state):
            with self.write:
                yield
            return
        with self.io_wait():
            self.write.acquire()
        try:
            yield
        finally:
            self.write.release()

    @contextmanager
    def io_wait(self) -> Iterator[None]:
        """Let readers in while this thread waits; ``state`` is taken back after, as many
        times as it was held."""
        if not self._owns(self.state):
            yield
            return
        saved = self.state._release_save()  # type: ignore[attr-defined]
        try:
            yield
        finally:
            self.state._acquire_restore(saved)  # type: ignore[attr-defined]
