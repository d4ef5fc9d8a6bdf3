"""getDecisionHistory, valid time and the history index, through the real dispatcher (fake
embedder; the store and the log are real)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graph.history import HistoryIndex
from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from tests.support.fakes import fake_app


class Agent:
    def __init__(self, app: Decigraph, name: str = "planner") -> None:
        self.app = app
        self.name = name
        self.dispatcher = Dispatcher(build_registry(app))

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
        answer = self.dispatcher.handle(request, CallContext(self.name))
        assert answer is not None
        return answer

    def ok(self, method: str, **params: Any) -> Any:
        answer = self.call(method, **params)
        assert "error" not in answer, answer
        return answer["result"]


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", seed=3) as made:
        yield made


def record(agent: Agent, text: str, **extra: Any) -> str:
    result = agent.ok("recordDecision", decision=text, skipGuardrails=True, **extra)
    return str(result["id"])


def test_history_tells_every_change_from_either_end(app: Decigraph) -> None:
    planner, reviewer = Agent(app, "planner"), Agent(app, "reviewer")
    cache = record(
        planner,
        "Cache session tokens in Redis with a 30 minute expiry",
        category="architecture",
        confidence=0.7,
    )
    api = record(planner, "Expose the session API over gRPC to the mobile gateway")
    planner.ok("linkDecisions", sourceId=api, targetId=cache, edgeType="depends_on")
    planner.ok("updateDecision", id=cache, updates={"confidence": 0.9, "tags": ["sessions"]})
    reviewer.ok("reviewDecision", id=cache, outcome="partial", lessons="Expiry too short")
    planner.ok("setLifecycle", id=cache, lifecycle="rejected")
    newer = record(planner, "Keep session tokens in PostgreSQL, not Redis", supersedes=[cache])
    planner.ok("unlinkDecisions", sourceId=api, targetId=cache)

    history = planner.ok("getDecisionHistory", id=cache)
    assert history["id"] == cache
    assert history["exists"] is True
    events = [e for e in history["events"] if e["action"] != "auto-linked"]
    actions = [(e["action"], e["actor"]) for e in events]
    assert actions == [
        ("recorded", "planner"),
        ("linked", "planner"),
        ("updated", "planner"),
        ("reviewed", "reviewer"),
        ("lifecycle", "planner"),
        ("superseded", "planner"),
        ("unlinked", "planner"),
    ]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert events[1]["edge"] == {
        "source": api,
        "target": cache,
        "type": "depends_on",
        "origin": "manual",
    }
    assert events[2]["changes"] == {
        "confidence": {"before": 0.7, "after": 0.9},
        "tags": {"before": [], "after": ["sessions"]},
    }
    assert events[3]["review"]["outcome"] == "partial"
    assert events[3]["changes"]["status"] == {"before": "pending", "after": "reviewed"}
    assert events[4]["changes"] == {"lifecycle": {"before": "accepted", "after": "rejected"}}
    assert events[5]["edge"]["source"] == newer
    assert events[6]["edge"] == {"source": api, "target": cache, "type": None}

    # ... and the other end sees the same link and unlink.
    def manual(node_id: str) -> list[str]:
        got = planner.ok("getDecisionHistory", id=node_id)["events"]
        return [e["action"] for e in got if e["action"] != "auto-linked"]

    assert manual(api) == ["recorded", "linked", "unlinked"]
    assert manual(newer) == ["recorded", "supersedes"]
    derived = [e for e in history["events"] if e["action"] == "auto-linked"]
    assert derived
    assert all(e["edge"]["origin"] == "auto" for e in derived)


def test_a_forgotten_decision_keeps_its_history(app: Decigraph) -> None:
    agent = Agent(app)
    node = record(agent, "Store raw clickstream in S3 for 13 months")
    agent.ok("forget", id=node, reason="GDPR request")
    history = agent.ok("getDecisionHistory", decisionId=node)
    assert history["exists"] is False
    assert [e["action"] for e in history["events"]] == ["recorded", "forgotten"]
    assert agent.ok("getDecision", id=node)["found"] is False


def test_unknown_ids_and_bad_params_are_refused_naming_the_field(app: Decigraph) -> None:
    agent = Agent(app)
    record(agent, "Deploy on Fridays only with a rollback plan")
    missing = agent.call("getDecisionHistory", id="deadbeef")
    assert missing["error"]["data"]["field"] == "id"
    assert "deadbeef" in missing["error"]["message"]
    for params in ({}, {"id": 5}, {"id": ""}):
        answer = agent.call("getDecisionHistory", **params)
        assert answer["error"]["code"] == -32602, answer


def test_valid_at_keeps_what_was_in_force_then(app: Decigraph) -> None:
    agent = Agent(app)
    old = record(
        agent, "Run the nightly ETL with cron on the batch host", validFrom="2025-01-10T09:00:00Z"
    )
    rejected = record(
        agent, "Move the ETL to a managed Spark cluster", occurredAt="2025-02-01T09:00:00Z"
    )
    agent.ok("setLifecycle", id=rejected, lifecycle="rejected")
    stamps = app.store.read_events(app.store.seq, app.store.seq)[0].ts
    newer = record(agent, "Run the nightly ETL on Airflow", supersedes=[old])
    superseded_at = app.store.read_events(app.store.seq, app.store.seq)[0].ts

    def ids(valid_at: str) -> set[str]:
        listing = agent.ok("listDecisions", validAt=valid_at, limit=50)
        assert listing["validAt"][:19] == valid_at[:19]
        return {d["id"] for d in listing["decisions"]}

    assert ids("2025-01-05T00:00:00Z") == set()
    assert ids("2025-01-20T00:00:00Z") == {old}
    assert ids("2025-03-01T00:00:00Z") == {old, rejected}  # rejected only later, at `stamps`
    assert rejected not in ids(stamps)
    assert old in ids(stamps)
    assert ids(superseded_at) == {newer}  # the supersession ends the old one's validity
    # A graph read honours it too: the superseded decision is not in the later neighbourhood.
    graph = agent.ok("getGraph", nodeId=newer, depth=1, validAt=superseded_at)
    assert {n["id"] for n in graph["nodes"]} == {newer}
    before = agent.ok("getGraph", nodeId=newer, depth=1)
    assert {n["id"] for n in before["nodes"]} == {newer, old}


def test_as_of_times_resolve_by_the_log_prefix(app: Decigraph) -> None:
    agent = Agent(app)
    for text in (
        "Adopt trunk-based development",
        "Tag releases with semver",
        "Sign container images with cosign",
    ):
        record(agent, text)
    events = app.store.read_events(1, app.store.seq)
    index = HistoryIndex(app.store)
    assert index.built_to == 0  # nothing is read until a history question is asked
    for event in events:
        when = datetime.fromisoformat(event.ts.replace("Z", "+00:00"))
        assert index.seq_at(when) == event.seq
    assert index.seq_at(datetime(1999, 1, 1, tzinfo=UTC)) == 0
    assert index.built_to == len(events)
    newest = record(agent, "Pin base images by digest")
    assert index.seqs_of(newest) == [app.store.seq]  # kept up to date by the listener


def test_a_forget_shows_in_the_history_of_what_it_was_linked_to(app: Decigraph) -> None:
    agent = Agent(app)
    base = record(agent, "Standardise service logs on JSON lines with a trace id")
    user = record(agent, "Ship logs from every pod with Vector to the central store")
    unrelated = record(agent, "Rotate on-call weekly across the platform team")
    agent.ok("linkDecisions", sourceId=user, targetId=base, edgeType="depends_on")
    agent.ok("linkDecisions", sourceId=unrelated, targetId=base, edgeType="relates_to")
    agent.ok("unlinkDecisions", sourceId=unrelated, targetId=base)
    agent.ok("forget", id=user, reason="duplicate")
    agent.ok("forget", id=unrelated, reason="wrong store")
    events = agent.ok("getDecisionHistory", id=base)["events"]
    dropped = [e for e in events if (e.get("edge") or {}).get("forgotten")]
    user_forget = app.history.seqs_of(user)[-1]
    assert {"source": user, "target": base, "type": "depends_on", "forgotten": user} in [
        e["edge"] for e in dropped
    ]
    assert all(e["action"] in ("unlinked", "auto-unlinked") for e in dropped)
    assert all(
        (e["action"] == "auto-unlinked") == (e["edge"].get("origin") == "auto") for e in dropped
    )
    assert all(e["seq"] == user_forget for e in dropped if e["edge"]["forgotten"] == user)
    # The relates_to link was unlinked before `unrelated` was forgotten: nothing dropped then.
    assert not [e for e in dropped if e["edge"]["type"] == "relates_to"]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
