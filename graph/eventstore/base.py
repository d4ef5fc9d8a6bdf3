"""What a store needs of the place its event log lives: the :class:`EventStore` interface.

Two implementations: :class:`~graph.eventstore.filelog.FileEventStore` (the JSONL file in the
data directory; one writer, guarded by the directory lock) and
:class:`~graph.eventstore.postgres.PostgresEventStore` (a table in PostgreSQL shared by any
number of replicas, each of which may write). :class:`~graph.persistence.LoggedGraph` drives
either the same way:

* at open, :meth:`EventStore.resume` says whether a local snapshot covers a prefix of this log,
  then :meth:`EventStore.entries` yields the verified events after it;
* a write runs in a *write section* (:meth:`EventStore.begin`): for a shared log this locks the
  log's head, so the replica first applies what the others appended, judges the write on the
  graph as it now stands, and nobody can append in between; :meth:`EventStore.append` makes
  one event durable (for PostgreSQL: committed, and with a synchronous standby replicated) and
  ends the section's hold on the head;
* :meth:`EventStore.verify` re-reads the whole log and replays it.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime

import networkx as nx

from graph.errors import LogCorruptedError
from graph.eventlog import LogEntry, TornTail, check_line
from graph.events import Event
from graph.snapshot import SnapshotHeader
from graph.verification import VerifyReport

#: Vectors stored with an event (shared logs): SHA-256 hex of the embedded text -> float32 bytes.
EventVectors = Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class Head:
    """The log's last event (``seq`` 0 and the genesis hash when empty) and, for a shared log,
    the database's clock read under the head lock (events are stamped with it)."""

    seq: int
    hash: str
    now: datetime | None = None


class EventStore(abc.ABC):
    """Where one store's events live (see the module docstring)."""

    #: Several processes may append (each write section locks the head); the store must
    #: catch up before it judges a write, and follow the others' appends (:meth:`entries`).
    shared: bool = False
    #: Where the log is, for messages (a path, or a URL without its password).
    location: str = ""

    @abc.abstractmethod
    def open(self, read_only: bool) -> None:
        """Connect or open files; create an empty log if there is none (unless read-only)."""

    @abc.abstractmethod
    def resume(self, header: SnapshotHeader) -> bool:
        """Whether the log's first ``header.seq`` events are the ones the snapshot was built
        from; if so, :meth:`entries` continues after them.

        ``False`` when the snapshot cannot be used but nothing is wrong with the log (replay
        it all); raises :class:`~graph.errors.LogCorruptedError` when acknowledged events the
        snapshot covered were changed, lost or replaced.
        """

    @abc.abstractmethod
    def entries(
        self, after_seq: int, last_hash: str, upto: int | None = None
    ) -> Iterator[LogEntry | TornTail]:
        """The verified events after ``after_seq`` (whose hash is ``last_hash``), in order, up to
        ``upto`` when given; a final :class:`TornTail` when a file log ends in a torn write.

        Raises :class:`~graph.errors.LogCorruptedError` naming the first event that fails its
        hash chain.
        """

    @abc.abstractmethod
    def lines(self, first: int, last: int) -> list[tuple[int, bytes]]:
        """The stored lines of events ``first..last`` (as many as exist), as ``(seq, line)``.

        Reads what is committed without moving the position :meth:`entries` continues from;
        the caller bounds ``last`` by what it has applied (see :meth:`read`).
        """

    def read(self, first: int, last: int) -> list[Event]:
        """Events ``first..last`` (as many as exist), each checked: its own hash, its seq, and
        its link to the one before it in the range. For history and change feeds: random
        access that leaves the replay position alone.

        Raises :class:`~graph.errors.LogCorruptedError` naming the first event that fails.
        """
        events: list[Event] = []
        for seq, line in self.lines(first, last):
            prev = events[-1].hash if events else _prev_of(line)
            checked = check_line(line, first + len(events), prev)
            if seq != first + len(events) or isinstance(checked, str):
                reason = checked if isinstance(checked, str) else f"stored at seq {seq}"
                raise LogCorruptedError(self.location, first + len(events), reason)
            events.append(checked)
        return events

    def vectors(self, seq: int) -> EventVectors:
        """The vectors stored with event ``seq`` (only a shared log keeps them)."""
        return {}

    @abc.abstractmethod
    def find(self, event_id: str) -> LogEntry | None:
        """The committed event with this id, or ``None``."""

    def head_locked(self) -> bool:
        """Whether a write section holds the head now (only a shared log has one)."""
        return False

    def lookup_vectors(self, text_shas: list[str]) -> dict[str, bytes]:
        """Vectors stored for these texts by any writer (only a shared log keeps them)."""
        return {}

    def cut_torn_tail(self, torn: TornTail) -> str | None:
        """Remove a torn tail :meth:`entries` reported; where its bytes were saved."""
        return None

    def begin(self) -> Head | None:
        """Start a write section: for a shared log, lock the head and return it (the caller
        applies the events up to it before judging the write). ``None``: nothing to do."""
        return None

    def end(self) -> None:  # noqa: B027 - a no-op for logs without write sections
        """End a write section without appending (a refused write): release the head."""

    @abc.abstractmethod
    def append(self, event: Event, line: bytes, vectors: EventVectors) -> None:
        """Make ``event`` (``line`` is its canonical form) durable, or raise having written
        nothing that could be read back as acknowledged. For a shared log this also ends the
        write section (the head is released)."""

    @abc.abstractmethod
    def snapshot_header(self, seq: int, last_hash: str) -> SnapshotHeader:
        """The header a snapshot taken now (after ``seq``) records, making every event it
        covers durable first."""

    @abc.abstractmethod
    def verify(self, applied: int, live: nx.MultiDiGraph[str]) -> VerifyReport:
        """Re-read the first ``applied`` events, check the chain, replay and compare."""

    @abc.abstractmethod
    def head(self) -> Head:
        """The log's head as stored now (without locking it)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release files and connections (a write section in progress is abandoned)."""


def _prev_of(line: bytes) -> str:
    """The ``prev`` a line claims (the first event of a range has no predecessor in it; its
    own hash still has to match its content, which covers ``prev``)."""
    try:
        return Event.from_line(line).prev
    except ValueError:
        return ""
