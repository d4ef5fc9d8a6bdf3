"""The PostgreSQL test harness itself (tests/support/pgcluster.py), with psycopg only: a server
answers; a synchronous standby has what the primary committed; a commit waits for that standby;
after the primary is SIGKILLed the promoted standby has every committed row; and a teardown
leaves no process behind.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

if TYPE_CHECKING:
    from tests.support.pgcluster import PgCluster, PgDatabase, PgServer


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def test_a_server_starts_and_answers(pg_server: PgDatabase) -> None:
    from tests.support.pgcluster import PG_USER

    with psycopg.connect(pg_server.url) as conn:
        assert conn.execute("SELECT current_database(), current_user").fetchone() == (
            pg_server.dbname,
            PG_USER,
        )
        settings: dict[str, str] = dict(
            conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name IN"
                " ('fsync', 'synchronous_commit', 'wal_level', 'listen_addresses', 'port')"
            ).fetchall()
        )
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchone() == (0,)  # a fresh, empty database
    assert settings == {
        "fsync": "on",
        "synchronous_commit": "on",
        "wal_level": "replica",
        "listen_addresses": "127.0.0.1",
        "port": str(pg_server.server.port),
    }
    assert not pg_server.server.is_in_recovery()


def test_a_committed_row_is_on_the_synchronous_standby(pg_cluster: PgCluster) -> None:
    primary, standby = pg_cluster.primary, pg_cluster.standby
    assert primary.query("SELECT application_name, sync_state FROM pg_stat_replication") == [
        ("standby1", "sync")
    ]
    assert standby.is_in_recovery()
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (seq int PRIMARY KEY, body text)")
        conn.execute("INSERT INTO events VALUES (1, 'first')")
    pg_cluster.wait_replayed()  # the commit waited for the standby's flush, not its replay
    with psycopg.connect(pg_cluster.standby_url, autocommit=True) as conn:
        assert conn.execute("SELECT * FROM events").fetchall() == [(1, "first")]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("INSERT INTO events VALUES (2, 'on a standby')")


def test_a_commit_waits_while_the_standbys_walsender_is_stopped(pg_cluster: PgCluster) -> None:
    primary = pg_cluster.primary
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (seq int PRIMARY KEY)")
    [walsender] = primary.walsender_pids("standby1")
    outcome: list[object] = []
    writer = psycopg.connect(pg_cluster.url, autocommit=True)

    def commit() -> None:
        try:
            writer.execute("INSERT INTO events VALUES (1)")
            outcome.append("committed")
        except psycopg.Error as exc:  # pragma: no cover - reported by the assertion below
            outcome.append(exc)

    thread = threading.Thread(target=commit, daemon=True)
    os.kill(walsender, signal.SIGSTOP)
    try:
        thread.start()
        thread.join(2.0)
        assert thread.is_alive(), f"the commit returned with the walsender stopped: {outcome}"
        waiting = primary.query(
            "SELECT wait_event FROM pg_stat_activity WHERE query LIKE 'INSERT INTO events%'"
        )
        assert waiting == [("SyncRep",)]
        # Flushed locally but not acknowledged: nobody else sees it yet.
        with psycopg.connect(pg_cluster.url) as reader:
            assert reader.execute("SELECT count(*) FROM events").fetchone() == (0,)
    finally:
        os.kill(walsender, signal.SIGCONT)
    thread.join(10.0)
    writer.close()
    assert outcome == ["committed"]
    pg_cluster.wait_replayed()
    with psycopg.connect(pg_cluster.standby_url) as conn:
        assert conn.execute("SELECT seq FROM events").fetchall() == [(1,)]


def test_the_promoted_standby_has_every_row_committed_before_the_primary_was_killed(
    pg_cluster: PgCluster,
) -> None:
    primary, standby = pg_cluster.primary, pg_cluster.standby
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (seq int PRIMARY KEY)")
        for seq in range(1, 51):
            conn.execute("INSERT INTO events VALUES (%s)", (seq,))  # each one acknowledged
        primary.kill(signal.SIGKILL)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(pg_cluster.url, connect_timeout=2).close()
    standby.promote()
    assert not standby.is_in_recovery()
    with psycopg.connect(pg_cluster.standby_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*), max(seq) FROM events").fetchone() == (50, 50)
        conn.execute("INSERT INTO events VALUES (51)")  # writable, and no standby to wait for
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (51,)


def test_a_shared_server_killed_by_a_test_is_restarted_for_the_next(
    pg_shared_server: PgServer, request: pytest.FixtureRequest
) -> None:
    pg_shared_server.kill(signal.SIGKILL)
    assert not pg_shared_server.running
    database: PgDatabase = request.getfixturevalue("pg_server")  # as the next test's would
    assert database.server is pg_shared_server
    with psycopg.connect(database.url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_teardown_leaves_no_process_or_directory_even_after_a_crash() -> None:
    from tests.support.pgcluster import start_server

    started = time.monotonic()
    with start_server("crashing") as server:
        backend = server.connect()
        pids = [pid for pid, _start in server.processes()]
        [backend_pid] = server.query(
            "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        )[0]
        os.kill(backend_pid, signal.SIGSTOP)  # cannot notice its postmaster's death by itself
        server.kill(signal.SIGKILL)
        base = server.base
    backend.close()
    assert backend_pid in pids
    assert [pid for pid in pids if _alive(pid)] == []
    assert not base.exists()
    assert time.monotonic() - started < 15
