"""State reported truthfully (issue 12, points 5-7), through the JSON-RPC methods in-process:
supersession in every answer, filters and export; reviews as history; no-op updates that
write nothing; recall explanations that show each edge as stored and never go in circles."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graph.enums import Lifecycle
from graph.events import Event, Operation
from graph.export import export_graph
from graph.importer import read_export
from graph.store import DecisionStore, StoreOptions
from service.analyst import Analyst
from service.client import AnalystError, InProcess
from service.usecases import Decigraph
from tests.support.fakes import fake_app

# Distinct words, so the hash embedder sees no contradiction between them.
TEXTS = {
    "pending": "Adopt trunk based development for the web repo",
    "reviewed": "Keep nightly backups of the billing ledger",
    "proposed": "Evaluate feature flags for checkout experiments",
    "rejected": "Rewrite the mobile app in Flutter",
    "old": "Deploy services with hand written shell scripts",
    "new": "Deploy services through Argo CD pipelines",
}
SHARED = "services ledger repo checkout app pipelines"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 11) as made:
        yield made


@pytest.fixture
def rpc(app: Decigraph) -> InProcess:
    return InProcess(app, agent="agent-a")  # not closed here: fake_app closes the store


def record(rpc: InProcess, text: str, **fields: Any) -> str:
    return str(rpc.call("cstp.recordDecision", {"decision": f"{text} ({SHARED})", **fields})["id"])


@pytest.fixture
def ids(app: Decigraph, rpc: InProcess) -> dict[str, str]:
    """One decision in each state: pending, reviewed, proposed, rejected, superseded, and the
    one that supersedes it."""
    made = {name: record(rpc, text) for name, text in TEXTS.items()}
    rpc.call("cstp.reviewDecision", {"id": made["reviewed"], "outcome": "success"})
    app.store.set_lifecycle(made["proposed"], Lifecycle.PROPOSED, "agent-a")
    app.store.set_lifecycle(made["rejected"], Lifecycle.REJECTED, "agent-a")
    app.store.supersede(made["new"], made["old"], "agent-a")
    return made


# -- 5. supersession everywhere -------------------------------------------------------------
def test_get_decision_says_superseded_and_by_whom(rpc: InProcess, ids: dict[str, str]) -> None:
    old = rpc.call("cstp.getDecision", {"id": ids["old"]})["decision"]
    new = rpc.call("cstp.getDecision", {"id": ids["new"]})["decision"]
    assert (old["lifecycle"], old["supersededBy"], old["supersedes"]) == (
        "superseded",
        [ids["new"]],
        [],
    )
    assert (new["lifecycle"], new["supersededBy"], new["supersedes"]) == (
        "accepted",
        [],
        [ids["old"]],
    )
    assert old["status"] == "pending"  # CSTP's review status is the other axis


def test_list_query_and_recall_report_the_effective_lifecycle(
    rpc: InProcess, ids: dict[str, str]
) -> None:
    listed = rpc.call("cstp.listDecisions", {"status": "superseded"})["decisions"]
    assert [(d["id"], d["lifecycle"], d["supersededBy"]) for d in listed] == [
        (ids["old"], "superseded", [ids["new"]])
    ]
    everything = rpc.call("cstp.listDecisions", {"limit": 50})["decisions"]
    assert {d["id"]: d["lifecycle"] for d in everything}[ids["old"]] == "superseded"
    queried = rpc.call(
        "cstp.queryDecisions", {"query": SHARED, "filters": {"status": "superseded"}}
    )["decisions"]
    assert [(d["id"], d["lifecycle"], d["status"]) for d in queried] == [
        (ids["old"], "superseded", "pending")
    ]
    recalled = rpc.call(
        "cstp.recall", {"query": SHARED, "limit": 20, "filters": {"includeSuperseded": True}}
    )["results"]
    states = {r["id"]: (r["lifecycle"], r["supersededBy"]) for r in recalled}
    assert states[ids["old"]] == ("superseded", [ids["new"]])
    assert states[ids["rejected"]] == ("rejected", [])
    stats = rpc.call("cstp.getStats", {})
    assert stats["byLifecycle"] == {"accepted": 3, "proposed": 1, "rejected": 1, "superseded": 1}


FILTERS: list[dict[str, Any]] = [
    {"status": "pending"},
    {"status": "reviewed"},
    {"status": "superseded"},
    {"lifecycle": "superseded"},
    {"lifecycle": "proposed"},
    {"status": "rejected"},
    {"lifecycle": ["accepted", "rejected"]},
    {"status": "pending", "lifecycle": "accepted"},
    {"status": "pending", "includeSuperseded": True},
    {"includeSuperseded": False},
]


@pytest.mark.parametrize("given", FILTERS, ids=[json.dumps(f) for f in FILTERS])
def test_status_and_lifecycle_filters_mean_the_same_in_list_query_and_recall(
    rpc: InProcess, ids: dict[str, str], given: dict[str, Any]
) -> None:
    names = {node_id: name for name, node_id in ids.items()}
    filters = {"includeSuperseded": False, **given}  # the searches' default, named for the list
    listed = rpc.call("cstp.listDecisions", {"limit": 50, **filters})["decisions"]
    queried = rpc.call(
        "cstp.queryDecisions",
        {"query": SHARED, "limit": 50, "retrievalMode": "semantic", "filters": filters},
    )["decisions"]
    recalled = rpc.call("cstp.recall", {"query": SHARED, "limit": 50, "filters": filters})
    found = [
        sorted(names[d["id"]] for d in rows) for rows in (listed, queried, recalled["results"])
    ]
    assert found[0] == found[1] == found[2]
    assert found[0]  # every case selects something
    lifecycles = given.get("lifecycle")
    for row in [*listed, *queried, *recalled["results"]]:
        if isinstance(lifecycles, str):
            assert row["lifecycle"] == lifecycles
        if given.get("status") in ("pending", "reviewed"):
            assert row["status"] == given["status"]
        elif "status" in given:
            assert row["lifecycle"] == given["status"]


def test_exports_and_the_analyst_agree_and_read_back(app: Decigraph, ids: dict[str, str]) -> None:
    G = app.store.graph
    doc = json.loads(export_graph(G, "json")["graph.json.json"])
    lifecycles = {n["id"]: n["lifecycle"] for n in doc["nodes"]}
    assert lifecycles[ids["old"]] == "superseded"
    assert lifecycles[ids["new"]] == "accepted"
    assert "`lifecycle`: 'superseded'" in export_graph(G, "cypher")["graph.cypher"]
    assert '<data key="d' in export_graph(G, "graphml")["graph.graphml"]
    for fmt in ("json", "graphml", "csv"):
        document = read_export(fmt, export_graph(G, fmt))
        assert {n.id: n for n in document.nodes}[ids["old"]].lifecycle.value == "accepted"
        with DecisionStore.open(app.store.data_dir.parent / f"into-{fmt}") as target:
            target.import_graph(document.nodes, document.edges, "restorer")
            assert target.graph_hash() == app.store.graph_hash(), fmt
    table = Analyst(InProcess(app)).decisions().set_index("id")
    assert table.loc[ids["old"], "lifecycle"] == "superseded"
    assert table.loc[ids["rejected"], "lifecycle"] == "rejected"


# -- 6. reviews are history -----------------------------------------------------------------
def test_a_second_review_appends_and_replay_rebuilds_the_history(
    app: Decigraph, rpc: InProcess, ids: dict[str, str], tmp_path: Path
) -> None:
    node_id = ids["pending"]
    rpc.call(
        "cstp.reviewDecision",
        {"id": node_id, "outcome": "partial", "actualResult": "slow", "lessons": "measure"},
    )
    second = InProcess(app, agent="agent-b")
    second.call("cstp.reviewDecision", {"id": node_id, "outcome": "success", "notes": "fixed"})
    got = rpc.call("cstp.getDecision", {"id": node_id})["decision"]
    reviews = got["reviews"]
    assert [(r["outcome"], r["reviewedBy"]) for r in reviews] == [
        ("partial", "agent-a"),
        ("success", "agent-b"),
    ]
    assert (reviews[0]["actualResult"], reviews[0]["lessons"]) == ("slow", "measure")
    assert reviews[0]["reviewedAt"] < reviews[1]["reviewedAt"] == got["reviewedAt"]
    # The flat fields are the latest review, and only it (CSTP clients read them).
    assert (got["outcome"], got["reviewedBy"], got["reviewNotes"]) == (
        "success",
        "agent-b",
        "fixed",
    )
    assert not {"lessons", "actualResult"} & got.keys()
    once = rpc.call("cstp.getDecision", {"id": ids["reviewed"]})["decision"]
    assert [r["outcome"] for r in once["reviews"]] == ["success"]
    assert rpc.call("cstp.getDecision", {"id": ids["new"]})["decision"]["reviews"] == []

    events = [Event.from_line(line) for line in app.store.log_path.read_bytes().splitlines()]
    payloads = [e.payload for e in events if e.op is Operation.REVIEW]
    assert payloads[-1] == {"id": node_id, "outcome": "success", "notes": "fixed"}  # as before
    assert "past_reviews" not in app.store.graph.nodes[ids["reviewed"]]  # one review: as before
    served = app.store.graph_hash()
    for use_snapshot in (False, True):
        app.store.write_snapshot()
        with DecisionStore.open(
            app.store.data_dir, StoreOptions(read_only=True, use_snapshot=use_snapshot)
        ) as replayed:
            assert replayed.graph_hash() == served
            assert replayed.get(node_id).reviews() == app.store.get(node_id).reviews()


def test_a_no_op_update_writes_nothing(app: Decigraph, rpc: InProcess, ids: dict[str, str]) -> None:
    node_id = ids["pending"]
    rpc.call("cstp.updateDecision", {"id": node_id, "updates": {"confidence": 0.7, "tags": ["a"]}})
    current = rpc.call("cstp.getDecision", {"id": node_id})["decision"]
    seq, size = app.store.seq, app.store.log_path.stat().st_size
    same = {
        "decision": current["decision"],
        "confidence": 0.7,
        "tags": [" a ", "a"],  # cleaned to the stored ["a"]
        "pattern": None,
    }
    answer = rpc.call("cstp.updateDecision", {"id": node_id, "updates": same})
    assert answer["changed"] == answer["updated_fields"] == []
    assert answer["version"] == current["version"]
    assert (app.store.seq, app.store.log_path.stat().st_size) == (seq, size)
    # Only what differs is written.
    partly = rpc.call(
        "cstp.updateDecision", {"id": node_id, "updates": {"confidence": 0.7, "stakes": "low"}}
    )
    assert partly["changed"] == ["stakes"]
    assert partly["version"] == current["version"] + 1
    last = Event.from_line(app.store.log_path.read_bytes().splitlines()[-1])
    assert last.payload["changes"] == {"stakes": "low"}
    # A stale expected version is still a conflict, not a silent no-op.
    with pytest.raises(AnalystError):
        rpc.call(
            "cstp.updateDecision",
            {"id": node_id, "updates": {"stakes": "low"}, "expectedVersion": 1},
        )


# -- 7. explanations that are true ----------------------------------------------------------
def chains(results: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {r["id"]: r["via"]["path"] for r in results}


def walked(hop: dict[str, Any]) -> tuple[str, str]:
    """(walked from, walked to) of a hop (a hop without ``walked`` reads forward)."""
    if hop.get("walked") == "backward":
        return hop["to"], hop["from"]
    return hop["from"], hop["to"]


def assert_true_paths(app: Decigraph, results: list[dict[str, Any]]) -> None:
    """Each hop is a stored edge read as stored; hops chain along the walk to the hit; no hit
    is explained, through the start of its path, by itself."""
    G = app.store.graph
    paths = chains(results)
    for hit, path in paths.items():
        at = None
        for hop in path:
            kind = hop["edgeType"]
            assert G.has_edge(hop["from"], hop["to"], kind), f"{hop} is not stored that way"
            start, end = walked(hop)
            assert at is None or start == at
            at = end
        assert at in (None, hit)
        seen, current = {hit}, hit
        while paths.get(current):
            current = walked(paths[current][0])[0]
            assert current not in seen, f"{hit} is explained through itself"
            seen.add(current)


def test_recall_shows_each_edge_in_its_stored_direction(app: Decigraph, rpc: InProcess) -> None:
    pg = record(rpc, "Use Postgres as the primary datastore")
    orm = record(rpc, "Use SQLAlchemy for database access")
    rpc.call("cstp.linkDecisions", {"sourceId": orm, "targetId": pg, "edgeType": "depends_on"})
    answer = rpc.call(
        "cstp.recall", {"query": "why Postgres datastore", "intent": "why", "explain": True}
    )
    assert_true_paths(app, answer["results"])
    hops = [hop for path in chains(answer["results"]).values() for hop in path]
    between = [h for h in hops if {h["from"], h["to"]} == {pg, orm}]
    assert between
    assert all((h["from"], h["edgeType"], h["to"]) == (orm, "depends_on", pg) for h in between)


def test_anchors_do_not_explain_each_other_in_circles(app: Decigraph, rpc: InProcess) -> None:
    a = record(rpc, "Adopt Kafka for order events")
    b = record(rpc, "Adopt Kafka for payment events")
    c = record(rpc, "Adopt Kafka for audit events")
    for source, target in ((a, b), (b, c), (c, a)):
        rpc.call(
            "cstp.linkDecisions", {"sourceId": source, "targetId": target, "edgeType": "refines"}
        )
    rpc.call("cstp.linkDecisions", {"sourceId": a, "targetId": c, "edgeType": "relates_to"})
    for intent in ("why", "general", "when", "entity"):
        answer = rpc.call(
            "cstp.recall", {"query": "Kafka events", "intent": intent, "explain": True}
        )
        assert {a, b, c} <= {r["id"] for r in answer["results"]}
        assert_true_paths(app, answer["results"])


def test_recall_accepts_include_reasons_like_query(rpc: InProcess) -> None:
    reasons = [{"type": "analysis", "text": "the team knows it", "strength": 0.9}]
    node_id = record(rpc, "Use Postgres as the primary datastore", reasons=reasons)
    plain = rpc.call("cstp.recall", {"query": "Postgres datastore"})["results"]
    assert all("reasons" not in r for r in plain)
    full = rpc.call("cstp.recall", {"query": "Postgres datastore", "includeReasons": True})
    assert {r["id"]: r["reasons"] for r in full["results"]}[node_id] == reasons
    queried = rpc.call("cstp.queryDecisions", {"query": "Postgres", "includeReasons": True})
    assert {d["id"]: d["reasons"] for d in queried["decisions"]}[node_id] == reasons


def test_a_why_question_includes_the_history_it_asks_about(rpc: InProcess) -> None:
    """Recall hides superseded decisions, except for a WHY question (the replaced decision is
    often the reason), and the caller can still say no."""
    old = record(rpc, "Backfill the ledger with one bulk COPY job")
    new = record(rpc, "Backfill the ledger in monthly chunks", supersedes=[old])
    question = "why backfill the ledger in monthly chunks instead of one bulk COPY job"

    def found(**params: Any) -> dict[str, str]:
        answer = rpc.call("cstp.recall", {"query": question, "limit": 20, **params})
        return {r["id"]: r["lifecycle"] for r in answer["results"]}

    why = found(intent="why")
    assert why.get(old) == "superseded"
    assert new in why
    assert old not in found(intent="general")
    assert old not in found(intent="why", filters={"includeSuperseded": False})
