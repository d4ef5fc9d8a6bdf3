"""The event log as a JSONL file in the data directory (one writer: the directory lock).

The format, the torn-tail rules and the fsync policy are :mod:`graph.eventlog`'s. A snapshot
witnesses the file it was built from by the SHA-256 of the log's first ``logOffset`` bytes
(kept up to date while appending); :meth:`FileEventStore.resume` hashes them again and refuses
a log whose covered part changed, was cut short or was replaced.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from array import array
from collections.abc import Iterator
from pathlib import Path

import networkx as nx

from graph.errors import LogCorruptedError, ReadOnlyStoreError
from graph.eventlog import FsyncPolicy, LogEntry, LogWriter, TornTail, read_events
from graph.events import GENESIS_HASH, Event
from graph.snapshot import SnapshotHeader
from graph.verification import VerifyReport, verify_log

from .base import EventStore, EventVectors, Head

_CHUNK = 1 << 20  # bytes read at a time when hashing the log prefix
SNAPSHOT_NAME = "snapshot.json"

logger = logging.getLogger(__name__)


class FileEventStore(EventStore):
    """The log in ``path`` (``<data-dir>/events.jsonl``)."""

    shared = False

    def __init__(self, path: Path, fsync: FsyncPolicy = "always") -> None:
        self.path = path
        self.location = str(path)
        self.fsync: FsyncPolicy = fsync
        self.writer: LogWriter | None = None
        #: Bytes of the log read or written so far, and the SHA-256 of exactly those bytes
        #: (what a snapshot records as its witness).
        self.offset = 0
        self._digest = hashlib.sha256()
        self._head = Head(0, GENESIS_HASH)
        #: ``_ends[s]``: the byte offset where event ``s`` ends (event ``s + 1`` starts), for
        #: every ``s`` up to ``len - 1``; filled lazily by a newline scan (:meth:`lines`).
        self._ends = array("q", [0])
        self._ends_lock = threading.Lock()

    def open(self, read_only: bool) -> None:
        if not read_only:
            self.writer = LogWriter(self.path, self.fsync)

    # -- reading ---------------------------------------------------------------------------
    def resume(self, header: SnapshotHeader) -> bool:
        digest = hashlib.sha256()
        remaining = header.log_offset
        try:
            with self.path.open("rb") as handle:
                while remaining and (chunk := handle.read(min(_CHUNK, remaining))):
                    digest.update(chunk)
                    remaining -= len(chunk)
        except FileNotFoundError:
            pass
        if not remaining and digest.hexdigest() == header.prefix_sha256:
            self.offset, self._digest = header.log_offset, digest
            self._head = Head(header.seq, header.last_hash)
            return True
        self._explain_prefix(header)
        logger.warning(
            "the log's first %d bytes differ from those %s covered, but every event in them is "
            "unchanged (same hashes); replaying the whole log",
            header.log_offset,
            SNAPSHOT_NAME,
        )
        return False

    def _explain_prefix(self, header: SnapshotHeader) -> None:
        """Raise the :class:`LogCorruptedError` that says how the log's covered part changed.

        Reads the log from the start, checking its chain: the first line that fails is named;
        else a log with fewer events than the snapshot covered, or another event at its
        ``seq``, is refused. Returns only when the events are the snapshot's own.
        """
        path = str(self.path)
        count, last = 0, None
        for item in read_events(self.path):
            if isinstance(item, TornTail) or count == header.seq:
                break
            count, last = count + 1, item.event.hash
        rebuild = "run `decigraph rebuild` to serve the log as it is"
        if count < header.seq:
            raise LogCorruptedError(
                path,
                count + 1,
                f"the log ends after event {count}, but {SNAPSHOT_NAME} covers {header.seq} "
                "events: acknowledged events are missing (the log was cut short, or restored "
                f"from an older copy; if that was on purpose, {rebuild})",
            )
        if last != header.last_hash:
            raise LogCorruptedError(
                path,
                header.seq,
                f"event {header.seq} is not the one {SNAPSHOT_NAME} was taken after (another "
                "hash): the log up to this line was rewritten with recomputed hashes, or the "
                f"snapshot belongs to another log (if the log was replaced on purpose, {rebuild})",
            )

    def entries(
        self, after_seq: int, last_hash: str, upto: int | None = None
    ) -> Iterator[LogEntry | TornTail]:
        if after_seq != self._head.seq or upto is not None:
            # Another position than where this log stands (a copy reading it again), or a
            # bounded read: from the start, without moving the position (and the digest) that
            # appends and snapshots rely on.
            for item in read_events(self.path):
                if isinstance(item, LogEntry):
                    if item.event.seq <= after_seq:
                        continue
                    if upto is not None and item.event.seq > upto:
                        return
                yield item
            return
        items = read_events(self.path, self.offset, last_hash, after_seq + 1, digest=self._digest)
        for item in items:
            if isinstance(item, LogEntry):
                self.offset = item.end_offset
                self._head = Head(item.event.seq, item.event.hash)
                self._track(item.event.seq, item.end_offset)
            yield item

    def head(self) -> Head:
        return self._head

    def lines(self, first: int, last: int) -> list[tuple[int, bytes]]:
        """Seek to event ``first`` through the offset index (extended by counting newlines,
        without parsing, the first time a part of the log is read) and read up to ``last``.

        Only whole lines up to the position this store has read or written are returned: the
        caller bounds ``last`` by the applied seq, and a line being appended is never seen.
        """
        first = max(first, 1)
        last = min(last, self._head.seq)
        if last < first:
            return []
        start = self._offset_before(first)
        out: list[tuple[int, bytes]] = []
        with self.path.open("rb") as handle:
            handle.seek(start)
            for seq in range(first, last + 1):
                line = handle.readline()
                if not line.endswith(b"\n"):
                    break
                out.append((seq, line))
        return out

    def _offset_before(self, seq: int) -> int:
        """Where event ``seq`` starts."""
        with self._ends_lock:
            ends = self._ends
            if seq - 1 < len(ends):
                return ends[seq - 1]
            known = len(ends) - 1
            with self.path.open("rb") as handle:
                handle.seek(ends[known])
                offset = ends[known]
                while known < seq - 1 and known < self._head.seq:
                    line = handle.readline()
                    if not line.endswith(b"\n"):
                        break
                    offset += len(line)
                    known += 1
                    ends.append(offset)
            if seq - 1 >= len(ends):
                raise LogCorruptedError(str(self.path), known + 1, "the log ends before it")
            return ends[seq - 1]

    def _track(self, seq: int, end: int) -> None:
        """Extend the offset index when it reaches the event just written or read."""
        if len(self._ends) == seq:
            with self._ends_lock:
                if len(self._ends) == seq:
                    self._ends.append(end)

    def find(self, event_id: str) -> LogEntry | None:
        """A scan of the file (the file log keeps no index of event ids)."""
        for item in read_events(self.path):
            if isinstance(item, LogEntry) and item.event.id == event_id:
                return item
        return None

    # -- writing ---------------------------------------------------------------------------
    def cut_torn_tail(self, torn: TornTail) -> str | None:
        if self.writer is None:
            return None
        return str(self.writer.cut_torn_tail(torn))

    def append(self, event: Event, line: bytes, vectors: EventVectors) -> None:
        if self.writer is None:
            raise ReadOnlyStoreError(str(self.path.parent))
        self.offset = self.writer.append(line)
        self._digest.update(line)
        self._head = Head(event.seq, event.hash)
        self._track(event.seq, self.offset)

    def append_lines(self, events: list[tuple[Event, bytes]]) -> None:
        """Append several events in one write (a copy of another log)."""
        if not events:
            return
        if self.writer is None:
            raise ReadOnlyStoreError(str(self.path.parent))
        data = b"".join(line for _, line in events)
        self.offset = self.writer.append(data)
        self._digest.update(data)
        self._head = Head(events[-1][0].seq, events[-1][0].hash)
        self._ends = array("q", [0])  # rebuilt by the next range read

    def snapshot_header(self, seq: int, last_hash: str) -> SnapshotHeader:
        if self.writer is not None:
            # The snapshot is fsync-ed: never let it cover log bytes that are not.
            self.writer.sync()
        return SnapshotHeader(seq, self.offset, last_hash, self._digest.hexdigest())

    def verify(self, applied: int, live: nx.MultiDiGraph[str]) -> VerifyReport:
        return verify_log(self.path, applied, live)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
