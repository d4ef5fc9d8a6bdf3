"""Live contradictions and blocked chains (graph.algorithms.contradictions)."""

from __future__ import annotations

from typing import Any

import pytest

from graph.algorithms.contradictions import (
    BlockedChain,
    Blocker,
    all_blocked,
    find_contradictions,
    get_blocked_chain,
)
from graph.builders import build_graph
from graph.enums import EdgeType
from graph.errors import NodeNotFoundError, ValidationError
from graph.store import DecisionStore
from tests.conftest import decision

A, B, C, D, E, F = (f"0000000{c}" for c in "abcdef")

REVIEWED = {"status": "reviewed"}
STATES: dict[str, dict[str, str]] = {
    "pending": {},
    "proposed": {"lifecycle": "proposed"},
    "success": {**REVIEWED, "outcome": "success"},
    "partial": {**REVIEWED, "outcome": "partial"},
    "failure": {**REVIEWED, "outcome": "failure"},
    "abandoned": {**REVIEWED, "outcome": "abandoned"},
    "rejected": {"lifecycle": "rejected"},
    "rejected-success": {"lifecycle": "rejected", **REVIEWED, "outcome": "success"},
}


def node(node_id: str, state: str = "pending", **extra: Any) -> dict[str, Any]:
    return {"id": node_id, **STATES[state], **extra}


def chain_of(found: BlockedChain) -> list[tuple[str, int, str, str]]:
    return [(b.node_id, b.depth, b.via_type.value, b.reason) for b in found.chain]


# -- find_contradictions -----------------------------------------------------------------------
def test_each_pair_once_ordered_by_salience_at_stake() -> None:
    G = build_graph(
        [A, B, C, D, E, F],
        [(B, A, "contradicts"), (C, D, "contradicts"), (F, E, "contradicts"), (A, F, "relates_to")],
    )
    scores = {A: 0.9, B: 0.1, C: 0.9, D: 0.4, E: 0.95}  # F has no score: counts as 0.0
    found = find_contradictions(G, scores)
    assert [(c.a, c.b, c.salience_at_stake, c.a_salience, c.b_salience) for c in found] == [
        (E, F, 0.95, 0.95, 0.0),
        (C, D, 0.9, 0.9, 0.4),  # ties A/B on the stake; its weaker side is stronger
        (A, B, 0.9, 0.9, 0.1),
    ]
    assert [(c.edge.source, c.edge.target, c.edge.type) for c in found] == [
        (E, F, EdgeType.CONTRADICTS),
        (C, D, EdgeType.CONTRADICTS),
        (A, B, EdgeType.CONTRADICTS),
    ]


def test_equal_scores_fall_back_to_ids() -> None:
    G = build_graph([A, B, C, D], [(D, C, "contradicts"), (B, A, "contradicts")])
    assert [(c.a, c.b) for c in find_contradictions(G, {})] == [(A, B), (C, D)]


@pytest.mark.parametrize(("limit", "count"), [(None, 3), (1, 1), (2, 2), (1000, 3)])
def test_limit(limit: int | None, count: int) -> None:
    G = build_graph(
        [A, B, C, D], [(A, B, "contradicts"), (A, C, "contradicts"), (C, D, "contradicts")]
    )
    found = find_contradictions(G, {C: 1.0}, limit=limit)
    assert len(found) == count
    assert found == find_contradictions(G, {C: 1.0})[:count]


@pytest.mark.parametrize("limit", [0, -1, 1001, True])
def test_limit_validation(limit: int) -> None:
    with pytest.raises(ValidationError) as info:
        find_contradictions(build_graph([A]), {}, limit=limit)
    assert info.value.field == "limit"


@pytest.mark.parametrize(
    ("state", "superseded", "live"),
    [
        ("pending", False, True),
        ("proposed", False, True),
        ("failure", False, True),  # a failed decision is still in force until replaced
        ("rejected", False, False),
        ("pending", True, False),
    ],
)
def test_inactive_sides_are_left_out(state: str, superseded: bool, live: bool) -> None:
    edges = [(A, B, "contradicts")] + ([(C, B, "supersedes")] if superseded else [])
    G = build_graph([node(A), node(B, state), node(C)], edges)
    assert [(c.a, c.b) for c in find_contradictions(G, {})] == ([(A, B)] if live else [])
    assert [(c.a, c.b) for c in find_contradictions(G, {}, include_inactive=True)] == [(A, B)]


def test_supersession_settles_a_conflict_in_the_store(store: DecisionStore) -> None:
    a, b, c, d, e = (store.record(decision(f"d{i}"), "x").id for i in range(5))
    store.link(a, b, "contradicts", "x", context="same budget line")
    store.link(c, d, "contradicts", "x")
    store.link(e, a, "depends_on", "x")  # a leans on nothing but is leaned on: most salient
    found = find_contradictions(store.graph, store.salience())
    assert [(f.a, f.b) for f in found] == [tuple(sorted((a, b))), tuple(sorted((c, d)))]
    assert found[0].salience_at_stake == pytest.approx(1 - 1 / 1.85)  # one dependent
    assert found[0].edge.context == "same budget line"
    store.supersede(e, b, "x")  # b is replaced; its conflict with a no longer matters
    store.set_lifecycle(d, "rejected", "x")
    assert find_contradictions(store.graph, store.salience()) == []
    assert len(find_contradictions(store.graph, store.salience(), include_inactive=True)) == 2


# -- get_blocked_chain -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("edges", "via", "state"),
    [
        ([(A, B, "blocks")], "blocks", "pending"),
        ([(B, A, "depends_on")], "depends_on", "proposed"),
    ],
)
def test_direct_blocker_either_way(edges: list[tuple[str, str, str]], via: str, state: Any) -> None:
    found = get_blocked_chain(build_graph([node(A, state), B], edges), B)
    assert found == BlockedChain(
        B, True, [Blocker(A, state, 1, EdgeType(via), [B, A])], found.chain
    )
    assert found.chain == found.blockers
    assert not get_blocked_chain(build_graph([node(A, state), B], edges), A).blocked


@pytest.mark.parametrize(
    ("state", "blocks", "depends_on"),
    [
        # "A blocks B": B waits until A is done. "B depends_on A": B relies on A unless A
        # cannot be relied on; an accepted A not reviewed yet is relied on as it stands.
        ("pending", "pending", None),
        ("proposed", "proposed", "proposed"),
        ("failure", "failed", "failed"),
        ("abandoned", "abandoned", "abandoned"),
        ("rejected", "rejected", "rejected"),
        ("rejected-success", "rejected", "rejected"),  # will not be carried out
        ("success", None, None),
        ("partial", None, None),
    ],
)
def test_blocker_reasons(state: str, blocks: str | None, depends_on: str | None) -> None:
    for edge, reason in (((A, B, "blocks"), blocks), ((B, A, "depends_on"), depends_on)):
        found = get_blocked_chain(build_graph([node(A, state), node(B)], [edge]), B)
        assert found.blocked is (reason is not None), edge
        assert [b.reason for b in found.chain] == ([reason] if reason else []), edge


def test_an_accepted_dependency_not_yet_reviewed_does_not_block() -> None:
    # The old rule listed all of these as blocked: every decision built on an unreviewed one.
    G = build_graph(
        [A, B, C, D], [(B, A, "depends_on"), (C, B, "depends_on"), (D, A, "depends_on")]
    )
    assert get_blocked_chain(G) == []
    assert not get_blocked_chain(G, C).blocked


def test_chain_is_transitive_through_blockers() -> None:
    # D needs the proposed B; B waits for A; A needs the failed C; C waits for E, done.
    G = build_graph(
        [A, node(B, "proposed"), node(C, "failure"), D, node(E, "success")],
        [(D, B, "depends_on"), (A, B, "blocks"), (A, C, "depends_on"), (E, C, "blocks")],
    )
    found = get_blocked_chain(G, D)
    assert chain_of(found) == [
        (B, 1, "depends_on", "proposed"),
        (A, 2, "blocks", "pending"),
        (C, 3, "depends_on", "failed"),
    ]
    assert [b.path for b in found.chain] == [[D, B], [D, B, A], [D, B, A, C]]
    assert [b.node_id for b in found.blockers] == [B]


def test_a_dependency_that_is_blocked_itself_is_listed_once() -> None:
    # C relies on the accepted B; B relies on the rejected A. B is blocked, C is not: the
    # problem shows once, where it is.
    G = build_graph([node(A, "rejected"), B, C], [(B, A, "depends_on"), (C, B, "depends_on")])
    assert [(c.node_id, [b.node_id for b in c.chain]) for c in get_blocked_chain(G)] == [(B, [A])]


def test_a_resolved_blocker_cuts_the_chain() -> None:
    G = build_graph(
        [node(A, "success"), B, node(C, "proposed")], [(A, B, "blocks"), (A, C, "depends_on")]
    )
    assert not get_blocked_chain(G, B).blocked
    assert [b.node_id for b in get_blocked_chain(G, A).chain] == [C]  # A still lists its own


def test_chain_keeps_the_shortest_route_and_smallest_parent() -> None:
    # D is reached through C and through B (smaller); E directly and through C.
    G = build_graph(
        [A, *(node(n, "proposed") for n in (B, C, D, E))],
        [
            (A, C, "depends_on"),
            (A, B, "depends_on"),
            (C, D, "depends_on"),
            (B, D, "depends_on"),
            (C, E, "depends_on"),
            (A, E, "depends_on"),
        ],
    )
    found = get_blocked_chain(G, A)
    assert [(b.node_id, b.depth, b.path) for b in found.chain] == [
        (B, 1, [A, B]),
        (C, 1, [A, C]),
        (E, 1, [A, E]),
        (D, 2, [A, B, D]),
    ]
    both = build_graph([node(A, "proposed"), B], [(A, B, "blocks"), (B, A, "depends_on")])
    assert [b.via_type.value for b in get_blocked_chain(both, B).chain] == ["blocks"]


def test_superseded_blocker_is_replaced_by_its_heir() -> None:
    # B needs A; A was superseded by C, which C2 superseded in turn.
    C2 = "000000c2"
    edges = [(B, A, "depends_on"), (C, A, "supersedes"), (C2, C, "supersedes")]
    G = build_graph([node(A, "success"), B, C, node(C2, "proposed")], edges)
    found = get_blocked_chain(G, B)
    assert found.blockers == [Blocker(C2, "proposed", 1, EdgeType.DEPENDS_ON, [B, A, C, C2], A)]
    resolved = build_graph([node(A, "failure"), B, C, C2], edges)
    assert not get_blocked_chain(resolved, B).blocked  # A itself failed: it no longer counts


def test_superseded_blocker_with_several_heirs() -> None:
    edges = [(A, B, "blocks"), (C, A, "supersedes"), (D, A, "supersedes")]
    G = build_graph([A, B, node(C, "rejected"), node(D, "success")], edges)
    assert chain_of(get_blocked_chain(G, B)) == [(C, 1, "blocks", "rejected")]
    G = build_graph([A, B, node(C, "success"), node(D, "success")], edges)
    assert not get_blocked_chain(G, B).blocked


def test_heir_blockers_continue_the_chain() -> None:
    # B waits for A; C superseded A and needs D.
    G = build_graph(
        [A, B, C, node(D, "proposed")],
        [(A, B, "blocks"), (C, A, "supersedes"), (C, D, "depends_on")],
    )
    found = get_blocked_chain(G, B)
    assert [(b.node_id, b.depth, b.path, b.stands_for) for b in found.chain] == [
        (C, 1, [B, A, C], A),
        (D, 2, [B, A, C, D], None),
    ]


def test_superseding_your_own_blocker_unblocks_you() -> None:
    G = build_graph([node(A, "proposed"), B], [(B, A, "depends_on"), (B, A, "supersedes")])
    assert not get_blocked_chain(G, B).blocked


@pytest.mark.parametrize(
    "edges",
    [
        [(A, B, "blocks"), (B, C, "blocks"), (C, A, "blocks")],
        [(A, B, "depends_on"), (B, A, "depends_on")],
        [(B, A, "depends_on"), (C, A, "supersedes"), (A, C, "supersedes")],
    ],
)
def test_cycles_terminate(edges: list[tuple[str, str, str]]) -> None:
    G = build_graph([node(n, "proposed") for n in (A, B, C)], edges)
    for n in (A, B, C):
        found = get_blocked_chain(G, n)
        assert n not in {b.node_id for b in found.chain}
        assert len({b.node_id for b in found.chain}) == len(found.chain)
    assert isinstance(get_blocked_chain(G), list)


def test_all_blocked_active_decisions_most_entangled_first() -> None:
    G = build_graph(
        [node(A, "proposed"), B, C, D, E, node(F, kind="observation")],
        [
            (A, B, "blocks"),
            (B, C, "blocks"),
            (E, D, "supersedes"),  # D is superseded: blocked, but no longer reported
            (D, A, "depends_on"),
            (A, F, "blocks"),  # memory items are not decisions
        ],
    )
    found = get_blocked_chain(G)
    assert [(c.node_id, len(c.chain)) for c in found] == [(C, 2), (B, 1)]
    assert found[0] == get_blocked_chain(G, C)
    assert all_blocked(G) == found
    assert get_blocked_chain(G, D).blocked
    assert get_blocked_chain(build_graph([A, B])) == []


def test_unknown_node() -> None:
    with pytest.raises(NodeNotFoundError) as info:
        get_blocked_chain(build_graph([A]), "ffffffff")
    assert info.value.field == "node_id"


def test_blocked_chain_in_the_store(store: DecisionStore) -> None:
    db, orm, api = (store.record(decision(f"d{i}"), "x").id for i in range(3))
    new_db = store.record(decision("d3", lifecycle="proposed"), "x").id
    store.link(orm, db, "depends_on", "x")
    store.link(orm, api, "blocks", "x")
    # api waits until orm is done; orm relies on the accepted db as it stands.
    assert chain_of(get_blocked_chain(store.graph, api)) == [(orm, 1, "blocks", "pending")]
    store.supersede(new_db, db, "x")  # db is replaced by a proposal: that cannot be relied on
    assert chain_of(get_blocked_chain(store.graph, api)) == [
        (orm, 1, "blocks", "pending"),
        (new_db, 2, "depends_on", "proposed"),
    ]
    store.review(orm, "failure", "x")
    assert chain_of(get_blocked_chain(store.graph, api)) == [
        (orm, 1, "blocks", "failed"),
        (new_db, 2, "depends_on", "proposed"),
    ]
    store.review(orm, "success", "x")  # done: neither orm nor what it waits on holds api up
    assert not get_blocked_chain(store.graph, api).blocked
