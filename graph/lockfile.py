"""An exclusive writer lock on a data directory (``flock``: freed when the holder dies)."""

from __future__ import annotations

import fcntl
import os
import socket
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
