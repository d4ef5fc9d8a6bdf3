"""The event log as a PostgreSQL table shared by any number of replicas, each of which writes.

Schema (``decigraph``; created on first connect, under an advisory lock so replicas starting
together do not race)::

    events(seq bigint primary key, id text unique, prev text unique, hash text unique,
           line bytea)          -- the byte-exact canonical line of graph.events
    head(one bool primary key, seq bigint, hash text)   -- one row: the last event
    vectors(seq bigint references events, text_sha text, vector bytea)  -- embeddings

``prev`` is unique, so two events can never follow the same one: the log cannot fork.

A write section (:meth:`PostgresEventStore.begin`) is one transaction that starts with
``SELECT ... FROM head FOR UPDATE``: the row lock replaces the file log's ``flock`` (a dead
replica's lock and its uncommitted insert vanish together). The caller applies the events it
had not seen, judges the write, then :meth:`~PostgresEventStore.append` inserts the event with
``seq = head + 1`` (not a sequence: commit order must equal seq order, so a tailer never sees
a gap), updates the head, ``pg_notify``-s the seq and commits.

The commit is never cancelled: PostgreSQL answers a cancelled wait for synchronous replication
with success and a warning. It is awaited for ``commit_timeout`` seconds; then the connection
is dropped and :class:`~graph.errors.CommitOutcomeUnknownError` names the event id, which the
caller resolves later (:meth:`PostgresEventStore.find`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import networkx as nx
import psycopg

from graph.errors import (
    CommitOutcomeUnknownError,
    EventStoreBusyError,
    EventStoreUnavailableError,
    LogCorruptedError,
    LogDivergedError,
)
from graph.eventlog import LogEntry, TornTail, check_line
from graph.events import GENESIS_HASH, Event
from graph.snapshot import SnapshotHeader
from graph.verification import VerifyReport, verify_events

from .base import EventStore, EventVectors, Head
from .pgsql import SCHEMA, fetch_lines, reason, redact, send_and_wait

logger = logging.getLogger(__name__)

CHANNEL = "decigraph_events"
SCHEMA_LOCK = 0x6465636967726170  # pg_advisory_xact_lock key while creating the schema
_BATCH = 2_000  # events fetched per query while catching up


class PostgresEventStore(EventStore):
    """The shared log in the database at ``url`` (``postgresql://user:pass@host:port/db``).

    ``commit_timeout``: seconds a commit may wait (for a synchronous standby) before its
    outcome is reported unknown. ``lock_timeout``: seconds a write waits for another replica's
    write section before :class:`EventStoreBusyError`. ``connect_timeout``: seconds per
    connection attempt. One connection does the work; the caller serialises its use (the
    store's lock).
    """

    shared = True

    def __init__(
        self,
        url: str,
        *,
        commit_timeout: float = 10.0,
        lock_timeout: float = 10.0,
        connect_timeout: float = 5.0,
    ) -> None:
        self.url = url
        self.location = redact(url)
        self.commit_timeout = commit_timeout
        self.lock_timeout = lock_timeout
        self.connect_timeout = connect_timeout
        self._conn: psycopg.Connection[Any] | None = None
        # Reading the head (readiness, lag) has a connection of its own, so it never waits
        # behind a write section that is waiting for its commit.
        self._head_conn: psycopg.Connection[Any] | None = None
        self._head_lock = threading.Lock()
        self._in_section = False
        self._vectors: dict[int, dict[str, bytes]] = {}

    # -- connections -------------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=max(1, round(self.connect_timeout)),
                application_name="decigraph",
            )
        except psycopg.Error as exc:
            raise EventStoreUnavailableError(self.location, reason(exc)) from None
        # Never let the server cancel a statement on its own: a cancelled COMMIT waiting for
        # a synchronous standby would report success. Lock waits are bounded instead.
        conn.execute("SET statement_timeout = 0")
        conn.execute(f"SET lock_timeout = {int(self.lock_timeout * 1000)}")
        return conn

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        return self._conn

    def _drop(self) -> None:
        """Forget the connection (after an error its state is unknown); reconnect next time."""
        conn, self._conn, self._in_section = self._conn, None, False
        if conn is not None:
            with contextlib.suppress(psycopg.Error):  # already broken
                conn.close()

    def _run(self, fn: Callable[[psycopg.Connection[Any]], Any]) -> Any:
        """``fn(conn)`` outside a write section; a lost connection is retried once."""
        for attempt in (1, 2):
            conn = self._connection()
            try:
                return fn(conn)
            except psycopg.OperationalError as exc:
                self._drop()
                if attempt == 2:
                    raise EventStoreUnavailableError(self.location, reason(exc)) from None
            except psycopg.Error as exc:  # e.g. no permission to create the tables
                raise EventStoreUnavailableError(self.location, reason(exc)) from None
        raise AssertionError("unreachable")

    def open(self, read_only: bool) -> None:
        if read_only:
            self._run(lambda conn: None)
            return

        def create(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                for statement in SCHEMA:
                    params = {"genesis": GENESIS_HASH} if "%(genesis)s" in statement else None
                    conn.execute(statement, params)

        self._run(create)

    def close(self) -> None:
        self._drop()
        with self._head_lock:
            if self._head_conn is not None:
                self._head_conn.close()
                self._head_conn = None

    # -- reading -----------------------------------------------------------------------------
    def _aside(self, fn: Callable[[psycopg.Connection[Any]], Any]) -> Any:
        """``fn(conn)`` on a connection of its own: reads that must not wait behind a write
        section (readiness, the head, resolving an event) while a commit waits."""
        with self._head_lock:
            for attempt in (1, 2):
                if self._head_conn is None or self._head_conn.closed:
                    self._head_conn = self._connect()
                try:
                    return fn(self._head_conn)
                except psycopg.OperationalError as exc:
                    self._head_conn.close()
                    self._head_conn = None
                    if attempt == 2:
                        raise EventStoreUnavailableError(self.location, reason(exc)) from None
        raise AssertionError("unreachable")

    def head(self) -> Head:
        def read(conn: psycopg.Connection[Any]) -> Head:
            row = conn.execute("SELECT seq, hash FROM decigraph.head").fetchone()
            return Head(0, GENESIS_HASH) if row is None else Head(int(row[0]), str(row[1]))

        found: Head = self._aside(read)
        return found

    def lookup_vectors(self, text_shas: list[str]) -> dict[str, bytes]:
        """Vectors any replica stored for these texts (SHA-256 hex of each embedded text)."""
        found: dict[str, bytes] = {}

        def read(conn: psycopg.Connection[Any]) -> None:
            for start in range(0, len(text_shas), 5_000):
                rows = conn.execute(
                    "SELECT DISTINCT ON (text_sha) text_sha, vector FROM decigraph.vectors "
                    "WHERE text_sha = ANY(%s) ORDER BY text_sha, seq DESC",
                    (text_shas[start : start + 5_000],),
                ).fetchall()
                found.update((str(sha), bytes(vector)) for sha, vector in rows)

        if text_shas:
            self._run(read)
        return found

    def resume(self, header: SnapshotHeader) -> bool:
        def at(conn: psycopg.Connection[Any]) -> tuple[int, str | None]:
            head = conn.execute("SELECT seq FROM decigraph.head").fetchone()
            row = conn.execute(
                "SELECT hash FROM decigraph.events WHERE seq = %s", (header.seq,)
            ).fetchone()
            return (0 if head is None else int(head[0])), (None if row is None else str(row[0]))

        if header.seq == 0:
            return True
        head_seq, stored = self._run(at)
        if stored == header.last_hash:
            return True
        if stored is None and head_seq < header.seq:
            raise LogDivergedError(
                self.location,
                head_seq + 1,
                f"the log ends after event {head_seq}, but the local snapshot covers "
                f"{header.seq} events: the database lost acknowledged events (restored from "
                "an older backup, or a failover to a standby that was not synchronous)",
            )
        raise LogDivergedError(
            self.location,
            header.seq,
            f"event {header.seq} is not the one the local snapshot was taken after: the "
            "snapshot belongs to another log, or the database's history was replaced",
        )

    def entries(
        self, after_seq: int, last_hash: str, upto: int | None = None
    ) -> Iterator[LogEntry | TornTail]:
        if after_seq > 0:
            self._check_position(after_seq, last_hash)
        expected_seq, expected_prev = after_seq + 1, last_hash
        while True:
            limit = _BATCH if upto is None else min(_BATCH, upto - expected_seq + 1)
            if limit <= 0:
                return
            rows = self._fetch(expected_seq, limit)
            for seq, line in rows:
                problem = check_line(line, expected_seq, expected_prev)
                if seq != expected_seq or isinstance(problem, str):
                    reason = problem if isinstance(problem, str) else f"row seq {seq}"
                    raise LogCorruptedError(self.location, expected_seq, reason)
                yield LogEntry(problem, seq)
                expected_seq, expected_prev = seq + 1, problem.hash
            if len(rows) < limit:
                return

    def _check_position(self, seq: int, last_hash: str) -> None:
        """Raise :class:`LogDivergedError` unless the log's event ``seq`` has ``last_hash``
        (after a reconnect, a failover or a restore, the replica's history must still be the
        log's own)."""

        def read(conn: psycopg.Connection[Any]) -> str | None:
            row = conn.execute(
                "SELECT hash FROM decigraph.events WHERE seq = %s", (seq,)
            ).fetchone()
            return None if row is None else str(row[0])

        if not self._in_section:
            stored = self._run(read)
        else:
            try:
                stored = read(self._connection())
            except psycopg.OperationalError as exc:  # e.g. the primary went away mid-section
                self._drop()
                raise EventStoreUnavailableError(self.location, reason(exc)) from None
        if stored != last_hash:
            what = "is missing" if stored is None else "has another hash"
            raise LogDivergedError(
                self.location,
                seq,
                f"event {seq}, which this replica applied, {what} in the shared log",
            )

    def lines(self, first: int, last: int) -> list[tuple[int, bytes]]:
        return list(self._run(lambda conn: fetch_lines(conn, first, last)))

    def _fetch(self, first: int, limit: int) -> list[tuple[int, bytes]]:
        last = first + limit - 1

        def read(conn: psycopg.Connection[Any]) -> list[tuple[int, bytes]]:
            rows = conn.execute(
                "SELECT seq, line FROM decigraph.events WHERE seq BETWEEN %s AND %s ORDER BY seq",
                (first, last),
            ).fetchall()
            vectors = conn.execute(
                "SELECT seq, text_sha, vector FROM decigraph.vectors WHERE seq BETWEEN %s AND %s",
                (first, last),
            ).fetchall()
            self._vectors = {}
            for seq, sha, vector in vectors:
                self._vectors.setdefault(int(seq), {})[str(sha)] = bytes(vector)
            return [(int(seq), bytes(line)) for seq, line in rows]

        if self._in_section:
            try:
                result: list[tuple[int, bytes]] = read(self._connection())
            except psycopg.OperationalError as exc:
                self._drop()
                raise EventStoreUnavailableError(self.location, reason(exc)) from None
            return result
        fetched: list[tuple[int, bytes]] = self._run(read)
        return fetched

    def vectors(self, seq: int) -> EventVectors:
        return self._vectors.get(seq, {})

    def head_locked(self) -> bool:
        """Whether a write section holds the head now: an event not found may then still be
        committing (waiting for its standby), so its outcome is not settled yet."""

        def probe(conn: psycopg.Connection[Any]) -> bool:
            try:
                with conn.transaction():
                    conn.execute("SELECT 1 FROM decigraph.head FOR KEY SHARE NOWAIT")
            except psycopg.errors.LockNotAvailable:
                return True
            return False

        locked: bool = self._aside(probe)
        return locked

    def find(self, event_id: str) -> LogEntry | None:
        def read(conn: psycopg.Connection[Any]) -> tuple[int, bytes] | None:
            row = conn.execute(
                "SELECT seq, line FROM decigraph.events WHERE id = %s", (event_id,)
            ).fetchone()
            return None if row is None else (int(row[0]), bytes(row[1]))

        found: tuple[int, bytes] | None = self._aside(read)
        if found is None:
            return None
        return LogEntry(Event.from_line(found[1]), found[0])

    # -- writing -----------------------------------------------------------------------------
    def begin(self) -> Head:
        if self._in_section:
            raise AssertionError("write sections do not nest in the event store")
        for attempt in (1, 2):
            conn = self._connection()
            try:
                # One round trip: the transaction and the head's row lock.
                self._in_section = True
                cur = conn.execute(
                    "BEGIN; SELECT seq, hash, clock_timestamp() FROM decigraph.head FOR UPDATE"
                )
                cur.nextset()
                row = cur.fetchone()
            except psycopg.errors.LockNotAvailable:
                self._rollback()
                raise EventStoreBusyError(self.location, self.lock_timeout) from None
            except psycopg.OperationalError as exc:
                self._drop()
                if attempt == 2:
                    raise EventStoreUnavailableError(self.location, reason(exc)) from None
                continue
            if row is None:
                self._rollback()
                raise LogCorruptedError(self.location, 0, "the head row is missing")
            return Head(int(row[0]), str(row[1]), row[2])
        raise AssertionError("unreachable")

    def _rollback(self) -> None:
        if self._conn is None:
            self._in_section = False
            return
        try:
            self._conn.execute("ROLLBACK")
        except psycopg.Error:
            self._drop()
        self._in_section = False

    def end(self) -> None:
        if self._in_section:
            self._rollback()

    def append(self, event: Event, line: bytes, vectors: EventVectors) -> None:
        if not self._in_section:
            raise AssertionError("append outside a write section")
        conn = self._connection()
        shas = sorted(vectors)
        try:
            # One round trip: the event, its vectors, the head and the notification (each
            # data-modifying WITH runs exactly once, whatever the final SELECT reads).
            conn.execute(
                "WITH event AS (INSERT INTO decigraph.events (seq, id, prev, hash, line) "
                "VALUES (%(seq)s, %(id)s, %(prev)s, %(hash)s, %(line)s)), "
                "vectors AS (INSERT INTO decigraph.vectors (seq, text_sha, vector) "
                "SELECT %(seq)s, sha, vector FROM unnest(%(shas)s::text[], %(vectors)s::bytea[]) "
                "AS v (sha, vector)), "
                "head AS (UPDATE decigraph.head SET seq = %(seq)s, hash = %(hash)s) "
                "SELECT pg_notify(%(channel)s, %(seq)s::text)",
                {
                    "seq": event.seq,
                    "id": event.id,
                    "prev": event.prev,
                    "hash": event.hash,
                    "line": line,
                    "shas": shas,
                    "vectors": [vectors[sha] for sha in shas],
                    "channel": CHANNEL,
                },
            )
        except psycopg.OperationalError as exc:
            self._drop()  # the transaction died with the connection: nothing was written
            raise EventStoreUnavailableError(self.location, reason(exc)) from None
        except psycopg.Error as exc:
            self._rollback()
            raise LogCorruptedError(self.location, event.seq, reason(exc)) from None
        self._commit(conn, event)

    def append_batch(self, events: list[tuple[Event, bytes]]) -> None:
        """Append several events in one transaction (a copy of another log): the head must be
        the one the first event follows."""
        if not events:
            return
        first, last = events[0][0], events[-1][0]
        head = self.begin()
        if (head.seq, head.hash) != (first.seq - 1, first.prev):
            self.end()
            raise LogDivergedError(
                self.location, head.seq, f"the head moved to {head.seq} while copying"
            )
        conn = self._connection()
        try:
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO decigraph.events (seq, id, prev, hash, line) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    [(e.seq, e.id, e.prev, e.hash, line) for e, line in events],
                )
            conn.execute("UPDATE decigraph.head SET seq = %s, hash = %s", (last.seq, last.hash))
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(last.seq)))
        except psycopg.OperationalError as exc:
            self._drop()
            raise EventStoreUnavailableError(self.location, reason(exc)) from None
        except psycopg.Error as exc:
            self._rollback()
            raise LogCorruptedError(self.location, first.seq, reason(exc)) from None
        self._commit(conn, last)

    def _commit(self, conn: psycopg.Connection[Any], event: Event) -> None:
        """COMMIT, waited for at most ``commit_timeout`` seconds, never cancelled."""
        notices: list[str] = []

        def notice(diag: psycopg.errors.Diagnostic) -> None:
            notices.append(diag.message_primary or "")

        conn.add_notice_handler(notice)
        pgconn = conn.pgconn
        try:
            status = send_and_wait(pgconn, b"COMMIT", self.commit_timeout)
        except TimeoutError:
            self._drop()  # the server keeps waiting for its standby; we stop listening
            raise CommitOutcomeUnknownError(
                self.location,
                event.id,
                event.seq,
                f"the commit did not complete within {self.commit_timeout:g} s (is the "
                "synchronous standby reachable?)",
            ) from None
        except (OSError, psycopg.Error) as exc:
            self._drop()
            raise CommitOutcomeUnknownError(
                self.location,
                event.id,
                event.seq,
                f"the connection failed while committing ({reason(exc)})",
            ) from None
        finally:
            if not conn.closed:
                conn.remove_notice_handler(notice)
        self._in_section = False
        if status is not None:
            self._drop()
            raise CommitOutcomeUnknownError(self.location, event.id, event.seq, status)
        if any("synchronous replication" in message for message in notices):
            # Someone cancelled the wait (pg_cancel_backend): committed on the primary only.
            raise CommitOutcomeUnknownError(self.location, event.id, event.seq, "; ".join(notices))

    def snapshot_header(self, seq: int, last_hash: str) -> SnapshotHeader:
        # The database is the witness: resume() checks the hash stored at ``seq``.
        return SnapshotHeader(seq, 0, last_hash, "")

    def verify(self, applied: int, live: nx.MultiDiGraph[str]) -> VerifyReport:
        return verify_events(self.entries(0, GENESIS_HASH, upto=applied), applied, live)

    # -- following ---------------------------------------------------------------------------
    def wait(self, conn: psycopg.Connection[Any], timeout: float) -> bool:
        """Wait on a ``LISTEN`` connection (:meth:`listener`) up to ``timeout`` seconds; whether
        a notification arrived."""
        for _ in conn.notifies(timeout=timeout, stop_after=1):
            return True
        return False

    def listener(self) -> psycopg.Connection[Any]:
        """A new connection listening on the log's channel (not through a pooling proxy)."""
        conn = self._connect()
        conn.execute(f"LISTEN {CHANNEL}")
        return conn
