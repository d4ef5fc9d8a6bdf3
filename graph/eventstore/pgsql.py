"""PostgreSQL details of the shared log: its schema, a commit awaited without ever being
cancelled, and messages without passwords."""

from __future__ import annotations

import select
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import pq

SCHEMA = (
    """CREATE SCHEMA IF NOT EXISTS decigraph""",
    """
CREATE TABLE IF NOT EXISTS decigraph.events (
    seq bigint PRIMARY KEY CHECK (seq > 0),
    id text NOT NULL UNIQUE,
    prev text NOT NULL UNIQUE,
    hash text NOT NULL UNIQUE,
    line bytea NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS decigraph.head (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    seq bigint NOT NULL,
    hash text NOT NULL
)""",
    """INSERT INTO decigraph.head (one, seq, hash) VALUES (true, 0, %(genesis)s)
    ON CONFLICT (one) DO NOTHING""",
    """CREATE TABLE IF NOT EXISTS decigraph.vectors (
    seq bigint NOT NULL REFERENCES decigraph.events (seq),
    text_sha text NOT NULL,
    vector bytea NOT NULL,
    PRIMARY KEY (seq, text_sha)
)""",
    """CREATE INDEX IF NOT EXISTS vectors_by_text ON decigraph.vectors (text_sha)""",
)


def redact(url: str) -> str:
    """``url`` without its password (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def send_and_wait(pgconn: pq.abc.PGconn, query: bytes, timeout: float) -> str | None:
    """Send ``query`` and wait for its result for ``timeout`` seconds without ever cancelling
    it; ``None`` when it succeeded, else the server's error. Raises ``TimeoutError``."""
    deadline = time.monotonic() + timeout
    pgconn.send_query(query)
    while pgconn.flush():
        wait_socket(pgconn.socket, deadline, write=True)
    while True:
        pgconn.consume_input()
        if not pgconn.is_busy():
            break
        wait_socket(pgconn.socket, deadline)
    error: str | None = None
    while (result := pgconn.get_result()) is not None:
        if result.status not in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK):
            raw = result.error_field(pq.DiagnosticField.MESSAGE_PRIMARY)
            error = raw.decode("utf-8", "replace") if raw else "the commit failed"
    if pgconn.status != pq.ConnStatus.OK:
        raise OSError("the connection was lost")
    return error


def wait_socket(sock: int, deadline: float, write: bool = False) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    readers, writers = ([], [sock]) if write else ([sock], [])
    ready = select.select(readers, writers, [], remaining)
    if not any(ready):
        raise TimeoutError


def reason(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def fetch_lines(conn: psycopg.Connection[Any], first: int, last: int) -> list[tuple[int, bytes]]:
    """Events ``first..last`` as ``(seq, line)``, in order."""
    rows = conn.execute(
        "SELECT seq, line FROM decigraph.events WHERE seq BETWEEN %s AND %s ORDER BY seq",
        (first, last),
    ).fetchall()
    return [(int(seq), bytes(line)) for seq, line in rows]
