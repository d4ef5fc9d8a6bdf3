"""Failover under writers: the primary killed with SIGKILL and its synchronous standby
promoted, while replicas (on a libpq multi-host URL) keep writing; no acknowledged write is
lost, every unknown outcome resolves, and the replicas converge. Each test has its own
cluster (it destroys the primary)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from tests.e2e.test_cluster import (
    acknowledged,
    check_errors,
    check_log_complete,
    check_readable,
    replication_stopped,
    resolve_unknown,
)
from tests.support.cluster import (
    DecisionTexts,
    Writers,
    converged,
    logged_events,
    multi_host_url,
    running_replicas,
    verify_log,
)
from tests.support.pgcluster import PgCluster


def test_failover_loses_no_acknowledged_write(pg_cluster: PgCluster, tmp_path: Path) -> None:
    """Replicas on a libpq multi-host URL; the primary SIGKILLed under writers and the standby
    promoted. Every acknowledged write is in the promoted database's log at its seq and readable
    on every replica; a write in flight at the kill that answered -32012 resolves by ``getEvent``
    consistently with what the replicas hold; writes succeed again after the promotion; the
    replicas converge and ``verify`` passes on the promoted database."""
    failover(pg_cluster, tmp_path, stall=False)


def test_failover_while_a_commit_waits_for_the_standby(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    """As above, but the primary dies at the worst moment: its walsender stopped (SIGSTOP) for a
    second first, so a commit is waiting for the standby's confirmation and WAL the standby never
    received dies with the primary (the walsender is SIGKILLed too). That write must come back
    -32012 and resolve as absent everywhere (an asynchronous standby, or a commit acknowledged
    without its confirmation, would lose an acknowledged write here)."""
    unknown, absent = failover(pg_cluster, tmp_path, stall=True)
    assert unknown >= 1, "no write was waiting for the standby when the primary died"
    assert absent >= 1, "every write waiting for the standby was found after the failover"


def failover(pg_cluster: PgCluster, tmp_path: Path, *, stall: bool) -> tuple[int, int]:
    """The failover tests (see them); how many writes answered -32012 and how many of those
    were absent from the promoted database."""
    url = multi_host_url(pg_cluster)
    primary, standby = pg_cluster.primary, pg_cluster.standby
    texts = DecisionTexts()
    env = {"DECIGRAPH_COMMIT_TIMEOUT": "5", "DECIGRAPH_LOCK_TIMEOUT": "5"}
    with running_replicas(tmp_path, url, ("failover-a", "failover-b"), **env) as replicas:
        a, b = replicas
        groups: list[Writers] = []

        def write() -> Writers:
            groups.append(Writers([a, a, b, b], texts, pause=0.05, stop_on_transport=False))
            return groups[-1].start()

        try:
            write().wait_acknowledged(20, timeout=60)
            trouble_at = time.monotonic()
            with contextlib.ExitStack() as stack:
                stopped: list[int] = []
                if stall:
                    # Writers started once the walsender is stopped: none of their commits can
                    # have reached the standby.
                    groups[-1].stop()
                    stopped = stack.enter_context(replication_stopped(primary))
                    write()
                    time.sleep(1.0)  # a commit waits for the standby, the others for the head
                primary.kill(signal.SIGKILL)
                for pid in stopped:  # what the walsender never sent dies with the primary
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            standby.promote()
            promoted_at = time.monotonic()
            # The writers retry on every error: both replicas must get writes through again.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                done = {x.replica for x in groups[-1].acknowledged() if x.started >= promoted_at}
                if done == {a.name, b.name}:
                    break
                time.sleep(0.1)
            groups[-1].wait_acknowledged(10, timeout=30, since=promoted_at)
        finally:
            attempts = [attempt for group in groups for attempt in group.stop()]
        summary = "; ".join(group.summary() for group in groups)
        check_errors(attempts)  # the replicas answered every call, through the failover
        again = {x.replica for x in attempts if x.acknowledged and x.started >= promoted_at}
        assert again == {a.name, b.name}, summary
        before = [x for x in attempts if x.started + x.seconds < trouble_at]
        assert all(x.acknowledged for x in before), summary

        statuses = converged(replicas)
        events = logged_events(standby, pg_cluster.dbname)
        check_log_complete(events, statuses)
        committed, absent = resolve_unknown(attempts, replicas, events)
        check_readable(acknowledged(attempts) + committed, replicas, events)
        report = verify_log(url)
        assert (report["events"], report["graphHash"]) == (len(events), statuses[0]["graphHash"])
    return len(committed) + absent, absent
