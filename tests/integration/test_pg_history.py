"""History on the shared PostgreSQL log: range reads, the history index and ``asOf`` replays on
a replica that did not write the events, equal to what the writer held at each point."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

from graph.drafts import DecisionDraft
from graph.errors import LogCorruptedError
from graph.history import HistoryIndex
from graph.state import graph_hash
from graph.store import DecisionStore, StoreOptions
from graph.timetravel import PastStates

if TYPE_CHECKING:
    from tests.support.pgcluster import PgDatabase

TEXTS = [
    "Keep the order ledger in PostgreSQL with serializable transactions",
    "Publish order events to Kafka with the order id as the key",
    "Expire idempotency keys after 24 hours",
    "Run the reconciliation job every night at 02:00 UTC",
    "Alert the payments on-call when reconciliation finds more than ten mismatches",
]


def test_a_replica_answers_as_of_what_the_writer_held(
    tmp_path: Path, pg_server: PgDatabase
) -> None:
    url = pg_server.url
    writer = DecisionStore.open(tmp_path / "w", StoreOptions(event_store=url, fsync="never"))
    hashes: dict[int, str] = {}
    ids = []
    for text in TEXTS:
        ids.append(writer.record(DecisionDraft(text=text), "writer").id)
        hashes[writer.seq] = writer.graph_hash()
    writer.update(ids[0], {"confidence": 0.9}, "writer")
    hashes[writer.seq] = writer.graph_hash()
    writer.supersede(ids[4], ids[3], "writer")
    hashes[writer.seq] = writer.graph_hash()
    writer.forget(ids[2], "writer")
    hashes[writer.seq] = writer.graph_hash()
    writer.close()

    replica = DecisionStore.open(tmp_path / "r", StoreOptions(event_store=url, fsync="never"))
    try:
        assert replica.seq == max(hashes)
        events = replica.read_events(1, replica.seq)
        assert [e.seq for e in events] == list(range(1, replica.seq + 1))
        assert replica.read_events(3, 2) == []
        assert [e.seq for e in replica.read_events(2, 99, limit=2)] == [2, 3]
        index = HistoryIndex(replica)
        assert index.seqs_of(ids[2])[-1] == replica.seq  # the forget
        assert len(index.seqs_of(ids[3])) == 2  # recorded, superseded
        past = PastStates(replica, every=100)
        for seq, digest in hashes.items():
            assert graph_hash(past.at(seq).graph) == digest
        # A row changed behind the log's back is refused by the checked range read.
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "UPDATE decigraph.events SET line = convert_to(replace(convert_from(line, 'UTF8'),"
                " 'every night', 'every day'), 'UTF8') WHERE seq = 4"
            )
        with pytest.raises(LogCorruptedError):
            replica.read_events(4, 4)
    finally:
        replica.close()
