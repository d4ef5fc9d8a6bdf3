"""F045 compaction tiers: a computed view over salience, lifecycle, review state and age."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.algorithms.compaction import (
    CompactionEntry,
    compaction_plan,
    summarise_plan,
)
from graph.algorithms.salience import compute_salience
from graph.builders import EXAMPLE_TIME, build_graph
from graph.enums import Lifecycle
from graph.errors import ValidationError
from graph.lifecycle import effective_lifecycle, successors_of
from graph.state import graph_hash
from tests.unit.test_salience import EdgeSpec, graph_specs

A, B, C, D, E = (c * 8 for c in "abcde")
REVIEWED = {"status": "reviewed", "outcome": "success"}


def node(node_id: str, *, reviewed: bool = False, age: timedelta | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {"id": node_id, **(REVIEWED if reviewed else {})}
    if age is not None:
        fields["created_at"] = EXAMPLE_TIME - age
    return fields


def by_id(plan: list[CompactionEntry]) -> dict[str, CompactionEntry]:
    return {entry.node_id: entry for entry in plan}


def flat(G: Any) -> dict[str, float]:
    """Equal salience everywhere, so tiers below 'high' depend only on the other rules."""
    return dict.fromkeys(G, 0.5)


# -- superseded ------------------------------------------------------------------------------
def test_superseded_nodes_fold_into_the_end_of_their_chain() -> None:
    later = EXAMPLE_TIME + timedelta(days=3)
    G = build_graph(
        [A, B, C, D, E],
        [
            (B, A, "supersedes", {"created_at": later}),
            (C, B, "supersedes"),
            (E, D, "supersedes"),  # d has two successors: e directly, f via the chain below
            (C, D, "supersedes"),
        ],
    )
    plan = by_id(compaction_plan(G, compute_salience(G), EXAMPLE_TIME))
    assert {n for n, e in plan.items() if e.tier == "superseded"} == {A, B, D}
    assert plan[A].fold_into == C  # a -> b -> c
    assert plan[B].fold_into == C
    assert plan[D].fold_into == C  # c and e are both active successors: the smallest id
    assert "smallest of 2" in plan[D].reason
    for old in (A, B, D):
        assert (plan[old].action, plan[old].due) == ("fold", True)
    assert plan[A].due_at == later  # superseded when the edge was made, not when created
    assert plan[B].due_at == EXAMPLE_TIME
    assert all(plan[n].fold_into is None for n in (C, E))


def test_a_cycle_of_supersedes_edges_is_refused() -> None:
    G = build_graph([A, B], [(A, B, "supersedes")])
    G.add_edge(B, A, key="supersedes", created_at=EXAMPLE_TIME.isoformat())
    with pytest.raises(ValidationError) as info:
        compaction_plan(G, flat(G), EXAMPLE_TIME)
    assert info.value.field == "supersedes"


# -- high ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fraction", "population", "expected"),
    [
        (0.2, 10, 2),
        (0.2, 11, 3),  # ceil(2.2)
        (0.14, 50, 7),  # 0.14 * 50 is 7.000000000000001 in floating point
        (0.25, 5, 2),
        (0.0, 7, 0),
        (1.0, 7, 7),
        (0.5, 1, 1),
    ],
)
def test_high_tier_is_the_top_fraction(fraction: float, population: int, expected: int) -> None:
    ids = [f"{i:08x}" for i in range(population)]
    G = build_graph(ids)
    salience = {n: 1.0 - i / 100 for i, n in enumerate(reversed(ids))}  # highest id first
    plan = compaction_plan(G, salience, EXAMPLE_TIME, high_fraction=fraction)
    high = [e.node_id for e in plan if e.tier == "high"]
    assert high == sorted(sorted(ids, reverse=True)[:expected])  # the plan is in id order
    assert all(
        (e.action, e.due, e.due_at) == ("keep", False, None) for e in plan if e.node_id in high
    )


def test_high_tier_holds_only_what_something_relies_on() -> None:
    G = build_graph([A, B, C, D, E], [(B, A, "depends_on"), (C, A, "depends_on")])
    plan = by_id(compaction_plan(G, compute_salience(G), EXAMPLE_TIME, high_fraction=0.6))
    assert [n for n, e in plan.items() if e.tier == "high"] == [A]  # not ceil(0.6 * 5) = 3


def test_high_tier_breaks_ties_by_id_and_ignores_superseded_nodes() -> None:
    G = build_graph([A, B, C, D, E], [(E, D, "supersedes")])
    salience = {A: 0.5, B: 0.9, C: 0.9, D: 1.0, E: 0.2}
    plan = by_id(compaction_plan(G, salience, EXAMPLE_TIME, high_fraction=0.5))
    # d is superseded, so the top half of the other four is b and c (tied; ids decide order)
    assert [n for n, e in plan.items() if e.tier == "high"] == [B, C]
    plan = by_id(compaction_plan(G, salience, EXAMPLE_TIME, high_fraction=0.25))
    assert [n for n, e in plan.items() if e.tier == "high"] == [B]


# -- low and medium --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("edges", "tier"),
    [
        pytest.param([], "low", id="isolated"),
        pytest.param([(A, B, "depends_on")], "low", id="one-edge"),
        pytest.param([(A, B, "relates_to")], "low", id="symmetric-counted-once"),
        pytest.param([(A, B, "relates_to"), (A, C, "blocks")], "medium", id="two-edges"),
        pytest.param([(B, A, "refines"), (A, B, "refines")], "medium", id="both-directions"),
        pytest.param(
            [(A, B, "depends_on"), (A, C, "semantic"), (A, D, "entity"), (D, A, "causal")],
            "low",
            id="derived-edges-ignored",
        ),
        pytest.param([(C, A, "supersedes"), (D, C, "depends_on")], "superseded", id="folded"),
    ],
)
def test_reviewed_leaves_are_low(edges: list[tuple[str, str, str]], tier: str) -> None:
    G = build_graph([node(A, reviewed=True), B, C, D], edges)
    plan = by_id(compaction_plan(G, flat(G), EXAMPLE_TIME, high_fraction=0))
    assert plan[A].tier == tier


def test_pending_leaves_are_medium() -> None:
    G = build_graph([A, node(B, reviewed=True)], [(A, B, "depends_on")])
    plan = by_id(compaction_plan(G, flat(G), EXAMPLE_TIME, high_fraction=0))
    assert (plan[A].tier, plan[A].action) == ("medium", "summary")
    assert "pending review" in plan[A].reason
    assert (plan[B].tier, plan[B].action) == ("low", "digest")


@pytest.mark.parametrize(
    ("reviewed", "age", "due"),
    [
        (True, timedelta(days=14) - timedelta(seconds=1), False),
        (True, timedelta(days=14), True),
        (True, timedelta(days=400), True),
        (False, timedelta(days=29, hours=23), False),
        (False, timedelta(days=30), True),
        (False, timedelta(0), False),
    ],
)
def test_due_once_old_enough(reviewed: bool, age: timedelta, due: bool) -> None:
    G = build_graph([node(A, reviewed=reviewed)])
    now = EXAMPLE_TIME + age
    (entry,) = compaction_plan(G, flat(G), now, high_fraction=0)
    assert entry.tier == ("low" if reviewed else "medium")
    assert entry.due is due
    assert entry.due_at == EXAMPLE_TIME + timedelta(days=14 if reviewed else 30)


def test_ages_use_created_at_and_custom_thresholds() -> None:
    G = build_graph([node(A, reviewed=True, age=timedelta(days=3)), node(B, age=timedelta(days=3))])
    plan = by_id(
        compaction_plan(
            G,
            flat(G),
            EXAMPLE_TIME.replace(tzinfo=None),  # naive means UTC
            high_fraction=0,
            low_after=timedelta(days=2),
            medium_after=timedelta(days=4),
        )
    )
    assert (plan[A].due, plan[A].due_at) == (True, EXAMPLE_TIME - timedelta(days=1))
    assert (plan[B].due, plan[B].due_at) == (False, EXAMPLE_TIME + timedelta(days=1))


# -- arguments -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"high_fraction": -0.1}, "high_fraction"),
        ({"high_fraction": 1.5}, "high_fraction"),
        ({"high_fraction": True}, "high_fraction"),
        ({"high_fraction": math.nan}, "high_fraction"),
        ({"medium_after": timedelta(days=-1)}, "medium_after"),
        ({"low_after": 14}, "low_after"),
        ({"now": "2026-01-01"}, "now"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], field: str) -> None:
    G = build_graph([A])
    arguments: dict[str, Any] = {"now": EXAMPLE_TIME, **kwargs}
    with pytest.raises(ValidationError) as info:
        compaction_plan(G, {A: 1.0}, **arguments)
    assert info.value.field == field


def test_every_node_needs_a_score() -> None:
    G = build_graph([A, B])
    with pytest.raises(ValidationError) as info:
        compaction_plan(G, {A: 1.0, C: 0.5}, EXAMPLE_TIME)
    assert info.value.field == "salience"
    assert B in info.value.message


def test_summary_counts_tiers_actions_and_due() -> None:
    G = build_graph(
        [A, node(B, reviewed=True), node(C, reviewed=True, age=timedelta(days=20)), D, E],
        [(B, A, "depends_on"), (E, D, "supersedes"), (D, A, "depends_on")],
    )
    plan = compaction_plan(G, compute_salience(G), EXAMPLE_TIME)
    assert summarise_plan(plan) == {
        "tier": {"high": 1, "medium": 1, "low": 2, "superseded": 1},
        "action": {"keep": 1, "summary": 1, "digest": 2, "fold": 1},
        "due": {"keep": 0, "summary": 0, "digest": 1, "fold": 1},
    }
    assert summarise_plan([]) == {
        "tier": dict.fromkeys(("high", "medium", "low", "superseded"), 0),
        "action": dict.fromkeys(("keep", "summary", "digest", "fold"), 0),
        "due": dict.fromkeys(("keep", "summary", "digest", "fold"), 0),
    }


# -- properties ------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=graph_specs(max_nodes=12),
    reviewed=st.lists(st.booleans(), min_size=12, max_size=12),
    ages=st.lists(st.integers(0, 60), min_size=12, max_size=12),
    fraction=st.sampled_from([0.0, 0.1, 0.2, 0.5, 1.0]),
    now_days=st.integers(0, 90),
)
def test_plan_properties(
    spec: tuple[list[str], list[EdgeSpec]],
    reviewed: list[bool],
    ages: list[int],
    fraction: float,
    now_days: int,
) -> None:
    ids, edges = spec
    nodes = [
        node(n, reviewed=r, age=timedelta(days=a))
        for n, r, a in zip(ids, reviewed, ages, strict=False)
    ]
    G = build_graph(nodes, edges)
    before = graph_hash(G)
    salience = compute_salience(G)
    now = EXAMPLE_TIME + timedelta(days=now_days)
    plan = compaction_plan(G, salience, now, high_fraction=fraction)

    assert graph_hash(G) == before  # a view: nothing changes
    assert [e.node_id for e in plan] == sorted(G)
    superseded = {n for n in G if effective_lifecycle(G, n) is Lifecycle.SUPERSEDED}
    assert {e.node_id for e in plan if e.tier == "superseded"} == superseded
    live = [e for e in plan if e.tier != "superseded"]
    high = [e for e in plan if e.tier == "high"]
    relied_on = [e for e in live if salience[e.node_id] > 0]
    assert len(high) == min(math.ceil(round(fraction * len(live), 9)), len(relied_on))
    assert all(salience[e.node_id] > 0 for e in high)  # nothing relies on it: never kept
    rest = [e for e in live if e.tier != "high"]
    if high and rest:
        assert min(salience[e.node_id] for e in high) >= max(salience[e.node_id] for e in rest)
    for entry in plan:
        expected_action = {"high": "keep", "medium": "summary", "low": "digest"}
        if entry.tier == "superseded":
            assert entry.action == "fold"
            assert entry.due
            assert entry.fold_into is not None
            assert not successors_of(G, entry.fold_into)  # an active end of the chain
        else:
            assert entry.action == expected_action[entry.tier]
            assert entry.fold_into is None
            if entry.due_at is None:
                assert entry.tier == "high"
                assert not entry.due
            else:
                assert entry.due == (now >= entry.due_at)
        if entry.tier == "low":
            assert G.nodes[entry.node_id]["status"] == "reviewed"
    assert compaction_plan(G, salience, now, high_fraction=fraction) == plan  # deterministic
