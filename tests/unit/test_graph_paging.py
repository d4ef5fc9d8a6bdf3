"""``getGraph`` pages for hubs: ``get_graph(limit=, offset=)`` and ``maxNodes``/``cursor``."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graph.algorithms.traversal import get_graph
from graph.builders import build_graph
from graph.errors import ValidationError
from service.usecases import Decigraph
from tests.conftest import decision
from tests.support.fakes import InProcessRpc, fake_app

TYPES = ["depends_on", "relates_to", "contradicts", "blocks", "supersedes", "semantic"]


def random_graph(seed: int, n: int = 40, m: int = 90) -> Any:
    rng = random.Random(seed)
    ids = [f"{i:08x}" for i in range(n)]
    edges: list[tuple[str, str, str]] = []
    for _ in range(m):
        hub = ids[0] if rng.random() < 0.4 else rng.choice(ids)  # a hub: many edges at ids[0]
        other = rng.choice(ids)
        if other != hub:
            kind = rng.choice(TYPES)
            edges.append((hub, other, kind) if rng.random() < 0.5 else (other, hub, kind))
    acyclic = {"depends_on", "blocks", "supersedes"}
    edges = [(u, v, k) for u, v, k in edges if k not in acyclic or u > v]  # keep those acyclic
    return build_graph(ids, edges), ids


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("direction", ["both", "outgoing", "incoming"])
def test_pages_give_every_node_and_edge_once(seed: int, direction: str) -> None:
    G, ids = random_graph(seed)
    rng = random.Random(seed)
    for start in rng.sample(ids, 4):
        depth = rng.choice([1, 2, 3])
        types = rng.choice([None, ["depends_on", "contradicts", "semantic"]])
        whole = get_graph(G, start, depth, types, direction)
        one = get_graph(G, start, depth, types, direction, limit=5000)
        assert (one.nodes, one.edges) == (whole.nodes, whole.edges)  # within the cap: identical
        assert (one.total, one.next_offset) == (len(whole.nodes), None)
        limit = rng.choice([1, 2, 3, 7])
        nodes, edges, offset, seen = [], [], 0, set()
        while True:
            page = get_graph(G, start, depth, types, direction, limit=limit, offset=offset)
            assert len(page.nodes) <= limit
            nodes += page.nodes
            seen |= {n.id for n in page.nodes}
            for e in page.edges:  # each end is on this page or an earlier one
                assert e.source in seen
                assert e.target in seen
            edges += page.edges
            if page.next_offset is None:
                break
            offset = page.next_offset
        assert nodes == whole.nodes
        assert sorted(e.sort_key for e in edges) == [e.sort_key for e in whole.edges]


def test_page_arguments_are_checked() -> None:
    G, ids = random_graph(0)
    with pytest.raises(ValidationError) as raised:
        get_graph(G, ids[0], limit=0)
    assert raised.value.field == "limit"
    with pytest.raises(ValidationError) as raised:
        get_graph(G, ids[0], limit=5, offset=-1)
    assert raised.value.field == "cursor"
    past = get_graph(G, ids[0], limit=5, offset=10_000)
    assert (past.nodes, past.edges, past.next_offset) == ([], [], None)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def call(app: Decigraph, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return InProcessRpc(app, "a").call(method, params)


def test_get_graph_pages_a_hub_over_json_rpc(app: Decigraph) -> None:
    store = app.store
    hub = store.record(decision("the hub"), "a").id
    spokes = [store.record(decision(f"spoke {i}"), "a").id for i in range(7)]
    for spoke in spokes:
        store.link(spoke, hub, "depends_on", "a")
    full = call(app, "getGraph", {"nodeId": hub})["result"]
    assert len(full["nodes"]) == 8
    assert "truncated" not in full
    assert "nextCursor" not in full
    got: list[str] = []
    edges: list[Any] = []
    params: dict[str, Any] = {"nodeId": hub, "maxNodes": 3}
    while True:
        page = call(app, "getGraph", params)["result"]
        got += [n["id"] for n in page["nodes"]]
        edges += page["edges"]
        assert page["totalNodes"] == 8
        if page["nextCursor"] is None:
            assert page["truncated"] is False
            break
        assert page["truncated"] is True
        params = {**params, "cursor": page["nextCursor"]}
    assert got == [n["id"] for n in full["nodes"]]
    assert sorted(map(str, edges)) == sorted(map(str, full["edges"]))
    bad = call(app, "getGraph", {"nodeId": hub, "cursor": "x"})
    assert bad["error"]["code"] == -32602
