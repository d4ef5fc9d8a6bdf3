"""The notebook API against a live ``decigraph serve`` (real model, real server).

The rest of the notebook API and the sample store (fake embedder, no server) are tested in
``tests/integration/test_analyst.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from graph.enums import EdgeType
from service.analyst import AnalystError, connect, open_local
from service.sample import END, generate_sample
from tests.e2e.test_serve import start_serve, stop_serve
from tests.integration.test_analyst import copy_store
from tests.support.fakes import HashEmbedder


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "store"
    generate_sample(path, embedder=HashEmbedder())
    return path


def test_a_server_and_the_directory_give_the_same_tables(sample: Path, tmp_path: Path) -> None:
    """Real model, real server: connect() and open_local() beside it agree table for table."""
    data = copy_store(sample, tmp_path / "served", with_indexes=False)
    env = {**os.environ, "CSTP_AUTH_TOKENS": "analyst:s3cret-analyst-token"}
    proc, url = start_serve(data, env)
    try:
        with pytest.raises(AnalystError, match="refused the token"):
            connect(url, token="wrong")
        remote = connect(url, token="s3cret-analyst-token")
        local = open_local(data)  # read-only: the server holds the lock
        try:
            assert local.read_only
            assert not remote.read_only
            pd.testing.assert_frame_equal(remote.salience(), local.salience())
            pd.testing.assert_frame_equal(remote.decisions(), local.decisions())
            pd.testing.assert_frame_equal(remote.contradictions(), local.contradictions())
            pd.testing.assert_frame_equal(remote.blocked(), local.blocked())
            pd.testing.assert_frame_equal(remote.compaction(END), local.compaction(END))
            question = "Why did we replace Stripe for the payment gateway?"
            far, near = remote.recall(question), local.recall(question)
            assert list(far["id"]) == list(near["id"])
            assert far.attrs["intent"] == near.attrs["intent"] == "why"
            edges = remote.edges()
            replaced = set(edges.loc[edges["type"] == EdgeType.SUPERSEDES.value, "source"])
            assert set(far["id"].head(3)) & replaced
        finally:
            local.close()
            remote.close()
    finally:
        stop_serve(proc)
