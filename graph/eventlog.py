"""The append-only, hash-chained JSONL event log: the single source of truth.

Durability (``fsync`` policy):

* ``"always"`` (default): every append is ``fdatasync``-ed before it is acknowledged, so an
  acknowledged event survives ``kill -9``, an OS crash and power loss.
* ``"never"``: appends reach the OS page cache only. They survive ``kill -9`` of the process
  (the kernel still holds them) but not an OS crash or power loss. For bulk loads and tests.

A crash can leave the final line incomplete (a "torn" tail). Readers stop before it and report
it; a writer opening the log moves the torn bytes to ``<log>.torn-<offset>`` and truncates, so no
acknowledged event is lost and no garbage is ever replayed. A bad line *before* the last one is
not a crash artefact but corruption or tampering, and raises :class:`LogCorruptedError`.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .errors import LogCorruptedError, StorageError
from .events import GENESIS_HASH, Event

FsyncPolicy = Literal["always", "never"]


@dataclass(frozen=True, slots=True)
class LogEntry:
    event: Event
    end_offset: int


@dataclass(frozen=True, slots=True)
class TornTail:
    """An unusable final line starting at ``offset`` (``length`` bytes)."""

    offset: int
    length: int
    reason: str


def read_events(
    path: Path, start_offset: int = 0, prev_hash: str = GENESIS_HASH, first_seq: int = 1
) -> Iterator[LogEntry | TornTail]:
    """Yield verified events from ``start_offset``; a final :class:`TornTail` if the tail is torn.

    Each event must carry the next sequence number, the previous event's hash as ``prev`` and a
    valid hash of its own; otherwise, unless it is the last line, ``LogCorruptedError``.
    """
    if not path.exists():
        return
    expected_seq, expected_prev = first_seq, prev_hash
    with path.open("rb") as handle:
        handle.seek(start_offset)
        offset = start_offset
        while True:
            line = handle.readline()
            if not line:
                return
            end = offset + len(line)
            problem = _check_line(line, expected_seq, expected_prev)
            if isinstance(problem, str):
                if handle.read(1) == b"":
                    yield TornTail(offset, len(line), problem)
                    return
                raise LogCorruptedError(str(path), expected_seq, problem)
            yield LogEntry(problem, end)
            expected_seq, expected_prev, offset = problem.seq + 1, problem.hash, end


def _check_line(line: bytes, expected_seq: int, expected_prev: str) -> Event | str:
    if not line.endswith(b"\n"):
        return "incomplete line (no newline): torn write"
    try:
        event = Event.from_line(line)
    except ValueError as exc:
        return f"unreadable event: {exc}"
    if event.seq != expected_seq:
        return f"sequence {event.seq} where {expected_seq} was expected"
    if event.prev != expected_prev:
        return f"event {event.seq} does not chain to the previous event's hash"
    if not event.hash_is_valid():
        return f"event {event.seq} hash does not match its content"
    return event


class LogWriter:
    """Appends whole lines to the log with the configured fsync policy, or not at all."""

    def __init__(self, path: Path, fsync: FsyncPolicy = "always") -> None:
        self.path = path
        self.fsync = fsync
        created = not path.exists()
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.size = os.fstat(self._fd).st_size
        if created:
            _fsync_dir(path.parent)

    def cut_torn_tail(self, torn: TornTail) -> Path:
        """Move the torn bytes aside (for forensics) and truncate the log before them."""
        aside = self.path.with_name(f"{self.path.name}.torn-{torn.offset}")
        with self.path.open("rb") as handle:
            handle.seek(torn.offset)
            aside.write_bytes(handle.read())
        os.ftruncate(self._fd, torn.offset)
        os.fsync(self._fd)
        self.size = torn.offset
        return aside

    def append(self, data: bytes) -> int:
        """Write whole lines; return the new size. On failure, leave no partial line behind."""
        before = self.size
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            if self.fsync == "always":
                os.fdatasync(self._fd)
        except OSError as exc:
            self._rollback(before)
            reason = "disk full" if exc.errno == errno.ENOSPC else exc.strerror
            raise StorageError(exc.errno, f"cannot append to {self.path}: {reason}") from exc
        self.size = before + len(data)
        return self.size

    def _rollback(self, size: int) -> None:
        # If even this fails, the next open's torn-tail check still cuts the partial line.
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, size)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
