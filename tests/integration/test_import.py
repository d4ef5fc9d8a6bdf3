"""Importing an export with the ``decigraph import`` console script (one test loads the model).

Import through the store itself (formats, chunking, resuming, refusals) is unit-tested in
``tests/unit/test_import.py``, whose source store and bad documents are reused here.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from graph.store import DecisionStore
from tests.conftest import StoreFactory
from tests.integration.test_cli import cli
from tests.unit.test_import import FORMATS, _bad_cycle, _d3, build_source


@pytest.fixture
def source(open_store: StoreFactory, tmp_path: Path) -> DecisionStore:
    return build_source(open_store(tmp_path / "source"))


# -- the real command line -------------------------------------------------------------------


def _export_with_cli(data: Path, fmt: str, out: Path) -> list[str]:
    written = cli("export", "--data-dir", str(data), "--format", fmt, "--out", str(out), "--json")
    assert written.returncode == 0, written.stderr
    files: list[str] = json.loads(written.stdout)["files"]
    return [str(out)] if fmt == "csv" else files


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_import_of_each_format(source: DecisionStore, tmp_path: Path, fmt: str) -> None:
    source.close()
    paths = _export_with_cli(tmp_path / "source", fmt, tmp_path / "out")
    data = str(tmp_path / "target")
    args = ("import", "--format", fmt, *paths, "--data-dir", data, "--actor", "me", "--json")
    done = cli(*args, "--no-index")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["graphHash"] == source.graph_hash()
    assert report["nodes"] == source.graph.number_of_nodes()
    verified = cli("verify", "--data-dir", data, "--json")
    assert verified.returncode == 0, verified.stdout
    assert json.loads(verified.stdout)["graphHash"] == source.graph_hash()
    actors = {
        orjson.loads(line)["actor"] for line in Path(data, "events.jsonl").read_bytes().splitlines()
    }
    assert actors == {"me"}


def test_cli_refuses_bad_input_and_writes_nothing(source: DecisionStore, tmp_path: Path) -> None:
    source.close()
    data = tmp_path / "target"
    doc = _d3(source)
    _bad_cycle(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    ok_paths = _export_with_cli(tmp_path / "source", "graphml", tmp_path / "out")
    assert (
        cli(
            "import", "--format", "graphml", *ok_paths, "--data-dir", str(data), "--no-index"
        ).returncode
        == 0
    )
    before = (data / "events.jsonl").read_bytes()
    refused = cli("import", "--format", "json", str(bad), "--data-dir", str(data), "--no-index")
    assert refused.returncode == 2
    assert "would create a cycle" in refused.stderr
    malformed = tmp_path / "bad.graphml"
    malformed.write_text("<graphml><graph>")
    refused = cli("import", "--format", "graphml", str(malformed), "--data-dir", str(data))
    assert refused.returncode == 2
    assert "graphml: line 1" in refused.stderr
    assert (data / "events.jsonl").read_bytes() == before


def test_cli_import_indexes_what_it_imports(source: DecisionStore, tmp_path: Path) -> None:
    """The one test here that loads the real model: recall finds an imported decision."""
    source.close()
    paths = _export_with_cli(tmp_path / "source", "graphml", tmp_path / "out")
    data = str(tmp_path / "target")
    done = cli("import", "--format", "graphml", *paths, "--data-dir", data, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["embedded"] == source.graph.number_of_nodes()
    found = cli("recall", "which database holds the billing ledger?", "--data-dir", data, "--json")
    assert found.returncode == 0, found.stderr
    texts = [hit["text"] for hit in json.loads(found.stdout)["results"]]
    assert "Use PostgreSQL for the billing ledger" in texts[:3]
    verified = cli("verify", "--data-dir", data, "--indexes", "--json")
    assert verified.returncode == 0, verified.stdout
