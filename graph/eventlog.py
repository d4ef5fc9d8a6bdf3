"""The append-only, hash-chained JSONL event log: the single source of truth.

Durability (``fsync`` policy):

* ``"always"`` (default): every append is ``fdatasync``-ed before it is acknowledged, so an
  acknowledged event survives ``kill -9``, an OS crash and power loss.
* ``"never"``: appends reach the OS page cache only. They survive ``kill -9`` of the process
  (the kernel still holds them) but not an OS crash or power loss. For bulk loads and tests.

A crash can leave the final line incomplete (a "torn" tail): bytes after the last newline.
Only that is torn: an append is acknowledged once its whole line, newline included, is written
(and, with ``"always"``, synced), so an incomplete line was never acknowledged. Readers stop
before it and report it; a writer opening the log moves the torn bytes to
``<log>.torn-<offset>`` and truncates, so no garbage is ever replayed.

A newline-terminated line that does not read back as the next event (bad JSON, wrong sequence,
broken chain, hash mismatch) is an acknowledged event that changed: corruption or tampering,
never a crash artefact, wherever it is in the file (the last line included). It raises
:class:`LogCorruptedError` naming the line, and nothing is cut.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from .errors import LogCorruptedError, StorageError
from .events import GENESIS_HASH, Event

FsyncPolicy = Literal["always", "never"]


class Digest(Protocol):
    """A running hash (``hashlib.sha256()``) fed every verified line, in file order."""

    def update(self, data: bytes, /) -> None: ...


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
    path: Path,
    start_offset: int = 0,
    prev_hash: str = GENESIS_HASH,
    first_seq: int = 1,
    digest: Digest | None = None,
) -> Iterator[LogEntry | TornTail]:
    """Yield verified events from ``start_offset``; a final :class:`TornTail` if the tail is torn.

    Each event must carry the next sequence number, the previous event's hash as ``prev`` and a
    valid hash of its own. Bytes after the last newline are a torn tail; any newline-terminated
    line that fails raises ``LogCorruptedError`` naming its line (line ``n`` holds event ``n``).
    ``digest``, when given, is fed the bytes of every verified line.
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
            if not line.endswith(b"\n"):  # only the last line can lack one: never acknowledged
                yield TornTail(offset, len(line), _torn_reason(line))
                return
            problem = check_line(line, expected_seq, expected_prev)
            if isinstance(problem, str):
                raise LogCorruptedError(str(path), expected_seq, problem)
            if digest is not None:
                digest.update(line)
            end = offset + len(line)
            yield LogEntry(problem, end)
            expected_seq, expected_prev, offset = problem.seq + 1, problem.hash, end


def _torn_reason(line: bytes) -> str:
    try:
        Event.from_line(line)
    except ValueError as exc:
        return f"incomplete line (no newline): torn write ({exc})"
    return "incomplete line (no newline): torn write"


def check_line(line: bytes, expected_seq: int, expected_prev: str) -> Event | str:
    """The event ``line`` holds if it is the next one (``expected_seq``, chained to
    ``expected_prev``, its own hash valid); else why not."""
    try:
        event = Event.from_line(line)
    except ValueError as exc:
        return f"unreadable event: {exc}"
    if event.seq != expected_seq:
        return f"sequence {event.seq} where {expected_seq} was expected"
    if event.prev != expected_prev:
        return f"event {event.seq} does not chain to the previous event's hash"
    if not event.hash_is_valid():
        return f"event {event.seq} hash does not match its content (the line was changed)"
    return event


class LogWriter:
    """Appends whole lines to the log with the configured fsync policy, or not at all."""

    def __init__(self, path: Path, fsync: FsyncPolicy = "always") -> None:
        self.path = path
        self.fsync = fsync
        created = not path.exists()
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.size = os.fstat(self._fd).st_size
        # Bytes of a failed append that could not be cut off yet: no line may follow them.
        self._dirty = False
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
        """Write whole lines; return the new size. On failure, leave no partial line behind.

        If even cutting a failed append's bytes off fails, nothing more is appended until the
        cut succeeds: a line written after them would glue onto them and turn an unacknowledged
        partial write into a corrupt acknowledged line.
        """
        before = self.size
        if self._dirty:
            self._rollback(before)
            if self._dirty:
                raise StorageError(
                    errno.EIO, f"cannot append to {self.path}: a failed write could not be undone"
                )
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
        # If this fails, the next append tries again first, and the next open's torn-tail
        # check cuts the partial line (it has no newline).
        self._dirty = True
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, size)
            self._dirty = False

    def sync(self) -> None:
        """Make every appended line durable (a no-op cost under ``"always"``)."""
        if self.fsync != "always":
            os.fdatasync(self._fd)

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
