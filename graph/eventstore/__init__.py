"""Where a store's event log lives: a file in the data directory, or PostgreSQL.

:func:`open_event_store` picks the implementation from a location: ``None`` (the data
directory's ``events.jsonl``) or a ``postgresql://`` URL (the shared log, imported only then).
"""

from __future__ import annotations

from pathlib import Path

from graph.errors import ValidationError
from graph.eventlog import FsyncPolicy

from .base import EventStore, EventVectors, Head
from .filelog import FileEventStore

__all__ = [
    "EventStore",
    "EventVectors",
    "FileEventStore",
    "Head",
    "is_postgres_url",
    "open_event_store",
]

LOG_NAME = "events.jsonl"


def is_postgres_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def open_event_store(
    data_dir: Path,
    location: str | None = None,
    *,
    fsync: FsyncPolicy = "always",
    commit_timeout: float = 10.0,
    lock_timeout: float = 10.0,
) -> EventStore:
    """The event store at ``location`` (not yet opened): ``None`` or ``""`` for the file log in
    ``data_dir``, a ``postgresql://`` URL for the shared log."""
    if not location:
        return FileEventStore(data_dir / LOG_NAME, fsync)
    if is_postgres_url(location):
        from .postgres import PostgresEventStore

        return PostgresEventStore(
            location, commit_timeout=commit_timeout, lock_timeout=lock_timeout
        )
    raise ValidationError(
        "event_store", "must be a postgresql:// URL (or unset for the file log in the data dir)"
    )
