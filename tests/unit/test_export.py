"""Exports: every format carries the whole graph and reads back into the same graph."""

from __future__ import annotations

import csv
import io
import json

import networkx as nx
import pytest

from graph.errors import ValidationError
from graph.export import attrs_from_flat, export_graph, to_csv, to_cypher, to_graphml, to_node_link
from graph.model import Reason
from graph.state import graph_hash
from tests.conftest import StoreFactory, decision


@pytest.fixture
def G(  # noqa: N802 - the networkx convention for a graph
    open_store: StoreFactory,
) -> nx.MultiDiGraph[str]:
    store = open_store()
    a = store.record(
        decision(
            "Use PostgreSQL",
            tags=["db", "it's"],
            stakes="high",
            reasons=[Reason(type="analysis", text="ACID")],
        ),
        "t",
    ).id
    b = store.record(decision("Shard by tenant\nline two", confidence=0.8), "t").id
    c = store.record(decision('Quote "this" and \\ that'), "t").id
    store.link(b, a, "depends_on", "t", weight=2.0, context="needs it")
    store.link(a, c, "relates_to", "t")
    return store.graph


def rebuilt(
    nodes: list[tuple[str, dict]], edges: list[tuple[str, str, str, dict]]
) -> nx.MultiDiGraph[str]:
    H: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    for node_id, attrs in nodes:
        H.add_node(node_id, **attrs)
    for u, v, k, attrs in edges:
        H.add_edge(u, v, key=k, **attrs)
    return H


def test_node_link_round_trips(G: nx.MultiDiGraph[str]) -> None:
    doc = json.loads(json.dumps(to_node_link(G)))
    H = rebuilt(
        [(n.pop("id"), n) for n in doc["nodes"]],
        [(e.pop("source"), e.pop("target"), e.pop("type"), e) for e in doc["links"]],
    )
    assert graph_hash(H) == graph_hash(G)


def test_graphml_round_trips(G: nx.MultiDiGraph[str]) -> None:
    R = nx.read_graphml(io.BytesIO(to_graphml(G).encode()), force_multigraph=True)
    H = rebuilt(
        [(n, attrs_from_flat(dict(d))) for n, d in R.nodes(data=True)],
        [
            (u, v, k, {a: b for a, b in attrs_from_flat(dict(d)).items() if a != "type"})
            for u, v, k, d in R.edges(keys=True, data=True)
        ],
    )
    assert graph_hash(H) == graph_hash(G)


def test_csv_round_trips(G: nx.MultiDiGraph[str]) -> None:
    files = to_csv(G)
    nodes = [
        (row.pop("id"), attrs_from_flat({k: _typed(v) for k, v in row.items() if v != ""}))
        for row in csv.DictReader(io.StringIO(files["nodes.csv"]))
    ]
    edges = [
        (
            row.pop("source"),
            row.pop("target"),
            row.pop("type"),
            attrs_from_flat({k: _typed(v) for k, v in row.items() if v != ""}),
        )
        for row in csv.DictReader(io.StringIO(files["edges.csv"]))
    ]
    assert graph_hash(rebuilt(nodes, edges)) == graph_hash(G)


def _typed(value: str) -> object:
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def test_cypher_merges_every_node_and_edge_with_escaping(G: nx.MultiDiGraph[str]) -> None:
    script = to_cypher(G)
    assert script.count("MERGE (n:Node") == 3
    assert script.count("MERGE (a)-[r:") == G.number_of_edges()
    assert "[r:DEPENDS_ON]" in script
    assert "it\\'s" in script
    assert "line two" in script
    assert "\nline two" not in script
    assert all(line.endswith(";") for line in script.splitlines()[1:])


def test_unknown_format_is_refused(G: nx.MultiDiGraph[str]) -> None:
    with pytest.raises(ValidationError) as info:
        export_graph(G, "xlsx")
    assert info.value.field == "format"


def test_every_structured_node_field_is_decoded_on_import() -> None:
    """Flat formats hold lists and objects as JSON text; the importer decodes only the fields it
    names, so a new list or object field of a node must be named there too."""
    import typing

    from pydantic import BaseModel

    from graph.importer import NODE_STRUCTURED
    from graph.model import Node

    def structured(annotation: object) -> bool:
        origin = typing.get_origin(annotation)
        if origin in (list, dict) or annotation in (list, dict):
            return True
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return True
        return any(structured(arg) for arg in typing.get_args(annotation))

    wanted = {name for name, f in Node.model_fields.items() if structured(f.annotation)}
    assert wanted == set(NODE_STRUCTURED)
