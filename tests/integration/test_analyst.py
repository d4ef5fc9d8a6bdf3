"""The notebook API and the sample store, with the fake embedder and the fake contradiction
judge.

The one test against a live server (real model) is in ``tests/e2e/test_analyst.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from graph.drafts import DecisionDraft
from service.analyst import AnalystError, explain, open_local
from service.composition import open_app
from service.sample import END, START, SampleReport, generate_sample
from service.settings import Settings
from tests.support.fakes import FakePairJudge, HashEmbedder


def make_sample(path: Path, seed: int = 7) -> SampleReport:
    """The sample with the fake embedder and the fake judge (the story records through the
    gate; these tests are of the notebook API, and with the real judge on CPU each sample
    takes minutes)."""
    return generate_sample(path, seed=seed, embedder=HashEmbedder(), pair_judge=FakePairJudge())


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "store"
    make_sample(path)
    return path


def copy_store(sample: Path, to: Path, with_indexes: bool = True) -> Path:
    if with_indexes:
        shutil.copytree(sample, to)
    else:
        to.mkdir()
        shutil.copy(sample / "events.jsonl", to / "events.jsonl")
    return to


def test_the_same_seed_writes_the_same_log(sample: Path, tmp_path: Path) -> None:
    again = make_sample(tmp_path / "again")
    other = make_sample(tmp_path / "other", seed=8)
    assert (sample / "events.jsonl").read_bytes() == (tmp_path / "again/events.jsonl").read_bytes()
    assert other.graph_hash != again.graph_hash


def test_the_sample_has_every_story_the_notebooks_tell(sample: Path) -> None:
    with open_local(sample, read_only=True, embedder=HashEmbedder()) as dg:
        decisions = dg.decisions()
        edges = dg.edges()
    assert 250 <= len(decisions) <= 400
    assert set(decisions["project"]) == {"checkout", "search", "platform", "mobile", "data"}
    manual = set(edges.loc[edges["origin"] == "manual", "type"])
    wanted = {"depends_on", "supersedes", "contradicts", "blocks", "caused_by", "refines"}
    assert wanted <= manual
    assert set(decisions["outcome"].dropna()) == {"success", "partial", "failure", "abandoned"}
    assert {"accepted", "rejected", "superseded"} <= set(decisions["lifecycle"])
    months = decisions["created_at"].dt.strftime("%Y-%m").nunique()
    assert months >= 6
    assert decisions["created_at"].min() >= pd.Timestamp(START)
    assert decisions["created_at"].max() <= pd.Timestamp(END)


def test_refuses_a_directory_that_already_holds_a_store(sample: Path) -> None:
    with pytest.raises(FileExistsError, match="already holds a store"):
        make_sample(sample)


def test_tables_are_consistent(sample: Path) -> None:
    with open_local(sample, read_only=True, embedder=HashEmbedder()) as dg:
        ranked = dg.salience()
        assert ranked["salience"].between(0, 1, inclusive="left").all()
        assert ranked["salience"].iloc[0] > 0.5  # the platform pillars: much relies on them
        assert list(ranked["rank"]) == list(range(1, len(ranked) + 1))
        ordered = sorted(zip(-ranked["salience"], ranked["id"], strict=True))
        assert [i for _, i in ordered] == list(ranked["id"])
        plan = dg.compaction(now=END)
        assert set(plan["tier"]) == {"high", "medium", "low", "superseded"}
        assert (plan.loc[plan["tier"] == "superseded", "fold_into"].notna()).all()
        calibration = dg.calibration()
        assert calibration["brier"].between(0, 1).all()
        assert calibration["reviewed"].sum() == len(dg.reviewed())
        assert dg.reliability()["count"].sum() == len(dg.reviewed())
        conflicts = dg.contradictions()
        assert not conflicts.empty
        assert conflicts["salience_at_stake"].is_monotonic_decreasing
        assert len(dg.contradictions(include_inactive=True)) > len(conflicts)
        replaced = dg.edges(include_derived=False)
        newer = replaced.loc[replaced["type"] == "supersedes", "source"].iloc[0]
        chain = dg.supersedes_chain(newer)
        assert list(chain["position"]) == sorted(chain["position"])
        assert chain.loc[chain["position"] == 0, "id"].item() == newer
        lineage = dg.lineage(newer)
        assert "supersedes" in set(lineage["edge"])
        blocked = dg.blocked()
        one = blocked.iloc[0]
        assert list(dg.blocked_chain(one["id"]).query("depth == 1")["id"]) == one["direct_blockers"]


def test_read_only_beside_a_writer_refuses_writes_and_follows(sample: Path, tmp_path: Path) -> None:
    data = copy_store(sample, tmp_path / "live")
    settings = Settings(data_dir=data, no_auth=True)
    writer = open_app(settings, HashEmbedder())
    try:
        dg = open_local(data, embedder=HashEmbedder())  # the writer holds the lock
        try:
            assert dg.read_only
            size = (data / "events.jsonl").stat().st_size
            with pytest.raises(AnalystError, match="read-only"):
                dg.call("cstp.recordDecision", decision="Try to write", category="process")
            assert (data / "events.jsonl").stat().st_size == size
            before = len(dg.decisions())
            from retrieval.writes import record

            draft = DecisionDraft(text="Adopt Kafka for the order bus", category="integration")
            new = record(writer.index, draft, "writer").node.id
            assert dg.refresh() >= 1
            assert len(dg.decisions()) == before + 1
            hits = dg.recall("Kafka order bus", limit=3)
            assert hits["id"].iloc[0] == new
        finally:
            dg.close()
    finally:
        writer.close()
    # The reader wrote nothing of its own into the directory.
    assert not any(p.name.startswith("analyst") for p in data.rglob("*"))


def test_opens_as_the_writer_when_the_directory_is_free(sample: Path, tmp_path: Path) -> None:
    data = copy_store(sample, tmp_path / "free")
    with open_local(data, embedder=HashEmbedder()) as dg:
        assert not dg.read_only
        some = dg.decisions()["id"].iloc[0]
        dg.call("cstp.reviewDecision", id=some, outcome="success")
    with open_local(data, read_only=True, embedder=HashEmbedder()) as dg:
        assert dg.decisions().set_index("id").loc[some, "outcome"] == "success"


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no decigraph store"):
        open_local(tmp_path)


def test_explain_names_signals_ranks_and_the_path() -> None:
    via = {
        "signals": {"keyword": 0.5, "keywordRank": 3.0, "vector": 0.25, "rrf": 0.03},
        "anchor": False,
        "path": [
            {"from": "bbbbbbbb", "edgeType": "depends_on", "to": "aaaaaaaa", "walked": "backward"},
            {"from": "bbbbbbbb", "edgeType": "caused_by", "to": "cccccccc", "walked": "forward"},
        ],
    }
    assert explain(via) == (
        "keyword 0.50 (#3); vector 0.25; "
        "reached aaaaaaaa <-depends_on- bbbbbbbb -caused_by-> cccccccc"
    )
    assert explain({"signals": {}, "anchor": True, "path": []}) == "anchor"
