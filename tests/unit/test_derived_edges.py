"""Derived edges in proportion: temporal edges make a session a chain, and graph queries walk
the decision relations unless asked for the derived families (``includeDerived``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from service.usecases import Decigraph
from tests.support.fakes import fake_app, rpc_result


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


call = rpc_result


def record(app: Decigraph, text: str) -> str:
    return str(call(app, "recordDecision", {"decision": text})["id"])


def test_find_path_ignores_recorded_the_same_hour_unless_asked(app: Decigraph) -> None:
    # Two unrelated decisions a second apart: a temporal edge joins them, nothing else.
    a = record(app, "Adopt trunk-based development for the mobile app")
    b = record(app, "Store invoices as PDF/A in the archive bucket")
    kinds = {k for u, v, k in app.store.graph.edges(keys=True) if {u, v} == {a, b}}
    assert kinds == {"temporal"}
    plain = call(app, "findPath", {"sourceId": a, "targetId": b})
    assert plain["found"] is False
    derived = call(app, "findPath", {"sourceId": a, "targetId": b, "includeDerived": True})
    assert derived["found"] is True
    assert derived["path"] == [a, b]
    assert [e["edgeType"] for e in derived["edges"]] == ["temporal"]
    named = call(app, "findPath", {"sourceId": a, "targetId": b, "edgeTypes": ["temporal"]})
    assert named["found"] is True  # naming a type always wins


def test_neighbours_graph_and_degrees_default_to_decision_relations(app: Decigraph) -> None:
    a = record(app, "Use PostgreSQL for the orders service")
    b = record(app, "Run orders schema migrations with Alembic")
    c = record(app, "Publish order events to the shared bus")
    call(app, "linkDecisions", {"sourceId": b, "targetId": a, "edgeType": "depends_on"})
    neighbours = call(app, "getNeighbors", {"nodeId": b})
    assert [(n["node"]["id"], n["edge"]["edgeType"]) for n in neighbours["neighbors"]] == [
        (a, "depends_on")
    ]
    assert neighbours["total"] == 1
    everything = call(app, "getNeighbors", {"nodeId": b, "includeDerived": True})
    assert {n["edge"]["edgeType"] for n in everything["neighbors"]} >= {"depends_on", "temporal"}
    assert everything["total"] > 1

    graph = call(app, "getGraph", {"nodeId": b, "depth": 2})
    assert {n["id"] for n in graph["nodes"]} == {a, b}
    assert {e["edgeType"] for e in graph["edges"]} == {"depends_on"}
    card = next(n for n in graph["nodes"] if n["id"] == b)
    assert (card["inDegree"], card["outDegree"]) == (0, 1)
    wide = call(app, "getGraph", {"nodeId": b, "depth": 2, "includeDerived": True})
    assert c in {n["id"] for n in wide["nodes"]}
    wide_card = next(n for n in wide["nodes"] if n["id"] == b)
    assert wide_card["outDegree"] > 1
