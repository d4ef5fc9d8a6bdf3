"""Subgraphs, neighbours, paths, ancestors and descendants (graph.algorithms.traversal)."""

from __future__ import annotations

import itertools
import random
import time
from typing import Any

import pytest

from graph.algorithms.traversal import (
    EdgeRef,
    Neighbor,
    Path,
    ancestors,
    descendants,
    find_path,
    get_graph,
    get_neighbors,
)
from graph.builders import build_graph
from graph.enums import Direction, EdgeType
from graph.errors import NodeNotFoundError, ValidationError

A, B, C, D, E, F = (f"0000000{c}" for c in "abcdef")
MISSING = "ffffffff"

# A small decision graph. Symmetric edges are given with the larger id first on purpose, so
# canonical orientation (smaller id first) has to be produced, not copied.
EDGES = [
    (B, A, "depends_on"),
    (C, B, "depends_on"),
    (D, A, "relates_to"),
    (E, C, "blocks"),
    (E, D, "contradicts"),
    (C, A, "refines"),
    (F, E, "supersedes"),
]


def graph(seed: int | None = None, edges: list[tuple[str, str, str]] = EDGES) -> Any:
    nodes, edge_list = [A, B, C, D, E, F], list(edges)
    if seed is not None:
        rng = random.Random(seed)
        rng.shuffle(nodes)
        rng.shuffle(edge_list)
    return build_graph(nodes, edge_list)


def keys(edges: list[EdgeRef]) -> list[tuple[str, str, str]]:
    return [(e.source, e.target, e.type.value) for e in edges]


# -- get_graph ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("direction", "depth", "expected"),
    [
        ("both", 1, [(A, 0), (B, 1), (C, 1), (D, 1)]),
        ("both", 2, [(A, 0), (B, 1), (C, 1), (D, 1), (E, 2)]),
        ("both", 5, [(A, 0), (B, 1), (C, 1), (D, 1), (E, 2), (F, 3)]),
        # Outgoing from A only the symmetric relates_to leaves it; blocks then runs E -> C.
        ("outgoing", 5, [(A, 0), (D, 1), (E, 2), (C, 3), (B, 4)]),
        ("outgoing", 2, [(A, 0), (D, 1), (E, 2)]),
        (Direction.INCOMING, 1, [(A, 0), (B, 1), (C, 1), (D, 1)]),
        ("incoming", 3, [(A, 0), (B, 1), (C, 1), (D, 1), (E, 2), (F, 3)]),
    ],
)
def test_get_graph_depth_and_direction(
    direction: str, depth: int, expected: list[tuple[str, int]]
) -> None:
    sub = get_graph(graph(), A, depth=depth, direction=direction)
    assert [(n.id, n.distance) for n in sub.nodes] == expected
    assert (sub.center_id, sub.depth) == (A, depth)


def test_get_graph_edges_are_induced_sorted_and_symmetric_once() -> None:
    sub = get_graph(graph(), A, depth=1)
    # C -> B joins two depth-1 nodes: reported although the walk never crossed it.
    assert keys(sub.edges) == [
        (A, D, "relates_to"),
        (B, A, "depends_on"),
        (C, A, "refines"),
        (C, B, "depends_on"),
    ]
    everything = get_graph(graph(), A, depth=5)
    assert len(everything.edges) == len(EDGES)
    assert (D, E, "contradicts") in keys(everything.edges)
    assert (E, D, "contradicts") not in keys(everything.edges)


def test_edge_refs_carry_the_stored_attributes() -> None:
    G = build_graph(
        [A, B],
        [(B, A, "relates_to", {"weight": 2.5, "context": "same vendor", "origin": "auto"})],
    )
    (edge,) = get_graph(G, A).edges
    assert (edge.source, edge.target, edge.type) == (A, B, EdgeType.RELATES_TO)
    assert (edge.weight, edge.context, edge.origin, edge.created_by) == (
        2.5,
        "same vendor",
        "auto",
        "example",
    )
    assert edge.created_at.isoformat() == "2026-01-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("edge_types", "nodes", "types"),
    [
        (["depends_on"], [A, B, C], {"depends_on"}),
        ("depends_on", [A, B, C], {"depends_on"}),
        (EdgeType.DEPENDS_ON, [A, B, C], {"depends_on"}),
        ([EdgeType.RELATES_TO, "contradicts"], [A, D, E], {"relates_to", "contradicts"}),
        (("supersedes",), [A], set()),
        (None, [A, B, C, D, E, F], {t for _, _, t in EDGES}),
    ],
)
def test_get_graph_edge_type_filter(edge_types: Any, nodes: list[str], types: set[str]) -> None:
    sub = get_graph(graph(), A, depth=5, edge_types=edge_types)
    assert [n.id for n in sub.nodes] == nodes
    assert {e.type.value for e in sub.edges} == types


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"depth": 0}, "depth"),
        ({"depth": 6}, "depth"),
        ({"depth": True}, "depth"),
        ({"depth": 2.0}, "depth"),
        ({"edge_types": ["likes"]}, "edge_types"),
        ({"edge_types": "likes"}, "edge_types"),
        ({"edge_types": []}, "edge_types"),
        ({"edge_types": [3]}, "edge_types"),
        ({"direction": "sideways"}, "direction"),
    ],
)
def test_get_graph_validation(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        get_graph(graph(), A, **kwargs)
    assert info.value.field == field


# -- get_neighbors -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("node", "direction", "edge_type", "expected"),
    [
        (
            A,
            "both",
            None,
            [(B, "incoming", "depends_on"), (C, "incoming", "refines"), (D, "both", "relates_to")],
        ),
        (A, "outgoing", None, [(D, "both", "relates_to")]),
        (A, "incoming", "depends_on", [(B, "incoming", "depends_on")]),
        (
            C,
            "both",
            None,
            [(E, "incoming", "blocks"), (B, "outgoing", "depends_on"), (A, "outgoing", "refines")],
        ),
        (C, Direction.OUTGOING, None, [(B, "outgoing", "depends_on"), (A, "outgoing", "refines")]),
        (
            E,
            "both",
            None,
            [(C, "outgoing", "blocks"), (D, "both", "contradicts"), (F, "incoming", "supersedes")],
        ),
        (E, "incoming", EdgeType.CONTRADICTS, [(D, "both", "contradicts")]),
        (F, "incoming", None, []),
    ],
)
def test_get_neighbors(
    node: str, direction: str, edge_type: str | None, expected: list[tuple[str, str, str]]
) -> None:
    page, total = get_neighbors(graph(), node, direction=direction, edge_type=edge_type)
    assert [(n.node_id, n.direction.value, n.edge.type.value) for n in page] == expected
    assert total == len(expected)


def test_neighbors_symmetric_edge_is_one_entry_in_canonical_orientation() -> None:
    (entry,), total = get_neighbors(graph(), D, edge_type="relates_to")
    assert total == 1
    assert entry == Neighbor(A, Direction.BOTH, entry.edge)
    assert (entry.edge.source, entry.edge.target) == (A, D)


def test_neighbors_several_edges_between_one_pair() -> None:
    G = build_graph([A, B], [(A, B, "depends_on"), (B, A, "blocks"), (B, A, "relates_to")])
    page, total = get_neighbors(G, A)
    assert total == 3
    assert [(n.node_id, n.direction.value, keys([n.edge])[0]) for n in page] == [
        (B, "incoming", (B, A, "blocks")),
        (B, "outgoing", (A, B, "depends_on")),
        (B, "both", (A, B, "relates_to")),
    ]


@pytest.mark.parametrize("limit", [1, 2, 5, 100])
def test_neighbors_limit_pages_but_total_counts_all(limit: int) -> None:
    hub = "00000000"
    spokes = [f"000001{i:02x}" for i in range(30)]
    G = build_graph([hub, *spokes], [(s, hub, "depends_on") for s in spokes])
    page, total = get_neighbors(G, hub, limit=limit)
    assert total == 30
    assert [n.node_id for n in page] == spokes[:limit]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": None}, "limit"),
        ({"edge_type": "likes"}, "edge_type"),
        ({"direction": "up"}, "direction"),
    ],
)
def test_neighbors_validation(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        get_neighbors(graph(), A, **kwargs)
    assert info.value.field == field


# -- find_path ---------------------------------------------------------------------------------
def test_find_path_shortest_is_the_smallest_id_sequence() -> None:
    (path,) = find_path(graph(), E, A)
    assert path.nodes == [E, C, A]  # [E, D, A] is as short; C < D breaks the tie
    assert path.length == 2
    # Each edge keeps its stored orientation although the walk runs E, C, A.
    assert keys(path.edges) == [(E, C, "blocks"), (C, A, "refines")]


def test_find_path_reports_stored_orientation_against_the_walk() -> None:
    (path,) = find_path(graph(), A, C, edge_types="depends_on")
    assert path.nodes == [A, B, C]
    assert keys(path.edges) == [(B, A, "depends_on"), (C, B, "depends_on")]


@pytest.mark.parametrize(
    ("source", "target", "kwargs", "expected"),
    [
        (E, A, {"max_paths": 10, "max_length": 4}, [[E, C, A], [E, D, A], [E, C, B, A]]),
        (E, A, {"max_paths": 10, "max_length": 2}, [[E, C, A], [E, D, A]]),
        (E, A, {"max_paths": 2}, [[E, C, A], [E, D, A]]),
        (E, A, {"max_paths": 10, "max_length": 1}, []),
        (A, C, {}, [[A, C]]),
        (A, C, {"directed": True}, [[A, D, E, C]]),
        (A, C, {"directed": True, "max_length": 2}, []),
        (C, A, {"directed": True, "max_paths": 5}, [[C, A], [C, B, A]]),
        (A, E, {"directed": True}, [[A, D, E]]),
        (A, E, {"edge_types": "depends_on"}, []),
        (F, B, {"max_paths": 3}, [[F, E, C, B], [F, E, C, A, B], [F, E, D, A, B]]),
        (F, B, {"edge_types": ["supersedes", "blocks", "depends_on"]}, [[F, E, C, B]]),
        (B, B, {"max_paths": 5}, [[B]]),
    ],
)
def test_find_path_options(
    source: str, target: str, kwargs: dict[str, Any], expected: list[list[str]]
) -> None:
    assert [p.nodes for p in find_path(graph(), source, target, **kwargs)] == expected


def test_find_path_to_itself_is_zero_length() -> None:
    assert find_path(graph(), C, C) == [Path([C], [])]


def test_find_path_between_unconnected_nodes_is_empty() -> None:
    G = build_graph([A, B, C], [(A, B, "depends_on")])
    assert find_path(G, A, C, max_paths=10) == []


def test_find_path_picks_the_smallest_type_among_parallel_edges() -> None:
    G = build_graph([A, B], [(A, B, "depends_on"), (B, A, "blocks"), (A, B, "refines")])
    assert keys(find_path(G, A, B)[0].edges) == [(B, A, "blocks")]
    assert keys(find_path(G, A, B, directed=True)[0].edges) == [(A, B, "depends_on")]
    assert keys(find_path(G, A, B, edge_types="refines")[0].edges) == [(A, B, "refines")]


def test_find_path_symmetric_edges_are_canonical() -> None:
    (path,) = find_path(graph(), E, A, edge_types=["relates_to", "contradicts"])
    assert path.nodes == [E, D, A]
    assert keys(path.edges) == [(D, E, "contradicts"), (A, D, "relates_to")]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_paths": 0}, "max_paths"),
        ({"max_paths": 101}, "max_paths"),
        ({"max_length": 0}, "max_length"),
        ({"max_length": 11}, "max_length"),
        ({"edge_types": ["nope"]}, "edge_types"),
        ({"visit_budget": 0}, "visit_budget"),
    ],
)
def test_find_path_validation(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        find_path(graph(), A, B, **kwargs)
    assert info.value.field == field


def clique_graph(size: int) -> Any:
    ids = [f"{i:08x}" for i in range(size)]
    return ids, build_graph(ids, [(u, v, "relates_to") for u, v in itertools.combinations(ids, 2)])


def test_visit_budget_returns_a_growing_prefix_of_the_full_answer() -> None:
    ids, G = clique_graph(7)
    full = find_path(G, ids[0], ids[1], max_paths=100, max_length=10)
    assert len(full) == 100
    sizes = []
    for budget in (1, 3, 10, 40, 10**6):
        cut = find_path(G, ids[0], ids[1], max_paths=100, max_length=10, visit_budget=budget)
        assert cut == full[: len(cut)]
        sizes.append(len(cut))
    assert sizes == sorted(sizes)
    assert 1 <= sizes[0] < sizes[-2] < sizes[-1] == 100


def test_dense_graph_cannot_hang_the_enumeration() -> None:
    # s - x - t, and a 27-clique hanging off x: every long partial path into the clique is a
    # dead end (it would have to leave through x again), and there are ~10^12 of them.
    ids = [f"{i:08x}" for i in range(30)]
    s, x, t, clique = ids[0], ids[1], ids[2], ids[3:]
    edges = [(s, x, "relates_to"), (x, t, "relates_to")]
    edges += [(x, c, "relates_to") for c in clique]
    edges += [(u, v, "relates_to") for u, v in itertools.combinations(clique, 2)]
    G = build_graph(ids, edges)
    started = time.perf_counter()
    paths = find_path(G, s, t, max_paths=5, max_length=10)
    assert time.perf_counter() - started < 20
    assert [p.nodes for p in paths] == [[s, x, t]]


def test_nodes_behind_the_source_are_pruned_not_enumerated() -> None:
    # A 20-clique hangs off s and reaches t only back through s, so no path can use it. The
    # other path to t is 9 hops long; were the clique explored (its ids sort first), the budget
    # would run out long before length 9.
    s, t = "f0000000", "f0000001"
    clique = [f"{i:08x}" for i in range(20)]
    chain = [f"e00000{i:02x}" for i in range(8)]
    edges = [(s, t, "relates_to"), (s, chain[0], "relates_to"), (chain[-1], t, "relates_to")]
    edges += [(s, c, "relates_to") for c in clique]
    edges += [(u, v, "relates_to") for u, v in itertools.combinations(clique, 2)]
    edges += [(u, v, "relates_to") for u, v in itertools.pairwise(chain)]
    G = build_graph([s, t, *clique, *chain], edges)
    paths = find_path(G, s, t, max_paths=5, max_length=10, visit_budget=1_000)
    assert [p.nodes for p in paths] == [[s, t], [s, *chain, t]]


# -- ancestors / descendants -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fn", "node", "kwargs", "expected"),
    [
        (ancestors, C, {}, [(B, 1), (A, 2)]),
        (ancestors, C, {"max_depth": 1}, [(B, 1)]),
        (ancestors, A, {}, []),
        (descendants, A, {}, [(B, 1), (C, 2)]),
        (descendants, A, {"max_depth": 1}, [(B, 1)]),
        (descendants, A, {"edge_types": ["depends_on", "refines"]}, [(B, 1), (C, 1)]),
        (
            ancestors,
            E,
            {"edge_types": ["blocks", "depends_on", "refines"]},
            [(C, 1), (A, 2), (B, 2)],
        ),
        (descendants, C, {"edge_types": "blocks"}, [(E, 1)]),
        (descendants, E, {"edge_types": EdgeType.SUPERSEDES}, [(F, 1)]),
        # Symmetric types can be followed too; they lead both ways.
        (ancestors, A, {"edge_types": ["relates_to", "contradicts"]}, [(D, 1), (E, 2)]),
        (descendants, A, {"edge_types": ["relates_to", "contradicts"]}, [(D, 1), (E, 2)]),
        (ancestors, A, {"edge_types": None}, [(D, 1), (E, 2), (C, 3), (B, 4)]),
    ],
)
def test_ancestors_and_descendants(
    fn: Any, node: str, kwargs: dict[str, Any], expected: list[tuple[str, int]]
) -> None:
    assert [(r.node_id, r.depth) for r in fn(graph(), node, **kwargs)] == expected


def test_via_is_the_edge_from_the_smallest_id_parent() -> None:
    # D depends on B and on C, both of which depend on A: A is reached from B and from C.
    G = build_graph(
        [A, B, C, D],
        [(D, C, "depends_on"), (D, B, "depends_on"), (C, A, "depends_on"), (B, A, "depends_on")],
    )
    found = {r.node_id: r.via for r in ancestors(G, D)}
    assert keys([found[A]]) == [(B, A, "depends_on")]
    assert keys([found[C]]) == [(D, C, "depends_on")]
    below = {r.node_id: r.via for r in descendants(G, A)}
    assert keys([below[D]]) == [(D, B, "depends_on")]


def test_ancestors_terminate_on_a_cycle_and_skip_the_start() -> None:
    # The store keeps depends_on acyclic; a hand-built graph may not.
    G = build_graph([A, B, C], [(A, B, "depends_on"), (B, C, "depends_on"), (C, A, "depends_on")])
    assert [(r.node_id, r.depth) for r in ancestors(G, A)] == [(B, 1), (C, 2)]
    assert [(r.node_id, r.depth) for r in descendants(G, A)] == [(C, 1), (B, 2)]


@pytest.mark.parametrize("fn", [ancestors, descendants])
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_depth": 0}, "max_depth"),
        ({"max_depth": 101}, "max_depth"),
        ({"max_depth": False}, "max_depth"),
        ({"edge_types": ["nope"]}, "edge_types"),
        ({"edge_types": []}, "edge_types"),
    ],
)
def test_reach_validation(fn: Any, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        fn(graph(), A, **kwargs)
    assert info.value.field == field


# -- unknown ids and determinism ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda G: get_graph(G, MISSING), "node_id"),
        (lambda G: get_neighbors(G, MISSING), "node_id"),
        (lambda G: ancestors(G, MISSING), "node_id"),
        (lambda G: descendants(G, MISSING), "node_id"),
        (lambda G: find_path(G, MISSING, A), "source"),
        (lambda G: find_path(G, A, MISSING), "target"),
        (lambda G: find_path(G, MISSING, MISSING), "source"),
    ],
)
def test_unknown_ids_name_the_param(call: Any, field: str) -> None:
    with pytest.raises(NodeNotFoundError) as info:
        call(graph())
    assert (info.value.field, info.value.node_id) == (field, MISSING)


def every_answer(G: Any, nodes: list[str]) -> list[Any]:
    out: list[Any] = []
    for u in nodes:
        out.append(get_graph(G, u, depth=5))
        out.append(get_graph(G, u, depth=2, direction="outgoing"))
        out.append(get_neighbors(G, u, limit=100))
        out.append(ancestors(G, u, edge_types=None))
        out.append(descendants(G, u, edge_types=None))
        for v in nodes:
            out.append(find_path(G, u, v, max_paths=100, max_length=10))
            out.append(find_path(G, u, v, directed=True, max_paths=3))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_answers_do_not_depend_on_insertion_order(seed: int) -> None:
    assert every_answer(graph(), [A, B, C, D, E, F]) == every_answer(
        graph(seed), [A, B, C, D, E, F]
    )
