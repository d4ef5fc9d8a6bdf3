"""The shared event log on a real PostgreSQL: several replicas (stores) on one database.

Each test gets a fresh database (``pg_server``) or its own primary with a synchronous standby
(``pg_cluster``, for what only replication shows: a commit whose outcome is unknown).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

from graph.drafts import DecisionDraft
from graph.errors import (
    CommitOutcomeUnknownError,
    EventStoreBusyError,
    EventStoreUnavailableError,
    LogCorruptedError,
    ValidationError,
    VersionConflictError,
)
from graph.eventstore import open_event_store
from graph.eventstore.copy import copy_log
from graph.eventstore.postgres import PostgresEventStore
from graph.store import DecisionStore, StoreOptions
from retrieval.index import DualIndex
from tests.support.fakes import HashEmbedder, MemoryVectorIndex

if TYPE_CHECKING:
    from tests.support.pgcluster import PgCluster, PgDatabase

DECISIONS = [
    "Bill enterprise customers annually with net-30 invoices",
    "Run the nightly ETL on spot instances with a checkpoint every ten minutes",
    "Rotate the signing keys for session tokens every 90 days",
    "Hire two backend engineers before expanding the on-call rotation",
    "Serve the ranking model from CPU replicas until p95 latency exceeds 80 ms",
    "Keep customer PII in the eu-west region only",
    "Adopt trunk-based development with feature flags for unfinished work",
    "Cache product catalogue reads in Redis with a five-minute TTL",
]

Opener = Callable[..., DecisionStore]


@pytest.fixture
def replicas(tmp_path: Path, pg_server: PgDatabase) -> Iterator[Opener]:
    """Open replicas of the test's database, each in a data directory of its own."""
    opened: list[DecisionStore] = []

    def open_replica(name: str, **options: object) -> DecisionStore:
        store = DecisionStore.open(
            tmp_path / name, StoreOptions(event_store=pg_server.url, fsync="never", **options)
        )
        opened.append(store)
        return store

    yield open_replica
    for store in opened:
        store.close()


def _line_rows(url: str) -> list[tuple[int, bytes]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT seq, line FROM decigraph.events ORDER BY seq").fetchall()
    return [(int(seq), bytes(line)) for seq, line in rows]


def test_replicas_take_turns_and_agree(replicas: Opener, pg_server: PgDatabase) -> None:
    a, b = replicas("a"), replicas("b")
    first = a.record(DecisionDraft(text=DECISIONS[0]), "agent-a")
    # B has not heard of A's event: its write section applies it first, then appends after it.
    second = b.record(DecisionDraft(text=DECISIONS[1]), "agent-b")
    assert b.seq == 2
    assert first.id in b.graph
    third = a.record(DecisionDraft(text=DECISIONS[2]), "agent-a")
    assert a.seq == 3
    assert second.id in a.graph
    b.refresh()
    assert a.graph_hash() == b.graph_hash()
    assert {third.id, second.id, first.id} <= set(b.graph)
    # The stored lines are the canonical lines, byte for byte, chained.
    rows = _line_rows(pg_server.url)
    assert [seq for seq, _ in rows] == [1, 2, 3]
    assert a.verify().ok
    assert b.verify().ok


def test_events_are_stamped_with_the_database_clock(replicas: Opener) -> None:
    store = replicas("a")
    before = datetime.now(UTC)
    node = store.record(DecisionDraft(text=DECISIONS[3]), "agent")
    after = datetime.now(UTC)
    assert before.timestamp() - 5 <= node.created_at.timestamp() <= after.timestamp() + 5


def test_replicas_opening_together_create_the_schema_once(replicas: Opener) -> None:
    stores: list[DecisionStore] = []
    errors: list[BaseException] = []

    def open_one(name: str) -> None:
        try:
            stores.append(replicas(name))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one, args=(f"r{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stores[0].record(DecisionDraft(text=DECISIONS[4]), "agent")
    for store in stores[1:]:
        store.refresh()
        assert store.seq == 1


def test_expected_version_has_one_winner_across_replicas(replicas: Opener) -> None:
    a, b = replicas("a"), replicas("b")
    node = a.record(DecisionDraft(text=DECISIONS[5], confidence=0.6), "agent-a")
    b.refresh()
    a.update(node.id, {"confidence": 0.7}, "agent-a", expected_version=node.version)
    # B still holds the old version, but its write is judged after applying A's update.
    with pytest.raises(VersionConflictError):
        b.update(node.id, {"confidence": 0.9}, "agent-b", expected_version=node.version)
    assert b.get(node.id).confidence == 0.7


def test_concurrent_writers_on_many_replicas_keep_one_chain(replicas: Opener) -> None:
    stores = [replicas(f"r{i}") for i in range(3)]
    per_writer = 25

    def write(store: DecisionStore, n: int) -> None:
        for i in range(per_writer):
            text = f"{DECISIONS[(n + i) % len(DECISIONS)]} (writer {n}, round {i})"
            store.record(DecisionDraft(text=text), f"agent-{n}")

    threads = [threading.Thread(target=write, args=(s, n)) for n, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.refresh()
    assert {store.seq for store in stores} == {3 * per_writer}
    assert len({store.graph_hash() for store in stores}) == 1
    assert stores[0].verify().ok


def test_a_follower_applies_other_replicas_events(replicas: Opener) -> None:
    a, b = replicas("a"), replicas("b")
    b.follow(poll=0.5)
    node = a.record(DecisionDraft(text=DECISIONS[6]), "agent-a")
    deadline = time.monotonic() + 5
    while node.id not in b.graph and time.monotonic() < deadline:
        time.sleep(0.01)
    assert node.id in b.graph
    assert b.seq == a.seq


def test_a_replica_reopens_from_its_snapshot_and_the_tail(replicas: Opener) -> None:
    a, b = replicas("a"), replicas("b")
    for text in DECISIONS[:4]:
        a.record(DecisionDraft(text=text), "agent-a")
    b.refresh()
    b.close()  # snapshot at seq 4
    for text in DECISIONS[4:]:
        a.record(DecisionDraft(text=text), "agent-a")
    again = replicas("b")
    assert again.open_report.snapshot_seq == 4
    assert again.open_report.replayed == len(DECISIONS) - 4
    assert again.graph_hash() == a.graph_hash()


def test_a_replica_whose_log_was_replaced_rebuilds_from_it(
    replicas: Opener, pg_server: PgDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = replicas("a"), replicas("b")
    for text in DECISIONS[:3]:
        a.record(DecisionDraft(text=text), "agent-a")
    b.refresh()
    a.close()
    # The database is restored from another history (a backup of another store, a failover
    # that lost events): b's events 1-3 are no longer the log's.
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA decigraph CASCADE")
    other = replicas("other")
    kept = other.record(DecisionDraft(text=DECISIONS[7]), "agent-c")
    other.record(DecisionDraft(text=DECISIONS[6]), "agent-c")
    b.refresh()
    assert "diverged" in caplog.text
    assert set(b.graph) == set(other.graph)
    assert kept.id in b.graph
    assert b.graph_hash() == other.graph_hash()
    # A snapshot from the old history is ignored on open: the log is replayed instead.
    b.close()
    other.record(DecisionDraft(text=DECISIONS[5]), "agent-c")
    reopened = replicas("b")
    assert reopened.graph_hash() == other.graph_hash()


def test_a_changed_row_is_named(replicas: Opener, pg_server: PgDatabase) -> None:
    a = replicas("a")
    for text in DECISIONS[:3]:
        a.record(DecisionDraft(text=text), "agent-a")
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        line = conn.execute("SELECT line FROM decigraph.events WHERE seq = 2").fetchone()
        assert line is not None
        forged = bytes(line[0]).replace(b"nightly", b"weekly")
        conn.execute("UPDATE decigraph.events SET line = %s WHERE seq = 2", (forged,))
    report = a.verify()
    assert not report.ok
    assert "2" in report.problems[0]
    with pytest.raises(LogCorruptedError) as caught:
        replicas("fresh")
    assert caught.value.line == 2


def test_the_log_cannot_fork(pg_server: PgDatabase) -> None:
    """``prev`` is unique: two events can never follow the same one, whatever a writer does."""
    store = PostgresEventStore(pg_server.url)
    store.open(read_only=False)
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO decigraph.events VALUES "
            "(1, 'e1', 'g', 'h1', 'x'), (2, 'e2', 'h1', 'h2', 'y')"
        )
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute("INSERT INTO decigraph.events VALUES (3, 'e3', 'h1', 'h3', 'z')")
    store.close()


def test_an_unreachable_database_refuses_writes_and_keeps_state(
    replicas: Opener, pg_server: PgDatabase
) -> None:
    a = replicas("a", lock_timeout=2.0)
    a.record(DecisionDraft(text=DECISIONS[0]), "agent")
    before = (a.seq, a.graph_hash())
    pg_server.server.stop(mode="immediate")
    try:
        with pytest.raises(EventStoreUnavailableError):
            a.record(DecisionDraft(text=DECISIONS[1]), "agent")
        assert (a.seq, a.graph_hash()) == before
    finally:
        pg_server.server.start()
    node = a.record(DecisionDraft(text=DECISIONS[1]), "agent")  # reconnects
    assert node.id in a.graph
    assert a.seq == 2


def test_a_commit_the_standby_does_not_confirm_is_reported_unknown(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    options = StoreOptions(
        event_store=pg_cluster.url, fsync="never", commit_timeout=1.5, lock_timeout=1.0
    )
    a = DecisionStore.open(tmp_path / "a", options)
    b = DecisionStore.open(tmp_path / "b", options)
    try:
        a.record(DecisionDraft(text=DECISIONS[0]), "agent-a")
        b.refresh()
        senders = pg_cluster.primary.walsender_pids()
        assert senders
        for pid in senders:
            os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(CommitOutcomeUnknownError) as caught:
                a.record(DecisionDraft(text=DECISIONS[1]), "agent-a")
            unknown = caught.value
            assert unknown.seq == 2
            assert unknown.node_id is not None
            assert a.seq == 1  # never applied on a guess
            # The waiting commit holds the head: another writer is told it is busy.
            with pytest.raises(EventStoreBusyError):
                b.record(DecisionDraft(text=DECISIONS[2]), "agent-b")
            assert b.seq == 1
            assert b.log.find(unknown.event_id) is None  # not visible until replicated
        finally:
            for pid in senders:
                os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 10
        while b.log.find(unknown.event_id) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        found = b.log.find(unknown.event_id)
        assert found is not None
        assert found.event.seq == 2
        a.refresh()
        assert unknown.node_id in a.graph
        b.record(DecisionDraft(text=DECISIONS[2]), "agent-b")
        a.refresh()
        assert a.graph_hash() == b.graph_hash()
    finally:
        a.close()
        b.close()


def test_copy_a_file_log_into_postgres_and_back(tmp_path: Path, pg_server: PgDatabase) -> None:
    source_dir = tmp_path / "file"
    with DecisionStore.open(source_dir, StoreOptions(fsync="never")) as source:
        ids = [source.record(DecisionDraft(text=t), "agent").id for t in DECISIONS]
        source.link(ids[1], ids[0], "depends_on", "agent")
        source.update(ids[2], {"confidence": 0.4}, "agent")
        expected = source.graph_hash()
    file_log = open_event_store(source_dir)
    pg_log = open_event_store(tmp_path, pg_server.url)
    file_log.open(read_only=True)
    pg_log.open(read_only=False)
    first = copy_log(file_log, pg_log, batch=3)
    assert (first.events, first.copied) == (len(DECISIONS) + 2, len(DECISIONS) + 2)
    again = copy_log(file_log, pg_log)  # already there: nothing to do
    assert (again.already, again.copied) == (first.events, 0)
    back_dir = tmp_path / "back"
    back_dir.mkdir()
    back = open_event_store(back_dir)
    back.open(read_only=False)
    copy_log(pg_log, back)
    for log in (file_log, pg_log, back):
        log.close()
    assert (back_dir / "events.jsonl").read_bytes() == (source_dir / "events.jsonl").read_bytes()
    with DecisionStore.open(tmp_path / "replica", StoreOptions(event_store=pg_server.url)) as r:
        assert r.graph_hash() == expected
    # A target holding another history is refused before anything is written.
    other_dir = tmp_path / "other"
    with DecisionStore.open(other_dir, StoreOptions(fsync="never")) as other:
        other.record(DecisionDraft(text="An unrelated decision"), "agent")
    foreign = open_event_store(other_dir)
    foreign.open(read_only=False)
    pg_again = open_event_store(tmp_path, pg_server.url)
    pg_again.open(read_only=True)
    with pytest.raises(ValidationError) as refused:
        copy_log(pg_again, foreign)
    assert refused.value.field == "target"
    foreign.close()
    pg_again.close()
    assert len((other_dir / "events.jsonl").read_bytes().splitlines()) == 1


def test_no_replica_embeds_what_another_embedded(tmp_path: Path, pg_server: PgDatabase) -> None:
    from retrieval.writes import record

    def open_indexed(name: str) -> tuple[DecisionStore, DualIndex, HashEmbedder]:
        store = DecisionStore.open(
            tmp_path / name, StoreOptions(event_store=pg_server.url, fsync="never")
        )
        embedder = HashEmbedder()
        return store, DualIndex.open(store, embedder, MemoryVectorIndex()), embedder

    a, index_a, embed_a = open_indexed("a")
    b, index_b, embed_b = open_indexed("b")
    try:
        for text in DECISIONS:
            record(index_a, DecisionDraft(text=text), "agent-a")
        assert embed_a.texts == len(DECISIONS)
        b.refresh()  # applies A's events: their vectors come with them
        assert embed_b.texts == 0
        assert index_b.check_consistency() == []
        assert set(index_b.matrix.ids()) == set(a.graph)
        c, index_c, embed_c = open_indexed("c")  # a new replica catching up from nothing
        try:
            assert embed_c.texts == 0
            assert index_c.report.embedded == 0
            hit = index_c.vector_search(index_a.embed([DECISIONS[3]])[0], 1)
            assert hit[0][0] in a.graph
            assert a.get(hit[0][0]).text == DECISIONS[3]
        finally:
            index_c.close()
            c.close()
    finally:
        index_a.close()
        index_b.close()
        a.close()
        b.close()


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _cli(*args: str) -> tuple[int, dict[str, object]]:
    done = _run_cli(*args, "--json")
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}


def test_the_cli_moves_a_log_into_postgres_and_back(tmp_path: Path, pg_server: PgDatabase) -> None:
    source = tmp_path / "source"
    with DecisionStore.open(source, StoreOptions(fsync="never")) as store:
        for text in DECISIONS:
            store.record(DecisionDraft(text=text), "agent")
        expected = store.graph_hash()
    code, into = _cli("copy-log", "--data-dir", str(source), "--to", pg_server.url)
    assert code == 0
    assert into["copied"] == len(DECISIONS)
    assert into["sourceGraphHash"] == into["targetGraphHash"] == expected
    code, checked = _cli(
        "verify", "--event-store", pg_server.url, "--data-dir", str(tmp_path / "v")
    )
    assert code == 0
    assert checked["ok"] is True
    assert checked["graphHash"] == expected
    code, stats = _cli("stats", "--event-store", pg_server.url, "--data-dir", str(tmp_path / "v"))
    assert code == 0
    assert stats["events"] == len(DECISIONS)
    back = tmp_path / "back"
    code, out = _cli(
        "copy-log",
        "--event-store",
        pg_server.url,
        "--data-dir",
        str(tmp_path / "v"),
        "--to",
        str(back),
    )
    assert code == 0
    assert out["targetGraphHash"] == expected
    assert (back / "events.jsonl").read_bytes() == (source / "events.jsonl").read_bytes()
    # Not a URL decigraph can use: one line naming the setting, exit 2.
    bad = _run_cli("stats", "--event-store", "mysql://db/x")
    assert bad.returncode == 2
    assert "event_store" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_an_unreachable_event_store_is_one_line_without_the_password() -> None:
    done = _run_cli(
        "stats", "--event-store", "postgresql://agent:s3cret-pass@127.0.0.1:1/decigraph"
    )
    assert done.returncode == 2
    assert "unavailable" in done.stderr
    assert "s3cret-pass" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
