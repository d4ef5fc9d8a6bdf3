"""Following a shared log: apply the other replicas' events as they are committed."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from .base import EventStore

logger = logging.getLogger(__name__)


class Follower:
    """A daemon thread that ``LISTEN``-s on the log's channel and calls ``refresh`` on every
    notification and at least every ``poll`` seconds (a notification can be lost with its
    connection; the poll bounds the lag then). It never dies of a database error: it
    reconnects, and applies what was committed while it was away."""

    def __init__(self, log: EventStore, refresh: Callable[[], int], poll: float = 1.0) -> None:
        from .postgres import PostgresEventStore

        if not isinstance(log, PostgresEventStore):
            raise TypeError("only a shared log can be followed")
        self.log = log
        self.refresh = refresh
        self.poll = poll
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="decigraph-follower", daemon=True)
        #: When a refresh last succeeded (``time.monotonic()``), and the errors since.
        self.refreshed_at: float | None = None
        self.last_error: str | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        while not self._stop.is_set():
            try:
                if conn is None or conn.closed:
                    conn = self.log.listener()
                else:
                    self.log.wait(conn, self.poll)
                self.refresh()  # on (re)connect: whatever was committed while not listening
                self.refreshed_at, self.last_error = time.monotonic(), None
            except Exception as exc:  # the database went away: retry, never die
                self.last_error = f"{type(exc).__name__}: {exc}"
                logger.warning("following the shared log: %s; retrying", exc)
                if conn is not None:
                    with contextlib.suppress(psycopg.Error):  # already broken
                        conn.close()
                conn = None
                self._stop.wait(min(self.poll, 1.0))
        if conn is not None:
            conn.close()
