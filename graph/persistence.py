"""The persistent half of the store: an event log and the graph materialised from it.

:class:`LoggedGraph` opens a data directory (lock, load the local snapshot, replay the log
after it), keeps the :class:`~graph.state.GraphState` in step with the log, and commits events:
build, validate against the current state (nothing written on error), append durably, apply,
notify listeners. :class:`~graph.store.DecisionStore` adds the decision operations on top.

The log lives in an :class:`~graph.eventstore.EventStore`: the JSONL file in the data
directory (:mod:`graph.eventstore.filelog`, the default) or a PostgreSQL table shared by
replicas (:mod:`graph.eventstore.postgres`). What opening accepts is the log's to say: a file
log cuts a torn tail (an append never acknowledged) and refuses a log whose acknowledged
lines changed (:class:`~graph.errors.LogCorruptedError` naming the line); the snapshot must
be witnessed by the log it was built from, or the whole log is replayed (``decigraph
rebuild``, ``use_snapshot=False``, serves a log an operator restored on purpose).

With a shared log, every write runs in a write section (:meth:`LoggedGraph.writing`) that
locks the log's head and first applies the other replicas' events; :meth:`LoggedGraph.follow`
applies them as they are committed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import networkx as nx

from .adjacency import SparseAdjacency
from .errors import (
    CommitOutcomeUnknownError,
    DecigraphError,
    LogCorruptedError,
    LogDivergedError,
    ReadOnlyStoreError,
)
from .eventlog import LogEntry, TornTail
from .events import Event, Operation, touched_ids
from .eventstore import EventStore, EventVectors, Head, open_event_store
from .gcpause import gc_paused
from .ids import IdSource
from .lockfile import DirectoryLock, StoreLocks
from .options import OpenReport, StoreOptions
from .riskindex import RiskIndex
from .snapshot import keep_checkpoint, read_snapshot, write_snapshot
from .state import GraphState, Parsed, graph_hash
from .timeutil import format_ts, utc_now
from .tracing import span
from .verification import VerifyReport

if TYPE_CHECKING:
    from .eventstore.follower import Follower

LOG_NAME = "events.jsonl"
SNAPSHOT_NAME = "snapshot.json"

logger = logging.getLogger(__name__)
Listener = Callable[[Event], None]
#: The vectors of the write being committed (sha256 of the embedded text -> float32 bytes).
VectorSource = Callable[[], EventVectors]


class LoggedGraph:
    """An event-sourced graph: its log (:class:`~graph.eventstore.EventStore`), its local
    snapshot in ``data_dir`` and its state; use :meth:`open`."""

    def __init__(
        self,
        data_dir: Path,
        options: StoreOptions,
        clock: Callable[[], datetime] | None,
        ids: IdSource,
        log: EventStore,
    ) -> None:
        self.data_dir = data_dir
        self.options = options
        self.log = log
        self.log_path = data_dir / LOG_NAME
        self.snapshot_path = data_dir / SNAPSHOT_NAME
        # No clock given: events are stamped by the log's clock (the database's, read under
        # the head lock, for a shared log; this machine's otherwise).
        self._base_clock = clock or utc_now
        self._log_clock = clock is None
        self._ids = ids
        self._locks = StoreLocks()
        self._lock = self._locks.state
        self._dir_lock = DirectoryLock(data_dir)
        self.adjacency = SparseAdjacency()
        #: Contradiction pairs and blocked chains, maintained (built on first use).
        self.risk = RiskIndex()
        self.state = GraphState(self.adjacency, self.risk)
        self.snapshot_seq = 0
        self.listeners: list[Listener] = []
        #: Called after the state was rebuilt from the log (a shared log that diverged).
        self.reset_listeners: list[Callable[[], None]] = []
        #: The vectors to store with the event being committed (the indexes set it).
        self.vector_source: VectorSource | None = None
        #: The vectors stored with the event listeners are hearing (a shared log's).
        self.incoming_vectors: EventVectors = {}
        self._snapshot_failed_seq = 0
        self._writable = False
        self._depth = 0  # nesting of write sections
        self._section: Head | None = None  # the locked head, while a shared log's section is open
        self._last_seq_by_thread = threading.local()
        self._follower: Follower | None = None
        self.open_report = OpenReport(None, 0, None, None)

    # -- lifecycle -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        data_dir: str | Path,
        options: StoreOptions | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        ids: IdSource | None = None,
    ) -> Self:
        """Open (creating if needed) the store in ``data_dir``: lock, load snapshot, replay tail."""
        options = options or StoreOptions()
        path = Path(data_dir)
        if not options.read_only:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)  # owner-only, like its files
        log = open_event_store(
            path,
            options.event_store,
            fsync=options.fsync,
            commit_timeout=options.commit_timeout,
            lock_timeout=options.lock_timeout,
        )
        store = cls(path, options, clock, ids or IdSource(), log)
        store._load()
        return store

    def _load(self) -> None:
        if not self.options.read_only:
            self._dir_lock.acquire()
        try:
            self.log.open(self.options.read_only)
            with gc_paused():
                snapshot_seq, replayed, torn = self._materialise()
            saved: Path | None = None
            if not self.options.read_only:
                self._writable = True
                if torn is not None:
                    where = self.log.cut_torn_tail(torn)
                    saved = None if where is None else Path(where)
                    logger.warning("cut torn log tail (%s), saved to %s", torn.reason, saved)
            self.open_report = OpenReport(snapshot_seq, replayed, torn, saved)
        except BaseException:
            self.log.close()
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
        try:
            if not self.log.resume(header):
                return None
        except LogDivergedError as exc:
            if not self.log.shared:
                raise
            # A replica's snapshot is only a cache of the shared log: rebuild from the log.
            logger.warning("local snapshot ignored: %s", exc)
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
        self.snapshot_seq = header.seq
        return header.seq

    def _replay_tail(
        self, notify: bool = False, upto: int | None = None
    ) -> tuple[int, TornTail | None]:
        count = 0
        for item in self.log.entries(self.state.seq, self.state.last_hash, upto):
            if isinstance(item, TornTail):
                return count, item
            with self._lock:  # readers see each event wholly applied, or not at all
                self._apply_logged(item)
                count += 1
                if notify:
                    self.incoming_vectors = self.log.vectors(item.event.seq)
                    try:
                        self._notify(item.event)
                    finally:
                        self.incoming_vectors = {}
        return count, None

    def _apply_logged(self, item: LogEntry) -> None:
        try:
            self.state.apply(item.event)
        except LogCorruptedError:
            raise
        except DecigraphError as exc:  # hashes fine, but the event cannot apply: edited, re-hashed
            seq = item.event.seq
            reason = f"event {seq} does not apply to the events before it: {exc}"
            raise LogCorruptedError(self.log.location, seq, reason) from exc

    def refresh(self) -> int:
        """Apply events other writers appended since (a read-only store beside the writer, or
        any replica of a shared log); return how many.

        Listeners hear each applied event, as they would have heard the writer's commits, so
        indexes follow the log too. A shared log that no longer holds this replica's history
        (:class:`~graph.errors.LogDivergedError`) is re-read from the start.
        """
        with self._locks.exclusive():
            try:
                count, _ = self._replay_tail(notify=True)
            except LogDivergedError as exc:
                if not self.log.shared:
                    raise
                self._recover(exc)
                return 0
            return count

    def _recover(self, reason: Exception) -> None:
        """Rebuild the state from the shared log as it is now (it diverged from ours)."""
        logger.warning("the shared log diverged from this replica (%s); rebuilding", reason)
        with self._lock, gc_paused():
            self.adjacency = SparseAdjacency()
            self.risk = RiskIndex()
            self.state = GraphState(self.adjacency, self.risk)
            self.snapshot_seq = 0
            self._materialise()
            self._reset_derived()
        for listener in self.reset_listeners:
            try:
                listener()
            except Exception:
                logger.exception("a reset listener failed")

    def _reset_derived(self) -> None:
        """Drop caches derived from the state (subclasses extend)."""

    def close(self) -> None:
        self.stop_following()
        with self._locks.exclusive(), self._lock:
            try:
                if self._writable and self.state.seq > self.snapshot_seq:
                    self.write_snapshot()
            except (OSError, DecigraphError) as exc:  # the next open replays the log instead
                logger.warning("could not write a snapshot on close (%s); the log is intact", exc)
            finally:
                self._writable = False
                self.log.close()
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

    def read_events(self, first: int, last: int, limit: int | None = None) -> list[Event]:
        """Events ``first..last`` from the log, at most ``limit``, never past what this store
        has applied (so a reader sees the events its graph reflects). Takes no store lock."""
        last = min(last, self.state.seq)
        if limit is not None:
            last = min(last, first + limit - 1)
        return self.log.read(max(first, 1), last) if last >= first else []

    @property
    def log_offset(self) -> int:
        """Bytes of a file log read or written so far (a shared log: the applied seq)."""
        return int(getattr(self.log, "offset", self.state.seq))

    def log_head(self) -> int:
        """The seq of the log's last event now (a shared log's replicas may be ahead)."""
        if not self.log.shared:
            return self.state.seq
        return self.log.head().seq  # its own connection: never waits for a write section

    @property
    def last_committed_seq(self) -> int | None:
        """The seq of the last event this thread committed (``None``: none yet); the service
        resets it per request with :meth:`forget_last_commit`."""
        value: int | None = getattr(self._last_seq_by_thread, "seq", None)
        return value

    def forget_last_commit(self) -> None:
        self._last_seq_by_thread.seq = None

    # -- write sections ----------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[None]:
        """A write section: hold it around reading what a write depends on (the gate's view,
        a node's version) and the write itself.

        For a shared log, entering the outermost section locks the log's head in the database
        and applies what the other replicas appended, so the write is judged on the graph as
        it stands everywhere and nobody appends before it. Sections nest (inner ones add
        nothing); the head is released by the first append, or at the end.
        """
        with self._locks.exclusive():
            outermost = self._depth == 0
            self._depth += 1
            try:
                if outermost:
                    self._enter_section()
                with self._lock:
                    yield
            finally:
                self._depth -= 1
                if outermost:
                    self._leave_section()

    def _enter_section(self) -> None:
        if not (self.log.shared and self._writable) or self._section is not None:
            return
        for attempt in (1, 2):
            with self._locks.io_wait():  # another replica's write may hold the head for a while
                head = self.log.begin()
            if head is None:
                return
            self._section = head
            try:
                if head.seq < self.state.seq:
                    raise LogDivergedError(
                        self.log.location,
                        head.seq,
                        f"the log's head is event {head.seq}, behind this replica's "
                        f"{self.state.seq}",
                    )
                if head.seq > self.state.seq:
                    self._replay_tail(notify=True, upto=head.seq)
                return
            except LogDivergedError as exc:
                self._leave_section()
                if attempt == 2:
                    raise
                self._recover(exc)
            except BaseException:
                self._leave_section()
                raise

    def _leave_section(self) -> None:
        if self._section is not None:
            self._section = None
            self.log.end()

    def _clock(self) -> datetime:
        """What the next event is stamped with: the log's clock read under the head lock (a
        shared log's database), else this machine's (or the clock the store was given)."""
        if self._log_clock and self._section is not None and self._section.now is not None:
            return self._section.now
        return self._base_clock()

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
        if not self._writable:
            raise ReadOnlyStoreError(str(self.data_dir))
        with self.writing():
            self._enter_section()  # again, if an earlier append in this section released it
            try:
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
                vectors = self.vector_source() if self.log.shared and self.vector_source else {}
                try:
                    traced = span("store.append", op=event.op.value, seq=event.seq)
                    with self._locks.io_wait(), traced:  # an fsync, or a standby's commit
                        self.log.append(event, event.to_line(), vectors)
                except CommitOutcomeUnknownError as exc:
                    exc.node_id = next(iter(touched_ids(payload)), None)
                    raise
            finally:
                # An append ends the database's hold on the head (a failed one too); if the
                # event was refused before it, the transaction is rolled back here.
                self._leave_section()
            with self._lock:
                apply()
                self._last_seq_by_thread.seq = event.seq
                self._notify(event)
            every = self.options.snapshot_every
            if (
                every
                and self.state.seq - max(self.snapshot_seq, self._snapshot_failed_seq) >= every
            ):
                # The event is durable and applied: a snapshot is only a start-up shortcut, so
                # failing to write one (e.g. a full disk) must not turn this write into an error.
                try:
                    self.write_snapshot()
                except (OSError, DecigraphError) as exc:
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
            header = self.log.snapshot_header(self.state.seq, self.state.last_hash)
            try:
                with gc_paused():
                    write_snapshot(self.snapshot_path, self.graph, header)
            except OSError:
                # Give back the space a half-written temporary file holds (the old snapshot,
                # if any, is untouched: the new one only replaces it once complete).
                tmp = self.snapshot_path.with_name(self.snapshot_path.name + ".tmp")
                tmp.unlink(missing_ok=True)
                raise
            self.snapshot_seq = self.state.seq
            if self.options.keep_checkpoints:
                keep_checkpoint(self.snapshot_path, self.state.seq)

    def verify(self) -> VerifyReport:
        """Re-read the whole log, check the hash chain, replay it and compare with this graph."""
        with self._lock:
            return self.log.verify(self.state.seq, self.graph)

    # -- following a shared log ----------------------------------------------------------------
    def follow(self, poll: float = 1.0) -> None:
        """Apply the other replicas' events as they are committed (a shared log only): a
        background thread ``LISTEN``-s for their seq and polls every ``poll`` seconds."""
        if not self.log.shared or self._follower is not None:
            return
        from .eventstore.follower import Follower

        self._follower = Follower(self.log, self.refresh, poll)
        self._follower.start()

    def stop_following(self) -> None:
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.stop()
