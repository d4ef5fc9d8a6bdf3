"""The briefing's rules (service/usecases/briefing.py) and its wire forms (methods/briefs.py),
over a real store with the hash embedder and a judge answering from a table: which decisions
become conflicts, failures and context, and how the MCP form keeps to its budget. Judgment
itself (the real judge, the real model) is measured by bench/agent_sessions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval.contradiction.tiers import Conflict
from retrieval.relevance import FEATURES, RelevanceModel, coverage, default_model, relevance
from service.methods.briefs import brief_view, compact
from service.settings import Settings
from service.usecases import Decigraph
from service.usecases.briefing import Briefing, Item, brief
from service.usecases.rules import Verdict
from tests.support.fakes import FakePairJudge, fake_app, rpc_result


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 28) as made:
        yield made


def record(app: Decigraph, text: str, **params: Any) -> str:
    node: str = rpc_result(app, "recordDecision", {"decision": text, **params})["id"]
    return node


def briefed(app: Decigraph, text: str, conflicts: list[Conflict] | None = None) -> Briefing:
    vector = app.index.embed([text])[0]
    return brief(app, text, vector, conflicts or [], floor=0.0, limit=5)


def test_the_shipped_relevance_model_is_a_probability_rising_with_each_feature() -> None:
    model = default_model()
    assert len(model.weights) == len(FEATURES)
    assert all(w > 0 for w in model.weights)  # more similar, nearer the best, more words: more
    low, high = model.probability((0.1, -0.4, 0.0)), model.probability((0.7, 0.0, 0.6))
    assert 0.0 < low < 0.2
    assert 0.8 < high < 1.0


def test_relevance_is_absolute_not_relative_to_the_best_hit(app: Decigraph) -> None:
    index = app.index.keyword
    index.upsert("aaaaaaaa", "Run background jobs on Celery")
    index.upsert("bbbbbbbb", "Sign API tokens with RS256")
    assert coverage(index, ["celeri", "job"], "aaaaaaaa") == 1.0
    weak = relevance({"aaaaaaaa": 0.15}, index, "lunch menu for friday")
    # The best hit of a hopeless query is not "1.0": it stays below the default floor.
    assert weak["aaaaaaaa"] < Settings().relevance_floor
    model = RelevanceModel((1.0, 1.0, 1.0), 0.0)
    assert relevance({"aaaaaaaa": 0.0}, index, "x", model) == {"aaaaaaaa": 0.5}


def test_a_failed_and_superseded_decision_is_a_lesson_and_its_revival_a_conflict(
    app: Decigraph,
) -> None:
    rq = record(app, "Run background jobs with RQ on Redis")
    rpc_result(
        app,
        "reviewDecision",
        {"id": rq, "outcome": "failure", "lessons": "Use a broker that acknowledges jobs"},
    )
    celery = record(app, "Run background jobs on Celery with acknowledgements", supersedes=[rq])
    judge = app.pair_judge
    assert isinstance(judge, FakePairJudge)
    proposal = "Run background jobs with RQ on Redis"  # the same words: relevance is high
    judge.set("Run background jobs with RQ on Redis", proposal, 0.01)  # agrees with the old one
    found = briefed(app, proposal)
    assert [i.id for i in found.failures] == [rq]
    assert found.failures[0].lesson == "Use a broker that acknowledges jobs"
    assert found.failures[0].replaced_by == celery
    assert [(i.id, i.tier) for i in found.conflicts] == [(celery, "review")]
    assert rq in found.conflicts[0].why


def test_judged_conflicts_need_p_and_relevance_and_never_target_a_failure(
    app: Decigraph,
) -> None:
    jwt = record(app, "Authenticate API requests with JWT access tokens")
    dropped = record(app, "Generate invoices as PDF files overnight")
    failed = record(app, "Authenticate API requests with HTTP basic auth")
    rpc_result(app, "reviewDecision", {"id": failed, "outcome": "abandoned"})
    text = "Authenticate API requests with server-side sessions"

    def conflict(target: str, p: float, tier: str = "review") -> Conflict:
        return Conflict(target, p, tier, "substitution", "fake")  # type: ignore[arg-type]

    vector = app.index.embed([text])[0]
    # The hash embedder's cosines are not the model's: put the floor between the two.
    rel = {i.id: i.relevance for i in brief(app, text, vector, floor=0.0).items()}
    floor = (rel[jwt] + rel[dropped]) / 2
    assert rel[dropped] < floor < rel[jwt]
    found = brief(
        app,
        text,
        vector,
        [conflict(jwt, 0.9), conflict(dropped, 0.9), conflict(failed, 0.99)],
        floor=floor,
    )
    ids = [i.id for i in found.conflicts]
    assert jwt in ids  # confident and relevant
    assert dropped not in ids  # about something else: the judge's slip, not shown
    assert failed not in ids
    assert failed in [i.id for i in found.failures]
    weak = brief(app, text, vector, [conflict(jwt, 0.4)], floor=floor)
    assert jwt not in [i.id for i in weak.conflicts]  # below P 0.5


def test_the_floor_and_the_limit_bound_what_is_named(app: Decigraph) -> None:
    for n in range(8):
        record(app, f"Cache product page {n} in Redis for ten minutes")
    found = briefed(app, "Cache product pages in Redis")
    assert len(found.decisions) == 5  # limit
    assert [i.relevance for i in found.decisions] == sorted(
        (i.relevance for i in found.decisions), reverse=True
    )
    vector = app.index.embed(["Cache product pages in Redis"])[0]
    assert brief(app, "Cache product pages in Redis", vector, floor=1.0).items() == []


def test_the_mcp_form_keeps_its_budget_by_dropping_the_least_relevant_first() -> None:
    conflicts = [Item("c0000000", "A" * 150, "block: x", 0.9, "conflict", tier="block", p=0.97)]
    decisions = [
        Item(f"d000000{n}", "B" * 150, "same subject", 0.9 - n / 10, "decision") for n in range(8)
    ]
    briefing = Briefing(conflicts=conflicts, decisions=decisions)
    full = brief_view(briefing, Verdict(), max_chars=50_000)
    assert [r["id"] for r in full["relevantDecisions"]][:2] == ["c0000000", "d0000000"]
    cut = brief_view(briefing, Verdict(), max_chars=900)
    assert len(compact(cut)) <= 900
    kept = [r["id"] for r in cut["relevantDecisions"]]
    assert kept[0] == "c0000000"  # conflicts stay
    assert kept[1:] == [f"d000000{n}" for n in range(len(kept) - 1)]  # the most relevant stay
    assert cut["conflicts"] == [{"id": "c0000000", "tier": "block", "p": 0.97}]
    assert "resolve" in cut
    assert "supersedes" in cut["resolve"]
    assert json.loads(compact(cut)) == cut
