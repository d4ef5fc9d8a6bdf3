"""Property tests for the traversal queries, against NetworkX as the reference."""

from __future__ import annotations

import itertools
import random
from typing import Any

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.algorithms.traversal import (
    Path,
    ancestors,
    descendants,
    find_path,
    get_graph,
    get_neighbors,
)
from graph.builders import build_graph
from graph.enums import EdgeType
from tests.unit.test_traversal import every_answer, keys

# -- properties --------------------------------------------------------------------------------
WALK_TYPES = ["depends_on", "blocks", "refines", "supersedes", "relates_to", "contradicts"]
DIRECTED_TYPES = ["depends_on", "blocks", "supersedes"]
Spec = tuple[list[str], list[tuple[str, str, str]]]


@st.composite
def graph_specs(draw: st.DrawFn, acyclic: bool = False, max_nodes: int = 8) -> Spec:
    """Random ids (so id order is not creation order) and typed edges between them.

    With ``acyclic``, directed types only run from a later node to an earlier one.
    """
    n = draw(st.integers(1, max_nodes))
    ids = [
        f"{k:08x}"
        for k in draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n, unique=True))
    ]
    raw = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from(WALK_TYPES)),
            max_size=3 * n,
        )
    )
    edges = []
    for i, j, edge_type in raw:
        if i != j:
            later, earlier = max(i, j), min(i, j)
            u, v = (later, earlier) if acyclic and edge_type in DIRECTED_TYPES else (i, j)
            edges.append((ids[u], ids[v], edge_type))
    return ids, edges


def projection(G: Any, types: set[str] | None) -> nx.DiGraph[str]:
    H: nx.DiGraph[str] = nx.DiGraph()
    H.add_nodes_from(G)
    H.add_edges_from((u, v) for u, v, k in G.edges(keys=True) if types is None or k in types)
    return H


def canonical(u: str, v: str, key: str) -> tuple[str, str, str]:
    return (min(u, v), max(u, v), key) if EdgeType(key).symmetric else (u, v, key)


type_filters = st.one_of(st.none(), st.sets(st.sampled_from(WALK_TYPES), min_size=1))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=graph_specs(), data=st.data(), types=type_filters)
def test_get_graph_matches_bfs_distances(spec: Spec, data: st.DataObject, types: Any) -> None:
    ids, edges = spec
    G = build_graph(ids, edges)
    center = data.draw(st.sampled_from(ids))
    depth = data.draw(st.integers(1, 5))
    direction = data.draw(st.sampled_from(["outgoing", "incoming", "both"]))
    H = projection(G, types)
    walk = {"outgoing": H, "incoming": H.reverse(), "both": H.to_undirected()}[direction]
    expected = nx.single_source_shortest_path_length(walk, center, cutoff=depth)
    sub = get_graph(G, center, depth=depth, edge_types=types, direction=direction)
    assert {n.id: n.distance for n in sub.nodes} == expected
    assert [(n.distance, n.id) for n in sub.nodes] == sorted((d, n) for n, d in expected.items())
    induced = {
        canonical(u, v, k)
        for u, v, k in G.edges(keys=True)
        if u in expected and v in expected and (types is None or k in types)
    }
    assert keys(sub.edges) == sorted(induced)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=graph_specs(), data=st.data())
def test_neighbors_match_a_count_of_stored_edges(spec: Spec, data: st.DataObject) -> None:
    ids, edges = spec
    G = build_graph(ids, edges)
    node = data.draw(st.sampled_from(ids))
    direction = data.draw(st.sampled_from(["outgoing", "incoming", "both"]))
    expected: set[tuple[str, str, str]] = set()
    for u, v, k in G.edges(keys=True):
        if EdgeType(k).symmetric and node in (u, v):
            expected.add((k, u if v == node else v, "both"))
        elif u == node and direction != "incoming":
            expected.add((k, v, "outgoing"))
        elif v == node and direction != "outgoing":
            expected.add((k, u, "incoming"))
    page, total = get_neighbors(G, node, direction=direction, limit=100)
    assert total == len(expected)
    assert [(n.edge.type.value, n.node_id, n.direction.value) for n in page] == sorted(expected)
    for n in page:
        assert G.has_edge(n.edge.source, n.edge.target, n.edge.type.value)
        assert {n.edge.source, n.edge.target} == {node, n.node_id}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=graph_specs(), data=st.data(), types=type_filters)
def test_find_path_equals_brute_force_and_walks_real_edges(
    spec: Spec, data: st.DataObject, types: Any
) -> None:
    ids, edges = spec
    G = build_graph(ids, edges)
    source, target = data.draw(st.sampled_from(ids)), data.draw(st.sampled_from(ids))
    directed = data.draw(st.booleans())
    max_paths, max_length = data.draw(st.integers(1, 100)), data.draw(st.integers(1, 10))
    paths = find_path(
        G, source, target, types, directed=directed, max_paths=max_paths, max_length=max_length
    )
    if source == target:
        assert paths == [Path([source], [])]
        return
    H = projection(G, types)
    walk = H if directed else H.to_undirected()
    everything = sorted(
        nx.all_simple_paths(walk, source, target, cutoff=max_length), key=lambda p: (len(p), p)
    )
    assert [p.nodes for p in paths] == everything[:max_paths]
    for path in paths:
        assert path.length == len(path.nodes) - 1 <= max_length
        for (u, v), edge in zip(itertools.pairwise(path.nodes), path.edges, strict=True):
            assert G.has_edge(edge.source, edge.target, edge.type.value)
            assert types is None or edge.type.value in types
            symmetric = edge.type.symmetric
            assert (edge.source, edge.target) in (
                {(u, v), (v, u)} if symmetric or not directed else {(u, v)}
            )
            assert not symmetric or edge.source < edge.target


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=graph_specs(acyclic=True), data=st.data())
def test_ancestors_and_descendants_match_networkx(spec: Spec, data: st.DataObject) -> None:
    ids, edges = spec
    G = build_graph(ids, edges)
    node = data.draw(st.sampled_from(ids))
    types = data.draw(st.sets(st.sampled_from(DIRECTED_TYPES), min_size=1))
    max_depth = data.draw(st.one_of(st.none(), st.integers(1, 4)))
    H = projection(G, types)
    assert nx.is_directed_acyclic_graph(H)
    for fn, walk in ((ancestors, H), (descendants, H.reverse())):
        found = fn(G, node, edge_types=types, max_depth=max_depth)
        assert node not in {r.node_id for r in found}
        expected = nx.single_source_shortest_path_length(walk, node, cutoff=max_depth)
        del expected[node]
        assert {r.node_id: r.depth for r in found} == expected
        assert [(r.depth, r.node_id) for r in found] == sorted((d, n) for n, d in expected.items())
        at = {r.node_id: r.depth for r in found} | {node: 0}
        for r in found:
            stored = (
                (r.via.source, r.via.target) if fn is ancestors else (r.via.target, r.via.source)
            )
            parent, child = stored
            assert child == r.node_id
            assert at[parent] == r.depth - 1
            assert G.has_edge(r.via.source, r.via.target, r.via.type.value)
            parents = [p for p in walk.predecessors(r.node_id) if at.get(p) == r.depth - 1]
            assert parent == min(parents)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=graph_specs(max_nodes=6), rng=st.randoms(use_true_random=False))
def test_insertion_order_never_changes_an_answer(spec: Spec, rng: random.Random) -> None:
    ids, edges = spec
    shuffled_ids, shuffled_edges = rng.sample(ids, len(ids)), rng.sample(edges, len(edges))
    assert every_answer(build_graph(ids, edges), sorted(ids)) == every_answer(
        build_graph(shuffled_ids, shuffled_edges), sorted(ids)
    )
