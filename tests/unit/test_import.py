"""Importing an export into a store through the event log: same graph, same hash, replayable."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graph.drafts import EdgeDraft, MemoryDraft
from graph.errors import (
    CycleError,
    DecigraphError,
    DuplicateIdError,
    NodeNotFoundError,
    ValidationError,
)
from graph.events import Event, Operation
from graph.export import export_graph
from graph.importer import read_export, read_export_files
from graph.model import Reason
from graph.restore import plan_import
from graph.state import GraphState
from graph.store import DecisionStore
from retrieval.index import DualIndex
from retrieval.nodekeys import touched_nodes
from tests.conftest import StoreFactory, decision
from tests.support.fakes import HashEmbedder, MemoryVectorIndex

FORMATS = ["d3", "json", "graphml", "csv"]


def build_source(store: DecisionStore) -> DecisionStore:
    """A store exercising every stored attribute: reviews, lifecycle, supersession, memory."""
    db = store.record(
        decision(
            "Use PostgreSQL for the billing ledger",
            stakes="high",
            category="architecture",
            confidence=0.85,
            tags=["db", "it's"],
            reasons=[Reason(type="analysis", text="ACID", strength=0.9)],
            context='Quote "this", a comma, and \\ a backslash\nline two\r\nline three',
            project="billing",
            review_in="2w",
        ),
        "agent-a",
    ).id
    orm = store.record(decision("Use SQLAlchemy 2.0", confidence=1.0), "agent-a").id
    cache = store.record(decision("Cache sessions in Redis", lifecycle="proposed"), "agent-b").id
    nocache = store.record(decision("Do not cache sessions"), "agent-b").id
    looks = store.record(decision("[1, 2]"), "agent-b").id  # text that reads as JSON
    old = store.record(decision("Run migrations by hand"), "agent-a").id
    new = store.record(decision("Run migrations in CI"), "agent-a").id
    store.update(orm, {"text": "Use SQLAlchemy 2.0 with asyncpg", "tags": ["orm"]}, "agent-b")
    store.review(db, "success", "agent-c", lessons="held at 5k tps", actual_result="fine")
    store.review(cache, "failure", "agent-c", notes="evictions")
    store.set_lifecycle(nocache, "rejected", "agent-a", reason="we cache after all")
    store.supersede(new, old, "agent-a", context="CI is safer")
    store.link(orm, db, "depends_on", "agent-a", weight=2.0, context="needs it")
    store.link(cache, db, "blocks", "agent-a")
    store.link(cache, nocache, "contradicts", "agent-b")
    store.link(looks, cache, "relates_to", "agent-b")
    store.unlink(looks, cache, "agent-b")
    store.link(looks, orm, "refines", "agent-b")
    when = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
    seen = store.remember(
        MemoryDraft(
            text="Checkout latency doubled after the Redis upgrade",
            source="ops",
            occurred_at=when,
            entities=["Redis", "checkout"],
            external_id="m1",
        ),
        "agent-a",
    ).id
    fact = store.remember(MemoryDraft(text="The ledger holds 4 TB", kind="fact"), "agent-a").id
    auto = EdgeDraft(seen, cache, "caused_by", 0.4, None, "auto", {"rule": "cites", "n": 2})
    store.link_many([auto, EdgeDraft(fact, db, "entity", 0.25, origin="auto")], "agent-a")
    gone = store.record(decision("Temporary"), "agent-a").id
    store.link(gone, db, "relates_to", "agent-a")
    store.forget(gone, "agent-a")
    return store


@pytest.fixture
def source(open_store: StoreFactory, tmp_path: Path) -> DecisionStore:
    return build_source(open_store(tmp_path / "source"))


def log_state(store: DecisionStore) -> tuple[int, int, str]:
    return (
        store.seq,
        store.log_path.stat().st_size if store.log_path.exists() else 0,
        (store.graph_hash()),
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_then_import_gives_the_same_graph(
    source: DecisionStore, open_store: StoreFactory, tmp_path: Path, fmt: str
) -> None:
    nodes, edges = read_export(fmt, export_graph(source.graph, fmt))
    target = open_store(tmp_path / "target")
    report = target.import_graph(nodes, edges, "restorer")
    assert target.graph_hash() == source.graph_hash()
    assert (report.nodes, report.events) == (source.graph.number_of_nodes(), 1)
    assert target.verify().ok
    assert target.get(nodes[0].id) == source.get(nodes[0].id)
    target.close()
    for options in ({}, {"use_snapshot": False}):  # from the snapshot, and a full replay
        reopened = open_store(tmp_path / "target", **options)
        assert reopened.graph_hash() == source.graph_hash()
        assert reopened.find_external("m1") == source.find_external("m1")
        reopened.close()


def test_events_are_chunked_nodes_first_and_replay_from_snapshot_plus_tail(
    source: DecisionStore, open_store: StoreFactory, tmp_path: Path
) -> None:
    nodes, edges = read_export("graphml", export_graph(source.graph, "graphml"))
    target = open_store(tmp_path / "target", snapshot_every=3)
    report = target.import_graph(nodes, edges, "restorer", chunk=4, note={"format": "graphml"})
    items = report.nodes + report.edges
    assert report.events == math.ceil(items / 4) == target.seq
    events = [Event.from_line(line) for line in target.log_path.read_bytes().splitlines()]
    assert {e.op for e in events} == {Operation.IMPORT}
    assert {e.actor for e in events} == {"restorer"}
    sizes = [len(e.payload["nodes"]) + len(e.payload["edges"]) for e in events]
    assert max(sizes) == 4
    assert sum(sizes) == items
    kinds = "".join("n" * len(e.payload["nodes"]) + "e" * len(e.payload["edges"]) for e in events)
    assert kinds == "n" * report.nodes + "e" * report.edges
    last = len(events)
    assert events[-1].payload["note"] == {"format": "graphml", "part": last, "parts": last}
    assert 0 < target.snapshot_seq < target.seq  # a snapshot mid-import, and a tail after it
    reader = open_store(tmp_path / "target", read_only=True)  # snapshot + tail, beside the writer
    assert reader.open_report.snapshot_seq == target.snapshot_seq
    assert reader.open_report.replayed == target.seq - target.snapshot_seq
    assert reader.graph_hash() == source.graph_hash()


def test_reimport_skips_what_is_stored_and_resumes(
    source: DecisionStore, open_store: StoreFactory, tmp_path: Path
) -> None:
    nodes, edges = read_export("csv", export_graph(source.graph, "csv"))
    target = open_store(tmp_path / "target")
    target.import_graph(nodes[:3], [], "restorer")  # an interrupted import
    report = target.import_graph(nodes, edges, "restorer")
    assert (report.skipped_nodes, report.nodes) == (3, len(nodes) - 3)
    assert target.graph_hash() == source.graph_hash()
    before = log_state(target)
    again = target.import_graph(nodes, edges, "restorer")
    assert (again.nodes, again.edges, again.events) == (0, 0, 0)
    assert again.skipped_edges == report.edges
    assert log_state(target) == before


def test_import_into_a_store_with_other_ids_merges(
    source: DecisionStore, open_store: StoreFactory, tmp_path: Path
) -> None:
    target = open_store(tmp_path / "target", seed=99)
    mine = target.record(decision("Something of our own"), "t").id
    nodes, edges = read_export("json", export_graph(source.graph, "json"))
    target.import_graph(nodes, edges, "restorer")
    assert target.graph.number_of_nodes() == source.graph.number_of_nodes() + 1
    assert target.get(mine).text == "Something of our own"
    assert target.verify().ok


def test_csv_and_graphml_values_that_look_like_json_stay_text(source: DecisionStore) -> None:
    for fmt in ("csv", "graphml"):
        nodes, _ = read_export(fmt, export_graph(source.graph, fmt))
        assert "[1, 2]" in {n.text for n in nodes}


def _d3(source: DecisionStore) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(export_graph(source.graph, "d3")["graph.d3.json"])
    return doc


def _bad_unknown_type(doc: dict[str, Any]) -> None:
    doc["links"][0]["type"] = "likes"


def _bad_dangling(doc: dict[str, Any]) -> None:
    doc["links"][0]["target"] = "0000ffff"


def _bad_cycle(doc: dict[str, Any]) -> None:
    dep = next(link for link in doc["links"] if link["type"] == "depends_on")
    doc["links"].append({**dep, "source": dep["target"], "target": dep["source"]})


def _bad_mirror(doc: dict[str, Any]) -> None:
    pair = [link for link in doc["links"] if link["type"] == "contradicts"]
    pair[1]["weight"] = 3.0


def _bad_field(doc: dict[str, Any]) -> None:
    doc["nodes"][2]["confidence"] = 7


@pytest.mark.parametrize(
    ("spoil", "error", "message"),
    [
        (_bad_unknown_type, ValidationError, "links[0]: type: 'likes' is not one of"),
        (_bad_dangling, DecigraphError, "target: no decision or memory item with id '0000ffff'"),
        (_bad_cycle, CycleError, "'depends_on' edge would create a cycle"),
        (_bad_mirror, ValidationError, "differs from its mirror"),
        (_bad_field, ValidationError, "nodes[2] (id '"),
    ],
)
def test_bad_documents_are_refused_and_write_nothing(
    source: DecisionStore,
    open_store: StoreFactory,
    tmp_path: Path,
    spoil: Callable[[dict[str, Any]], None],
    error: type[Exception],
    message: str,
) -> None:
    target = open_store(tmp_path / "target", seed=99)
    target.record(decision("Already here"), "t")
    before = log_state(target)
    doc = _d3(source)
    spoil(doc)

    def load() -> None:
        nodes, edges = read_export("d3", json.dumps(doc))
        target.import_graph(nodes, edges, "restorer", chunk=2)  # would be many events

    with pytest.raises(error) as info:
        load()
    assert message in str(info.value)
    assert log_state(target) == before


def test_an_id_collision_names_the_node_and_field(
    source: DecisionStore, open_store: StoreFactory, tmp_path: Path
) -> None:
    nodes, edges = read_export("d3", export_graph(source.graph, "d3"))
    target = open_store(tmp_path / "target")
    target.import_graph(nodes[:1], [], "restorer")
    changed = nodes[0].model_copy(update={"text": "Something else"})
    before = log_state(target)
    with pytest.raises(DuplicateIdError, match=rf"'{nodes[0].id}' already exists.*text: stored"):
        target.import_graph([changed, *nodes[1:]], edges, "restorer")
    assert log_state(target) == before


@pytest.mark.parametrize(
    ("fmt", "files", "message"),
    [
        ("graphml", {"g.graphml": "<graphml><graph><node id='a'></graph>"}, "graphml: line 1"),
        ("json", {"g.json": '{"nodes": [}'}, "json: line 1 column 12"),
        ("csv", {"nodes.csv": "id,text\n"}, "edges.csv is missing"),
        (
            "csv",
            {"nodes.csv": "id,text\n0000aaaa,x,y\n", "edges.csv": "source,target,type\n"},
            "nodes.csv line 2: has 3 cells",
        ),
        (
            "csv",
            {"nodes.csv": "id,text,tags\n0000aaaa,x,[oops\n", "edges.csv": "source,target,type\n"},
            "nodes.csv line 2: tags: is not JSON",
        ),
        ("cypher", {"g.cypher": "MERGE (n)"}, "cypher exports target Neo4j"),
    ],
)
def test_malformed_files_name_the_line(fmt: str, files: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        read_export(fmt, files)
    assert message in str(info.value)


def test_the_reducer_refuses_a_hand_edited_import_event(source: DecisionStore) -> None:
    nodes, edges = read_export("d3", export_graph(source.graph, "d3"))
    good = plan_import(GraphState().graph, {}, nodes, edges).payloads[0]
    dep = next(e for e in good["edges"] if e["type"] == "depends_on")
    cyclic = {
        **good,
        "edges": [*good["edges"], {**dep, "source": dep["target"], "target": dep["source"]}],
    }
    linked = {e["source"] for e in good["edges"]}
    dangling = {**good, "nodes": [n for n in good["nodes"] if n["id"] not in linked]}
    twice = {**good, "nodes": [*good["nodes"], good["nodes"][0]]}
    cases: list[tuple[dict[str, Any], type[DecigraphError]]] = [
        (cyclic, CycleError),
        (dangling, NodeNotFoundError),
        (twice, DuplicateIdError),
        ({"nodes": [], "edges": []}, ValidationError),
        ({**good, "nodes": [{**good["nodes"][0], "version": 0}]}, ValidationError),
    ]
    for payload, error in cases:
        state = GraphState()
        event = Event.create(
            seq=1,
            event_id="e1",
            ts="2026-03-01T09:00:00.000000Z",
            actor="x",
            op=Operation.IMPORT,
            payload=payload,
            prev=state.last_hash,
        )
        with pytest.raises(error):
            state.apply(event)
        assert (state.seq, state.graph.number_of_nodes()) == (0, 0)


def test_indexes_follow_import_events(source: DecisionStore, tmp_path: Path) -> None:
    nodes, edges = read_export("d3", export_graph(source.graph, "d3"))
    target = DecisionStore.open(tmp_path / "target")
    index = DualIndex.open(target, HashEmbedder(), MemoryVectorIndex())
    seen: list[list[str]] = []
    target.listeners.append(lambda event: seen.append(touched_nodes(event)))
    target.import_graph(nodes, edges, "restorer", chunk=5)
    assert sorted(i for ids in seen for i in ids) == sorted(n.id for n in nodes)
    assert index.check_consistency() == []
    index.close()
    target.close()


def test_export_files_are_found_by_directory_or_pair(source: DecisionStore, tmp_path: Path) -> None:
    out = tmp_path / "csv"
    out.mkdir()
    for name, content in export_graph(source.graph, "csv").items():
        (out / name).write_text(content, encoding="utf-8")
    by_dir = read_export_files("csv", [out])
    by_pair = read_export_files("csv", [out / "edges.csv", out / "nodes.csv"])
    assert by_dir == by_pair == export_graph(source.graph, "csv")
    with pytest.raises(ValidationError, match="does not exist"):
        read_export_files("graphml", [tmp_path / "missing.graphml"])
