"""``asOf`` answers equal the answers the live store gave at the time.

A scripted session writes through the real dispatcher (records across domains, updates,
reviews, lifecycle changes, links, supersession, unlinks, a forget); after every write it asks a
fixed set of read methods and keeps the answers by seq. Afterwards each question is asked again
with ``asOf`` (the seq, and the event's time) and must get the very same answer. Checkpoints
are forced small, so the replays start from them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graph.state import GraphState, graph_hash
from graph.timetravel import PastStates
from tests.support.fakes import InProcessRpc, fake_app

TOPICS = [
    ("Use PostgreSQL for the billing ledger", "architecture", "ledger"),
    ("Adopt Kafka for the order event pipeline", "architecture", "orders"),
    ("Require two reviewers on every infrastructure pull request", "process", "platform"),
    ("Serve the mobile API through GraphQL", "integration", "mobile"),
    ("Rotate database credentials every 30 days with Vault", "security", "platform"),
    ("Cache product pages in Redis for five minutes", "architecture", "web"),
    ("Run the nightly ETL on Airflow instead of cron", "tooling", "data"),
    ("Ship feature flags through LaunchDarkly", "tooling", "web"),
    ("Keep customer PII in the EU region only", "security", "ledger"),
    ("Migrate CI from Jenkins to GitHub Actions", "tooling", "platform"),
]
EDGES = ["depends_on", "relates_to", "refines", "blocks", "contradicts", "caused_by"]


class Session(InProcessRpc):
    """The historian's client; a write's ``seq`` is dropped from ``ok`` (answers are compared)."""

    def ok(self, method: str, params: dict[str, Any]) -> Any:
        result = dict(super().ok(method, params))
        result.pop("seq", None)
        return result


def questions(ids: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The reads asked after every write (over the ids known so far)."""
    asked: list[tuple[str, dict[str, Any]]] = [
        ("listDecisions", {"limit": 50}),
        ("findContradictions", {"status": "all"}),
        ("getBlockedChain", {}),
        ("getHighSalience", {"limit": 5}),
    ]
    for node_id in ids[:3] + ids[-2:]:
        asked += [
            ("getDecision", {"id": node_id}),
            ("getGraph", {"nodeId": node_id, "depth": 2}),
            ("getNeighbors", {"nodeId": node_id}),
            ("getAncestors", {"nodeId": node_id}),
            ("getDescendants", {"nodeId": node_id}),
        ]
    if len(ids) > 3:
        asked.append(("findPath", {"sourceId": ids[0], "targetId": ids[-1], "maxPaths": 3}))
    return asked


def answer_of(session: Session, method: str, params: dict[str, Any]) -> Any:
    answer = session.call(method, params)
    if "error" in answer:
        return {"error": answer["error"]["code"]}
    result = dict(answer["result"])
    result.pop("asOf", None)
    return result


def write_step(session: Session, rng: random.Random, ids: list[str], step: int) -> None:
    """One write of the scripted session (varied by step and the seeded rng)."""
    kind = (
        "record"
        if len(ids) < 4
        else rng.choice(
            [
                "record",
                "record",
                "update",
                "review",
                "link",
                "link",
                "supersede",
                "lifecycle",
                "unlink",
                "forget",
            ]
        )
    )
    if kind == "record":
        text, category, project = TOPICS[step % len(TOPICS)]
        made = session.call(
            "recordDecision",
            {
                "decision": f"{text} (round {step})",
                "category": category,
                "project": project,
                "confidence": 0.5 + (step % 5) / 10,
                "skipGuardrails": True,
            },
        )
        if "result" in made:  # the gate may refuse a contradicting one: nothing written
            ids.append(made["result"]["id"])
    elif kind == "update":
        session.ok("updateDecision", {"id": rng.choice(ids), "updates": {"confidence": 0.42}})
    elif kind == "review":
        session.ok(
            "reviewDecision",
            {
                "id": rng.choice(ids),
                "outcome": rng.choice(["success", "failure", "partial"]),
                "lessons": f"lesson {step}",
            },
        )
    elif kind == "lifecycle":
        session.ok("setLifecycle", {"id": rng.choice(ids), "lifecycle": "rejected"})
    elif kind in ("link", "supersede"):
        source, target = rng.sample(ids, 2)
        edge = "supersedes" if kind == "supersede" else rng.choice(EDGES)
        session.call(
            "linkDecisions", {"sourceId": source, "targetId": target, "edgeType": edge}
        )  # a cycle may be refused: then nothing changed, which is fine
    elif kind == "unlink":
        source, target = rng.sample(ids, 2)
        session.call("unlinkDecisions", {"sourceId": source, "targetId": target})
    else:
        victim = ids.pop(rng.randrange(len(ids)))
        session.call("forget", {"id": victim, "reason": "test"})


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    with fake_app(tmp_path / "data", seed=5) as app:
        app.past = PastStates(app.store, every=100, cache_size=2)
        yield Session(app, "historian")


def test_as_of_answers_equal_the_live_answers_then(session: Session) -> None:
    rng = random.Random(17)
    ids: list[str] = []
    recorded: dict[int, list[tuple[str, dict[str, Any], Any]]] = {}
    hashes: dict[int, str] = {}
    for step in range(300):
        write_step(session, rng, ids, step)
        seq = session.app.store.seq
        if step % 13 == 0 or step > 290:
            recorded[seq] = [(m, p, answer_of(session, m, p)) for m, p in questions(list(ids))]
            hashes[seq] = session.app.store.graph_hash()
    assert session.app.store.seq >= 220
    checked = 0
    for seq, answers in recorded.items():
        for method, params, live in answers:
            past = answer_of(session, method, {**params, "asOf": seq})
            assert past == live, (seq, method, params)
            checked += 1
        assert graph_hash(session.app.past.at(seq).graph) == hashes[seq]
    assert checked > 500
    assert session.app.past.checkpoints(), "replays past 100 events leave checkpoints"


def test_as_of_a_time_resolves_to_the_last_event_then(session: Session) -> None:
    ids: list[str] = []
    rng = random.Random(3)
    for step in range(12):
        write_step(session, rng, ids, step)
    events = session.app.store.read_events(1, session.app.store.seq)
    middle = events[5]
    by_seq = session.ok("listDecisions", {"limit": 50, "asOf": middle.seq})
    by_time = session.ok("listDecisions", {"limit": 50, "asOf": middle.ts})
    assert by_time == {**by_seq, "asOf": {"seq": middle.seq, "ts": middle.ts}}
    before_all = session.ok("listDecisions", {"asOf": "2000-01-01T00:00:00Z"})
    assert before_all["total"] == 0
    assert before_all["asOf"] == {"seq": 0, "ts": None}


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (-1, "outside the log"),
        (10_000, "outside the log"),
        ("yesterday", "asOf"),
        (True, "asOf"),
        (1.5, "asOf"),
    ],
)
def test_bad_as_of_is_refused_naming_the_field(session: Session, value: Any, needle: str) -> None:
    session.ok(
        "recordDecision", {"decision": "Use SQLite for local caches", "skipGuardrails": True}
    )
    answer = session.call("listDecisions", {"asOf": value})
    assert answer["error"]["code"] == -32602, answer
    assert needle in str(answer["error"]), answer


def test_a_stale_checkpoint_is_never_used(session: Session) -> None:
    ids: list[str] = []
    rng = random.Random(9)
    step = 0
    while session.app.store.seq < 230:
        write_step(session, rng, ids, step)
        step += 1
    want = graph_hash(session.app.past.at(220).graph)
    assert session.app.past.checkpoints() == [200]  # one per long replay: the last multiple
    # A checkpoint from another history (its event hash no longer in the log): ignored.
    path = session.app.past.directory / "ckpt-000000000200.snap"
    raw = path.read_bytes().replace(b'"lastHash":"', b'"lastHash":"0', 1)
    path.write_bytes(raw)
    session.app.past.clear()
    assert graph_hash(session.app.past.at(220).graph) == want
    assert session.app.past.last_build["origin"] == "empty"
    assert session.app.past.last_build["checkpointsWritten"] == [200]  # written again, right


def test_store_snapshots_are_kept_as_checkpoints(tmp_path: Path) -> None:
    from graph.ids import IdSource
    from graph.store import DecisionStore, StoreOptions
    from tests.conftest import TickingClock

    options = StoreOptions(fsync="never", snapshot_every=100)
    with fake_app(tmp_path / "data", seed=5) as app:
        app.store.options = options
        session = Session(app, "historian")
        ids: list[str] = []
        rng = random.Random(4)
        step = 0
        while app.store.seq < 250:
            write_step(session, rng, ids, step)
            step += 1
        kept = app.past.checkpoints()
        assert len(kept) >= 2, kept
        assert all(s % 100 < 5 for s in kept), kept
        want = {s: graph_hash(app.past.at(s).graph) for s in kept}
        assert app.past.last_build["replayed"] == 0  # straight from the kept snapshot
    with DecisionStore.open(
        tmp_path / "data", StoreOptions(read_only=True), clock=TickingClock(), ids=IdSource(1)
    ) as store:
        past = PastStates(store)
        for seq, digest in want.items():
            assert graph_hash(past.at(seq).graph) == digest
            replayed = GraphState()  # the same point replayed from nothing
            for event in store.read_events(1, seq):
                replayed.apply(event)
            assert graph_hash(replayed.graph) == digest
