"""The persistent half of the store: an event log on disk and the graph materialised from it.

:class:`LoggedGraph` opens a data directory (lock, load the snapshot, replay the log tail), keeps
the :class:`~graph.state.GraphState` in step with the log, and commits events: build, validate
against the current state (nothing written on error), append durably, apply, notify listeners.
:class:`~graph.store.DecisionStore` adds the decision operations on top.

What opening accepts (the log is the source of truth; a snapshot is a shortcut that also
witnesses the log it was built from):

* bytes after the last newline are a torn tail (an append that was never acknowledged): a
  writer moves them aside and cuts them;
* any acknowledged (newline-terminated) line that fails verification, wherever it is, makes
  :meth:`LoggedGraph.open` raise :class:`~graph.errors.LogCorruptedError` naming the line: the
  store refuses to serve rather than drop or skip an acknowledged event;
* with a snapshot, the log's first ``logOffset`` bytes must hash to the snapshot's
  ``prefixSha256`` (a streaming SHA-256 of the prefix, kept up to date while appending). If
  they do not, the log is read from the start to say what changed: a line that fails its hash
  chain is named; a log that ends before the snapshot's last event (acknowledged events
  missing) or whose event at the snapshot's ``seq`` has another hash (history rewritten with
  recomputed hashes, or a snapshot from another store) is refused too. ``decigraph rebuild``
  (``use_snapshot=False``) serves the log as it is after checking its chain, for an operator
  who restored a log from a backup on purpose.

Without a snapshot nothing witnesses the log but its own hash chain: an edit that recomputes
every later hash, or a cut at a line boundary, cannot be detected then.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import networkx as nx

from .adjacency import SparseAdjacency
from .errors import DecigraphError, LogCorruptedError, ReadOnlyStoreError
from .eventlog import FsyncPolicy, LogEntry, LogWriter, TornTail, read_events
from .events import Event, Operation
from .gcpause import gc_paused
from .ids import IdSource
from .lockfile import DirectoryLock
from .snapshot import SnapshotHeader, read_snapshot, write_snapshot
from .state import GraphState, Parsed, graph_hash
from .timeutil import format_ts, utc_now
from .verification import VerifyReport, verify_log

LOG_NAME = "events.jsonl"
SNAPSHOT_NAME = "snapshot.json"
_CHUNK = 1 << 20  # bytes read at a time when hashing the log prefix

logger = logging.getLogger(__name__)
Listener = Callable[[Event], None]


@dataclass(frozen=True)
class StoreOptions:
    """How a store is opened.

    ``snapshot_every``: events between automatic snapshots (0 turns them off; one is still
    written on close). ``fsync``: see :mod:`graph.eventlog`. ``use_snapshot=False`` replays the
    whole log (``decigraph rebuild``).
    """

    fsync: FsyncPolicy = "always"
    snapshot_every: int = 10_000
    read_only: bool = False
    use_snapshot: bool = True


@dataclass(frozen=True)
class OpenReport:
    """How the store reached its state at open: from a snapshot plus tail, or a full replay."""

    snapshot_seq: int | None
    replayed: int
    torn_tail: TornTail | None
    torn_saved_to: Path | None


class LoggedGraph:
    """An event-sourced graph in ``data_dir``: its log, snapshot and state; use :meth:`open`."""

    def __init__(
        self,
        data_dir: Path,
        options: StoreOptions,
        clock: Callable[[], datetime],
        ids: IdSource,
    ) -> None:
        self.data_dir = data_dir
        self.options = options
        self.log_path = data_dir / LOG_NAME
        self.snapshot_path = data_dir / SNAPSHOT_NAME
        self._clock = clock
        self._ids = ids
        self._lock = threading.RLock()
        self._dir_lock = DirectoryLock(data_dir)
        self._writer: LogWriter | None = None
        self.adjacency = SparseAdjacency()
        self.state = GraphState(self.adjacency)
        self.log_offset = 0
        # SHA-256 of the log's first log_offset bytes (what a snapshot records as its witness).
        self._digest = hashlib.sha256()
        self.snapshot_seq = 0
        self.listeners: list[Listener] = []
        self._snapshot_failed_seq = 0
        self.open_report = OpenReport(None, 0, None, None)

    # -- lifecycle -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        data_dir: str | Path,
        options: StoreOptions | None = None,
        *,
        clock: Callable[[], datetime] = utc_now,
        ids: IdSource | None = None,
    ) -> Self:
        """Open (creating if needed) the store in ``data_dir``: lock, load snapshot, replay tail."""
        options = options or StoreOptions()
        path = Path(data_dir)
        if not options.read_only:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)  # owner-only, like its files
        store = cls(path, options, clock, ids or IdSource())
        store._load()
        return store

    def _load(self) -> None:
        if not self.options.read_only:
            self._dir_lock.acquire()
        try:
            with gc_paused():
                snapshot_seq, replayed, torn = self._materialise()
            saved: Path | None = None
            if not self.options.read_only:
                self._writer = LogWriter(self.log_path, self.options.fsync)
                if torn is not None:
                    saved = self._writer.cut_torn_tail(torn)
                    logger.warning("cut torn log tail (%s), saved to %s", torn.reason, saved)
            self.open_report = OpenReport(snapshot_seq, replayed, torn, saved)
        except BaseException:
            self._dir_lock.release()
            raise

    def _materialise(self) -> tuple[int | None, int, TornTail | None]:
        snapshot_seq = self._restore_snapshot()
        replayed, torn = self._replay_tail()
        return snapshot_seq, replayed, torn

    def _restore_snapshot(self) -> int | None:
        loaded = read_snapshot(self.snapshot_path) if self.options.use_snapshot else None
        if loaded is None:
            return None
        header, G = loaded
        digest = self._check_prefix(header)
        if digest is None:
            return None
        self.state.graph = G
        self.state.seq = header.seq
        self.state.last_hash = header.last_hash
        self.state.external_ids = {
            attrs["external_id"]: node_id
            for node_id, attrs in G.nodes(data=True)
            if "external_id" in attrs
        }
        self.adjacency = SparseAdjacency.from_graph(G)
        self.state.mirror = self.adjacency
        self.log_offset = header.log_offset
        self._digest = digest
        self.snapshot_seq = header.seq
        return header.seq

    def _check_prefix(self, header: SnapshotHeader) -> hashlib._Hash | None:
        """The digest of the log's first ``header.log_offset`` bytes if they are the ones the
        snapshot covered; ``None`` if they differ only in bytes that no event hash covers.

        Raises :class:`LogCorruptedError` (naming the line) when an acknowledged event the
        snapshot covered was changed, lost or replaced.
        """
        digest = hashlib.sha256()
        remaining = header.log_offset
        try:
            with self.log_path.open("rb") as handle:
                while remaining and (chunk := handle.read(min(_CHUNK, remaining))):
                    digest.update(chunk)
                    remaining -= len(chunk)
        except FileNotFoundError:
            pass
        if not remaining and digest.hexdigest() == header.prefix_sha256:
            return digest
        self._explain_prefix(header)
        logger.warning(
            "the log's first %d bytes differ from those %s covered, but every event in them is "
            "unchanged (same hashes); replaying the whole log",
            header.log_offset,
            SNAPSHOT_NAME,
        )
        return None

    def _explain_prefix(self, header: SnapshotHeader) -> None:
        """Raise the :class:`LogCorruptedError` that says how the log's covered part changed.

        Reads the log from the start, checking its chain: the first line that fails is named;
        else a log with fewer events than the snapshot covered, or another event at its
        ``seq``, is refused. Returns only when the events are the snapshot's own.
        """
        path = str(self.log_path)
        count, last = 0, None
        for item in read_events(self.log_path):
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

    def _replay_tail(self, notify: bool = False) -> tuple[int, TornTail | None]:
        count = 0
        items = read_events(
            self.log_path,
            self.log_offset,
            self.state.last_hash,
            self.state.seq + 1,
            digest=self._digest,
        )
        for item in items:
            if isinstance(item, TornTail):
                return count, item
            self._apply_logged(item)
            self.log_offset = item.end_offset
            count += 1
            if notify:
                self._notify(item.event)
        return count, None

    def _apply_logged(self, item: LogEntry) -> None:
        try:
            self.state.apply(item.event)
        except LogCorruptedError:
            raise
        except DecigraphError as exc:  # hashes fine, but the event cannot apply: edited, re-hashed
            seq = item.event.seq
            reason = f"event {seq} does not apply to the events before it: {exc}"
            raise LogCorruptedError(str(self.log_path), seq, reason) from exc

    def refresh(self) -> int:
        """Read-only stores: apply events appended by the writer since; return how many.

        Listeners hear each applied event, as they would have heard the writer's commits, so
        indexes built over a read-only store follow the writer too.
        """
        with self._lock:
            count, _ = self._replay_tail(notify=True)
            return count

    def close(self) -> None:
        with self._lock:
            try:
                if self._writer is not None and self.state.seq > self.snapshot_seq:
                    self.write_snapshot()
            except OSError as exc:  # e.g. a full disk: the next open replays the log instead
                logger.warning("could not write a snapshot on close (%s); the log is intact", exc)
            finally:
                if self._writer is not None:
                    self._writer.close()
                    self._writer = None
                self._dir_lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- reads -----------------------------------------------------------------------------
    @property
    def graph(self) -> nx.MultiDiGraph[str]:
        return self.state.graph

    @property
    def seq(self) -> int:
        return self.state.seq

    @property
    def lock(self) -> threading.RLock:
        """Held during every write; hold it to read a consistent multi-step view."""
        return self._lock

    def graph_hash(self) -> str:
        return graph_hash(self.graph)

    # -- committing events -------------------------------------------------------------------
    def _commit(
        self,
        op: Operation,
        payload: dict[str, Any],
        actor: str,
        expected_version: int | None = None,
        *,
        now: datetime | None = None,
        parsed: Parsed | None = None,
    ) -> Event:
        """Validate ``payload`` against the state, append it durably, apply it, notify.

        ``parsed`` hands over the node and edges a record or remember payload was built from,
        already validated by the caller, so they are not parsed back from the payload.
        """
        if self._writer is None:
            raise ReadOnlyStoreError(str(self.data_dir))
        event = Event.create(
            seq=self.state.seq + 1,
            event_id=self._ids.event_id(),
            ts=format_ts(now or self._clock()),
            actor=actor,
            op=op,
            payload=payload,
            prev=self.state.last_hash,
            expected_version=expected_version,
        )
        apply = self.state.plan(event, parsed)
        line = event.to_line()
        self.log_offset = self._writer.append(line)
        self._digest.update(line)
        apply()
        self._notify(event)
        every = self.options.snapshot_every
        if every and self.state.seq - max(self.snapshot_seq, self._snapshot_failed_seq) >= every:
            # The event is durable and applied: a snapshot is only a start-up shortcut, so
            # failing to write one (e.g. a full disk) must not turn this write into an error.
            try:
                self.write_snapshot()
            except OSError as exc:
                self._snapshot_failed_seq = self.state.seq  # retry after another `every`
                logger.warning("could not write a snapshot (%s); the log is intact", exc)
        return event

    def _notify(self, event: Event) -> None:
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:  # a derived index must never undo a durable write
                logger.exception("listener failed on event %s", event.seq)

    def write_snapshot(self) -> None:
        with self._lock:
            header = SnapshotHeader(
                self.state.seq, self.log_offset, self.state.last_hash, self._digest.hexdigest()
            )
            try:
                if self._writer is not None:
                    # The snapshot is fsync-ed: never let it cover log bytes that are not.
                    self._writer.sync()
                with gc_paused():
                    write_snapshot(self.snapshot_path, self.graph, header)
            except OSError:
                # Give back the space a half-written temporary file holds (the old snapshot,
                # if any, is untouched: the new one only replaces it once complete).
                tmp = self.snapshot_path.with_name(self.snapshot_path.name + ".tmp")
                tmp.unlink(missing_ok=True)
                raise
            self.snapshot_seq = self.state.seq

    def verify(self) -> VerifyReport:
        """Re-read the whole log, check the hash chain, replay it and compare with this graph."""
        with self._lock:
            return verify_log(self.log_path, self.state.seq, self.graph)
