"""Several ``decigraph serve`` replicas on one shared PostgreSQL log, end to end.

Real processes on loopback: a PostgreSQL primary with a synchronous standby
(tests/support/pgcluster.py) and ``decigraph serve --event-store URL`` replicas, each with a data
directory of its own (tests/support/cluster.py), talking JSON-RPC as agents do.

The module shares one cluster and three replicas (the model loads in each: the expensive part)
between the tests that leave it whole: read-your-writes, ``expectedVersion`` races, a replica
killed under writers and restarted, replication held back with SIGSTOP, ``minSeq`` not reached;
and, last, two tests of defects found while writing these (they fail until fixed): probes that
hang while a commit waits, and a database error escaping as -32603. The primary's death and the
standby's promotion (under writers, and while a commit waits for the standby) get a cluster and
replicas of their own.

What every test holds to: a write *acknowledged* (a result with its ``seq``) is never lost and
is readable on every replica with ``minSeq``; the log's event at that seq is the one that
created it; an error is only ever a retryable one (-32011 nothing written, -32012 outcome
unknown, resolved by ``getEvent``, -32013 not caught up) or a guardrail's refusal (-32004,
nothing written); and the replicas converge on one seq, last hash and graph hash.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.cluster import (
    GUARDRAIL_BLOCKED,
    NOT_CAUGHT_UP,
    OUTCOME_UNKNOWN,
    RETRYABLE,
    UNAVAILABLE,
    VERSION_CONFLICT,
    Attempt,
    DecisionTexts,
    LoggedEvent,
    Replica,
    Reply,
    Writers,
    converged,
    logged_events,
    running_replicas,
    verify_log,
)
from tests.support.pgcluster import PgCluster, PgServer, start_cluster
from tests.support.pgfixtures import _used_by, require_pg

NAMES = ("replica-a", "replica-b", "replica-c")
COMMIT_TIMEOUT = 2.0
LOCK_TIMEOUT = 3.0
#: The shared replicas answer "outcome unknown" after 2 s without the standby's confirmation,
#: and "busy" after 3 s waiting for another replica's write.
SHARED_ENV = {
    "DECIGRAPH_COMMIT_TIMEOUT": str(COMMIT_TIMEOUT),
    "DECIGRAPH_LOCK_TIMEOUT": str(LOCK_TIMEOUT),
}
#: What a write may answer besides success: retryable, or refused by a guardrail.
ALLOWED_ERRORS = RETRYABLE | {GUARDRAIL_BLOCKED}


@dataclass
class Shared:
    cluster: PgCluster
    replicas: list[Replica]
    texts: DecisionTexts


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """One primary + synchronous standby and three replicas for the module."""
    require_pg()
    base = tmp_path_factory.mktemp("cluster")
    with (
        start_cluster() as cluster,
        running_replicas(base, cluster.url, NAMES, **SHARED_ENV) as replicas,
    ):
        yield Shared(cluster, replicas, DecisionTexts())


@pytest.fixture
def trio(shared: Shared, request: pytest.FixtureRequest) -> list[Replica]:
    """The module's replicas, every one running and ready (a test that failed half-way may
    have left one down); a failing test's report gets the servers' log tails."""
    _used_by(request, shared.cluster.primary, shared.cluster.standby)
    for replica in shared.replicas:
        if not replica.running:
            replica.start()
    for replica in shared.replicas:
        replica.wait_ready()
    return shared.replicas


# -- checks shared by the tests ----------------------------------------------------------------


def check_errors(attempts: Sequence[Attempt], transport_ok: Sequence[str] = ()) -> None:
    """Every failed write answered a retryable error or a guardrail's refusal; no answer at all
    only from the replicas named in ``transport_ok`` (killed on purpose)."""
    for attempt in attempts:
        reply = attempt.reply
        if reply.ok:
            assert "seq" in (reply.result or {}), f"a write answered without its seq: {reply}"
        elif reply.transport is not None:
            assert attempt.replica in transport_ok, f"{attempt.replica} did not answer: {reply}"
        else:
            assert reply.code in ALLOWED_ERRORS, f"{attempt.replica}: {reply}"
            if reply.code != GUARDRAIL_BLOCKED:
                assert reply.data.get("retryable") is True, reply


def check_readable(
    writes: Sequence[tuple[dict[str, Any], dict[str, Any]]],
    readers: Sequence[Replica],
    events: dict[int, LoggedEvent],
) -> None:
    """Each ``(params, result)`` write is the log's event at its answered seq, and every reader
    returns it, with its text, when asked with ``minSeq`` = that seq."""
    for params, result in writes:
        seq, node_id = result["seq"], result["id"]
        event = events.get(seq)
        assert event is not None, f"acknowledged seq {seq} ({node_id}) is not in the log"
        assert (event.op, event.node_ids) == ("record", (node_id,)), (
            f"acknowledged write lost: {node_id} answered seq {seq}, the log's event {seq} is "
            f"{event.op} of {event.node_ids}"
        )
        assert params["decision"] in event.line
    seqs = [result["seq"] for _, result in writes]
    assert len(set(seqs)) == len(seqs), f"two writes answered the same seq: {sorted(seqs)}"
    for params, result in writes:
        seq, node_id = result["seq"], result["id"]
        for reader in readers:
            got = reader.call("getDecision", {"id": node_id, "minSeq": seq}, timeout=30)
            assert got.ok, f"{reader.name} getDecision {node_id} minSeq {seq}: {got}"
            assert got.unwrap()["found"] is True, f"{reader.name} lost {node_id} (seq {seq})"
            assert got.unwrap()["decision"]["decision"] == params["decision"]


def resolve_unknown(
    attempts: Sequence[Attempt], readers: Sequence[Replica], events: dict[int, LoggedEvent]
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], int]:
    """Resolve every -32012 with ``getEvent`` (the database settled): a committed one must be
    the log's event at the seq the error named and readable everywhere; an absent one must be
    nowhere. Returns the committed writes (to check like acknowledged ones) and the count of
    absent ones."""
    committed: list[tuple[dict[str, Any], dict[str, Any]]] = []
    absent = 0
    for attempt in attempts:
        if attempt.reply.code != OUTCOME_UNKNOWN:
            continue
        data = attempt.reply.data
        assert {"eventId", "seq", "id"} <= data.keys(), attempt.reply
        lookup = readers[0].ok("getEvent", {"eventId": data["eventId"]})
        logged = events.get(data["seq"])
        if lookup["found"]:
            assert lookup["seq"] == data["seq"], (lookup, data)
            assert lookup["nodeIds"] == [data["id"]], (lookup, data)
            assert logged is not None, (lookup, data)
            assert logged.event_id == data["eventId"], (logged, data)
            committed.append((attempt.params, {"id": data["id"], "seq": data["seq"]}))
        else:
            absent += 1
            assert lookup["pending"] is False, lookup  # settled: safe to retry
            assert logged is None or logged.event_id != data["eventId"], (logged, data)
            assert all(data["id"] not in e.node_ids for e in events.values()), data
            for reader in readers:
                got = reader.ok("getDecision", {"id": data["id"]})
                assert got["found"] is False, f"{reader.name} has {data['id']}, getEvent: absent"
    return committed, absent


def acknowledged(attempts: Sequence[Attempt]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(a.params, a.reply.unwrap()) for a in attempts if a.acknowledged]


def check_log_complete(events: dict[int, LoggedEvent], statuses: list[dict[str, Any]]) -> None:
    """The log holds seqs 1..head without a gap, and the replicas are at its head."""
    assert sorted(events) == list(range(1, len(events) + 1)), "a gap in the log's seqs"
    assert {s["seq"] for s in statuses} == {len(events)}, statuses


def race(
    replicas: Sequence[Replica], node_id: str, version: int, changes: Sequence[dict[str, Any]]
) -> list[Reply]:
    """``updateDecision`` of ``node_id`` at ``expectedVersion`` ``version`` from every replica at
    the same moment (a barrier), replica i sending ``changes[i]``; the replies in that order."""
    barrier = threading.Barrier(len(replicas))
    replies: list[Reply | None] = [None] * len(replicas)

    def send(i: int) -> None:
        params = {"id": node_id, "expectedVersion": version, "updates": changes[i]}
        barrier.wait(timeout=30)
        replies[i] = replicas[i].call("updateDecision", params, timeout=30)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(replicas))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    answers = [reply for reply in replies if reply is not None]
    assert len(answers) == len(replicas), f"a racing update did not return: {replies}"
    return answers


def cut_listeners(cluster: PgCluster, count: int) -> None:
    """Once the ``count`` replicas' followers are listening, terminate their ``LISTEN``
    connections (they reconnect by themselves, within a second)."""
    listening = (
        "SELECT pid FROM pg_stat_activity"
        " WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
    )
    cluster.primary.wait_for(
        lambda: len(cluster.primary.query(listening, dbname=cluster.dbname)) == count,
        30,
        f"{count} followers listening",
    )
    rows = cluster.primary.query(
        f"SELECT pg_terminate_backend(pid) FROM ({listening}) AS listeners",
        dbname=cluster.dbname,
    )
    assert [row[0] for row in rows] == [True] * count, rows


@contextlib.contextmanager
def replication_stopped(server: PgServer) -> Iterator[list[int]]:
    """``server``'s walsenders stopped (SIGSTOP) for the block: a commit waiting for the
    synchronous standby waits until they continue (SIGCONT, however the block ends)."""
    stopped: list[int] = []
    try:
        for pid in server.walsender_pids():
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        assert stopped, f"no walsender on {server.name}"
        yield stopped
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def wait_committed(replica: Replica, event_id: str, timeout: float = 30) -> dict[str, Any]:
    """``getEvent`` until the event is found (a commit that was waiting completed)."""
    deadline = time.monotonic() + timeout
    lookup = replica.ok("getEvent", {"eventId": event_id})
    while not lookup["found"] and time.monotonic() < deadline:
        time.sleep(0.1)
        lookup = replica.ok("getEvent", {"eventId": event_id})
    assert lookup["found"] is True, lookup
    return lookup


def record(replica: Replica, texts: DecisionTexts) -> tuple[dict[str, Any], dict[str, Any]]:
    params = texts.take()
    return params, replica.ok("recordDecision", params)


# -- the tests ---------------------------------------------------------------------------------


def test_read_your_writes_across_replicas(shared: Shared, trio: list[Replica]) -> None:
    """A write on one replica, read at once on another with the write's seq as ``minSeq``: 50
    times, never "not found"; every fifth time an update's new version reads the same way.

    Every tenth round first cuts every replica's ``LISTEN`` connection (as a network blip or a
    restarted pooler would): the followers hear nothing until they reconnect, within a second,
    so the readers are genuinely behind and only ``minSeq`` makes them wait. A plain read just
    before shows it (at least one must miss, or this test proved nothing)."""
    last_seq = 0
    behind = 0
    for i in range(50):
        if i % 10 == 0:
            cut_listeners(shared.cluster, len(trio))
        writer, reader, third = trio[i % 3], trio[(i + 1) % 3], trio[(i + 2) % 3]
        params, made = record(writer, shared.texts)
        assert made["seq"] > last_seq, (made, last_seq)  # the log only grows
        last_seq = made["seq"]
        behind += reader.ok("getDecision", {"id": made["id"]})["found"] is False
        got = reader.call("getDecision", {"id": made["id"], "minSeq": made["seq"]}, timeout=30)
        assert got.ok, f"write on {writer.name}, read on {reader.name}: {got}"
        assert got.unwrap()["found"] is True, f"{reader.name}: no {made['id']} at {made['seq']}"
        assert got.unwrap()["decision"]["decision"] == params["decision"]
        if i % 5 == 0:  # an update on the reader, read on the third replica
            update = {"id": made["id"], "expectedVersion": 1, "updates": {"confidence": 0.65}}
            changed = reader.ok("updateDecision", update)
            assert changed["version"] == 2, changed
            assert changed["seq"] > last_seq, changed
            last_seq = changed["seq"]
            read = third.ok("getDecision", {"id": made["id"], "minSeq": changed["seq"]})
            assert (read["decision"]["version"], read["decision"]["confidence"]) == (2, 0.65)
    assert behind >= 1, "no reader was ever behind its writer: minSeq was never put to work"


def test_expected_version_races_have_one_winner(shared: Shared, trio: list[Replica]) -> None:
    """Three replicas send ``updateDecision`` with the same ``expectedVersion`` at once: one
    wins, the two others get -32009 naming the winner's version; every replica then reads the
    winner's change. Rounds alternate a plain change (confidence) and one that is embedded
    before the write section (context)."""
    _, made = record(trio[0], shared.texts)
    node_id, version = made["id"], 1
    contexts = (
        "Raised in the postmortem of the duplicate-charge incident",
        "Requested by finance ahead of the quarterly close",
        "Flagged by the security review of the payments service",
    )
    for round_ in range(6):
        changes: list[dict[str, Any]]
        if round_ % 2 == 0:
            changes = [{"confidence": round(0.3 + 0.1 * i + 0.01 * round_, 2)} for i in range(3)]
        else:
            changes = [{"context": f"{text} (review {round_})"} for text in contexts]
        answers = race(trio, node_id, version, changes)
        shown = "\n".join(f"{r.name}: {a}" for r, a in zip(trio, answers, strict=True))
        winners = [i for i, reply in enumerate(answers) if reply.ok]
        assert len(winners) == 1, f"round {round_}, expectedVersion {version}:\n{shown}"
        losers = [reply for reply in answers if not reply.ok]
        assert all(reply.code == VERSION_CONFLICT for reply in losers), shown
        # The losers judged on the graph as it stands everywhere: after the winner's event.
        assert all(reply.data.get("currentVersion") == version + 1 for reply in losers), shown
        won = answers[winners[0]].unwrap()
        assert won["version"] == version + 1, won
        version += 1
        for replica in trio:
            read = replica.ok("getDecision", {"id": node_id, "minSeq": won["seq"]})
            decision = read["decision"]
            assert decision["version"] == version, (replica.name, decision)
            for key, value in changes[winners[0]].items():
                assert decision[key] == value, (replica.name, key, decision)


def test_a_replica_killed_under_writers_catches_up(shared: Shared, trio: list[Replica]) -> None:
    """Writers on all three replicas; the third is SIGKILLed while they write, the two others
    keep writing, then it is restarted on its data directory while they still write. Every
    acknowledged write (the killed replica's too) is readable on every replica; the restarted
    one becomes ready, every replica reports the same seq, last hash and graph hash, and
    ``decigraph verify --event-store`` passes."""
    a, b, c = trio
    writers = Writers([a, a, b, b, c], shared.texts, pause=0.2)
    try:
        writers.start()
        writers.wait_acknowledged(15, timeout=60)
        c.kill(signal.SIGKILL)
        killed_at = time.monotonic()
        writers.wait_acknowledged(15, timeout=60, since=killed_at)  # on the survivors
        c.start()
        c.wait_ready(timeout=120)
        ready_at = time.monotonic()
        writers.wait_acknowledged(5, timeout=60, since=ready_at)
    finally:
        attempts = writers.stop()
    check_errors(attempts, transport_ok=[c.name])
    assert any(a.acknowledged and a.replica == c.name for a in attempts), writers.summary()

    statuses = converged(trio)
    status, body = c.ready()
    assert status == 200, body
    assert (body["seq"], body["lag"], body["log"]) == (statuses[0]["seq"], 0, "caught up"), body

    events = logged_events(shared.cluster.primary, shared.cluster.dbname)
    check_log_complete(events, statuses)
    committed, _ = resolve_unknown(attempts, trio, events)
    check_readable(acknowledged(attempts) + committed, trio, events)

    report = verify_log(shared.cluster.url)
    assert (report["events"], report["graphHash"]) == (len(events), statuses[0]["graphHash"])


def test_an_unconfirmed_commit_is_outcome_unknown_then_resolves(
    shared: Shared, trio: list[Replica]
) -> None:
    """The standby's walsender stopped (SIGSTOP): a write waits ``DECIGRAPH_COMMIT_TIMEOUT`` and
    answers -32012 "outcome unknown" with its event id, never success; the event is not in the
    log meanwhile; another replica's write waits for the head and answers -32011 (busy) or
    -32012, never success. Once the walsender runs again (SIGCONT), ``getEvent`` finds the
    event at the seq the error named and every replica reads the decision with that
    ``minSeq``; the replicas converge and take writes again."""
    a, b, c = trio
    before = converged(trio)[0]["seq"]
    primary = shared.cluster.primary
    first_params, second_params = shared.texts.take(), shared.texts.take()
    with replication_stopped(primary):
        started = time.monotonic()
        first = a.call("recordDecision", first_params, timeout=60)
        first_seconds = time.monotonic() - started
        assert not first.ok, f"a write the standby never confirmed answered success: {first}"
        assert first.code == OUTCOME_UNKNOWN, first
        data = first.data
        assert data["retryable"] is True, first
        assert data["seq"] == before + 1, (data, before)
        assert isinstance(data["eventId"], str), first
        assert isinstance(data["id"], str), first
        assert COMMIT_TIMEOUT - 0.2 <= first_seconds < COMMIT_TIMEOUT + 5, first_seconds

        # Not in the log, nor on any replica, while the standby has not confirmed it.
        for replica in trio:
            lookup = replica.ok("getEvent", {"eventId": data["eventId"]}, timeout=10)
            assert lookup["found"] is False, (replica.name, lookup)
            # ... but not settled either: the commit still holds the head, so a client must
            # ask again rather than retry the write (which would record it twice).
            assert lookup["pending"] is True, (replica.name, lookup)
            held = replica.ok("getDecision", {"id": data["id"]}, timeout=10)
            assert held["found"] is False, (replica.name, "applied an unconfirmed event")

        # The unconfirmed commit still holds the log's head: another replica's write waits for
        # it, then gives up.
        started = time.monotonic()
        second = b.call("recordDecision", second_params, timeout=60)
        second_seconds = time.monotonic() - started
        assert not second.ok, f"a write behind an unconfirmed commit answered success: {second}"
        assert second.code in (UNAVAILABLE, OUTCOME_UNKNOWN), second
        if second.code == UNAVAILABLE:
            assert LOCK_TIMEOUT - 0.2 <= second_seconds < LOCK_TIMEOUT + 3, second_seconds
        assert second_seconds < LOCK_TIMEOUT + COMMIT_TIMEOUT + 3, second_seconds

    # Replication resumes: the first write's commit completes.
    lookup = wait_committed(c, data["eventId"])
    assert (lookup["seq"], lookup["op"], lookup["nodeIds"]) == (data["seq"], "record", [data["id"]])
    for replica in trio:
        got = replica.call("getDecision", {"id": data["id"], "minSeq": data["seq"]}, timeout=30)
        assert got.ok, (replica.name, got)
        assert got.unwrap()["found"] is True, (replica.name, got)
        assert got.unwrap()["decision"]["decision"] == first_params["decision"]

    statuses = converged(trio)
    events = logged_events(primary, shared.cluster.dbname)
    check_log_complete(events, statuses)
    second_attempt = Attempt(b.name, second_params, second, started, second_seconds)
    committed, absent = resolve_unknown([second_attempt], trio, events)
    if second.code == UNAVAILABLE:  # "busy": nothing was written
        assert not any(second_params["decision"] in e.line for e in events.values())
    check_readable(committed, trio, events)
    assert len(committed) + absent == (1 if second.code == OUTCOME_UNKNOWN else 0)

    # And writes go through again, on every replica.
    for replica in trio:
        params, made = record(replica, shared.texts)
        check_readable([(params, made)], trio, logged_events(primary, shared.cluster.dbname))


def test_not_caught_up_is_retryable(shared: Shared, trio: list[Replica]) -> None:
    """A ``minSeq`` beyond the log's head: -32013 after ``DECIGRAPH_MIN_SEQ_TIMEOUT``, retryable,
    naming the seq asked for and the one applied."""
    head = converged(trio)[0]["seq"]
    reply = trio[1].call("getReplicaStatus", {"minSeq": head + 1000}, timeout=30)
    assert reply.code == NOT_CAUGHT_UP, reply
    assert reply.data == {"retryable": True, "minSeq": head + 1000, "appliedSeq": head}, reply


def test_health_and_ready_answer_while_a_commit_waits_for_the_standby(
    shared: Shared, trio: list[Replica]
) -> None:
    """A database wait must not hang a replica's probes and reads: while its write waits for
    the synchronous standby's confirmation (up to ``DECIGRAPH_COMMIT_TIMEOUT``, 10 s by
    default), ``/health``, ``/ready``, ``getDecision`` and ``getReplicaStatus`` on that replica
    still answer at once. (deploy/kubernetes probes: readiness times out after 3 s, liveness
    after 5 s, "a database outage never restarts it".)

    Fails today: the write section holds the store's lock across the commit wait
    (graph/persistence.py ``LoggedGraph._commit`` inside ``writing()``), and ``/health``
    (``usecases.reads.store_status``), ``/ready`` (``composition.readiness``), ``getDecision``
    (``usecases.reads.read_node``) and ``getReplicaStatus`` all take that lock, so each waits
    until the commit gives up. The same holds for a replica whose write waits
    ``DECIGRAPH_LOCK_TIMEOUT`` for another replica's head lock."""
    a = trio[0]
    _, known = record(a, shared.texts)
    probes: dict[str, Any] = {
        "/health": lambda: a.http.get(f"{a.url}/health", timeout=30).status_code == 200,
        "/ready": lambda: a.http.get(f"{a.url}/ready", timeout=30).status_code == 200,
        "getDecision": lambda: a.ok("getDecision", {"id": known["id"]})["found"],
        "getReplicaStatus": lambda: a.ok("getReplicaStatus", {})["seq"] >= known["seq"],
    }
    seconds: dict[str, float] = {}
    answers: dict[str, Any] = {}

    def probe(name: str) -> None:
        started = time.monotonic()
        answers[name] = probes[name]()
        seconds[name] = round(time.monotonic() - started, 2)

    write: list[Reply] = []
    with replication_stopped(shared.cluster.primary):
        writer = threading.Thread(
            target=lambda: write.append(a.call("recordDecision", shared.texts.take(), timeout=60))
        )
        writer.start()
        time.sleep(0.5)  # the write is waiting for its commit now
        threads = [threading.Thread(target=probe, args=(name,)) for name in probes]
        for thread in threads:
            thread.start()
        for thread in [*threads, writer]:
            thread.join(timeout=60)
    assert len(write) == 1, write
    assert write[0].code == OUTCOME_UNKNOWN, write  # the commit was indeed waiting
    wait_committed(trio[1], write[0].data["eventId"])
    converged(trio)
    assert answers == dict.fromkeys(probes, True), answers
    assert all(s < 1.0 for s in seconds.values()), (
        f"replica-a's probes and reads waited for a commit pending on the standby: {seconds} s "
        f"(DECIGRAPH_COMMIT_TIMEOUT={COMMIT_TIMEOUT:g})"
    )


def test_a_write_catching_up_in_its_section_answers_database_errors_as_retryable(
    shared: Shared, trio: list[Replica]
) -> None:
    """A write whose replica must first apply another replica's event inside its write section
    (it holds the head lock and is behind) and meets a database error there answers a retryable
    error (-32011, nothing written), never -32603 "internal error".

    Orchestrated deterministically: A's commit waits for the standby (walsender stopped) while
    holding the head; B's write waits for the head (holding B's store lock, so B's follower
    cannot apply A's event); an ``ACCESS EXCLUSIVE`` lock on ``decigraph.events`` is queued
    behind A's insert. Replication resumes: A commits, B gets the head, B is one event behind
    and its first catch-up query waits for the table lock until ``DECIGRAPH_LOCK_TIMEOUT``.

    Fails today: graph/eventstore/postgres.py ``PostgresEventStore._check_position`` runs its
    query with ``read(self._connection())`` inside a write section and lets
    ``psycopg.OperationalError`` escape (``_fetch`` and ``begin`` translate it to
    ``EventStoreUnavailableError``/``EventStoreBusyError``), so the JSON-RPC answer is -32603.
    The same escape was seen in the failover tests: the primary SIGKILLed just after a replica
    took the head lock, ``consuming input failed: server closed the connection unexpectedly``
    from ``_check_position`` (persistence.py ``_enter_section`` -> ``_replay_tail`` ->
    ``entries``) came back as -32603 to a writer during the failover."""
    a, b, _ = trio
    record(b, shared.texts)  # B has applied at least one event: it checks where it stands
    converged(trio)
    primary, dbname = shared.cluster.primary, shared.cluster.dbname
    replies: dict[str, Reply] = {}

    def write(replica: Replica) -> None:
        replies[replica.name] = replica.call("recordDecision", shared.texts.take(), timeout=60)

    writers = {r.name: threading.Thread(target=write, args=(r,)) for r in (a, b)}
    locked = threading.Event()
    with primary.connect(dbname) as locker:

        def lock_events() -> None:
            locker.execute("LOCK TABLE decigraph.events IN ACCESS EXCLUSIVE MODE")
            locked.set()

        locking = threading.Thread(target=lock_events)
        try:
            with replication_stopped(primary):
                writers[a.name].start()
                time.sleep(0.5)  # A's commit waits for the standby, holding the head
                writers[b.name].start()
                time.sleep(0.5)  # B waits for the head (LOCK_TIMEOUT is 3 s)
                locking.start()
                time.sleep(0.3)  # queued behind A's insert
                assert not locked.is_set()
            assert locked.wait(10), "the table lock was not granted once A committed"
            writers[b.name].join(timeout=30)
        finally:
            locking.join(timeout=30)
            locker.rollback()
    for thread in writers.values():
        thread.join(timeout=60)
    assert replies[a.name].ok or replies[a.name].code == OUTCOME_UNKNOWN, replies[a.name]
    converged(trio)
    assert replies[b.name].code in RETRYABLE, f"{b.name}: {replies[b.name]}\n{b.tail(40)}"
