"""Which stored decisions a proposal is judged against (``retrieval.contradiction.candidates``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graph.enums import EdgeType
from retrieval.contradiction.candidates import BY_PARENT, BY_VECTOR, BY_WORDS, rivals
from service import usecases
from service.methods.decisions import RecordParams
from service.usecases import Decigraph
from service.usecases.inputs import LinkDecisions
from tests.support.fakes import fake_app

PROPOSAL = "workstation reservations for the day happen in the envoy app before people come in"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def record(app: Decigraph, text: str) -> str:
    params = RecordParams.model_validate({"decision": text})
    return usecases.record_decision(app, params, "agent").node.id


def link(app: Decigraph, source: str, target: str, kind: EdgeType) -> None:
    usecases.link(app, LinkDecisions(source=source, target=target, type=kind), "agent")


def crowded_store(app: Decigraph, relied_on: bool) -> str:
    """A foundational decision sharing no word with :data:`PROPOSAL`; its dependents and
    eight other decisions share several, so the nearest slots are all taken."""
    foundation = record(app, "Desk booking at all offices is handled through Robin")
    for n in range(3):
        dependent = record(app, f"workstation reservations for the day feed badge report {n}")
        if relied_on:
            link(app, dependent, foundation, EdgeType.DEPENDS_ON)
    for n in range(8):
        record(app, f"people come in for the day and the app shows floor {n}")
    return foundation


def found(app: Decigraph, text: str) -> dict[str, str]:
    vector = app.index.embedder.embed([text])[0]
    return {r.target: r.found_by for r in rivals(app.index, text, vector)}


def test_a_decision_the_nearest_ones_rely_on_is_judged_too(app: Decigraph) -> None:
    foundation = crowded_store(app, relied_on=True)
    candidates = found(app, PROPOSAL)
    assert candidates[foundation] == "parent"
    assert len(candidates) <= BY_VECTOR + BY_PARENT + BY_WORDS


def test_without_the_dependency_the_far_decision_is_not_judged(app: Decigraph) -> None:
    foundation = crowded_store(app, relied_on=False)
    assert foundation not in found(app, PROPOSAL)


def test_a_superseded_or_excluded_parent_is_not_judged(app: Decigraph) -> None:
    foundation = crowded_store(app, relied_on=True)
    newer = record(app, "Desk booking at all offices moves to Robin's successor")
    link(app, newer, foundation, EdgeType.SUPERSEDES)
    assert foundation not in found(app, PROPOSAL)


def test_candidates_are_deterministic(app: Decigraph) -> None:
    crowded_store(app, relied_on=True)
    vector = app.index.embedder.embed([PROPOSAL])[0]
    first = rivals(app.index, PROPOSAL, vector)
    assert all(rivals(app.index, PROPOSAL, vector) == first for _ in range(3))
