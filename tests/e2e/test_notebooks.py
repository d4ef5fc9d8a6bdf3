"""Every notebook runs top to bottom on a fresh sample store, and is committed with its outputs.

The notebooks assert their own findings (the cells with ``assert``), so a change that breaks
the story they tell fails here, not on a reader's screen.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.integration.test_cli import cli

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
BOOKS = sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample store, written by the real CLI with the real model (as `make sample`)."""
    path = tmp_path_factory.mktemp("notebook-sample") / "store"
    done = cli("sample", "--data-dir", str(path), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert 250 <= report["decisions"] <= 400
    again = cli("sample", "--data-dir", str(path))
    assert again.returncode == 2
    assert "already holds a store" in again.stderr
    return path


def test_there_are_at_least_three_notebooks() -> None:
    assert len(BOOKS) >= 3


@pytest.mark.parametrize("path", BOOKS, ids=[p.stem for p in BOOKS])
def test_committed_with_outputs(path: Path) -> None:
    book = nbformat.read(path, as_version=4)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert not [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert sum(bool(cell.outputs) for cell in code) >= len(code) // 2


@pytest.mark.parametrize("path", BOOKS, ids=[p.stem for p in BOOKS])
def test_runs_top_to_bottom(path: Path, sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECIGRAPH_SAMPLE_DIR", str(sample_dir))
    committed = nbformat.read(path, as_version=4)
    book = nbformat.read(path, as_version=4)
    client = NotebookClient(
        book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError, with the cell, on any failing cell
    for fresh, old in zip(book.cells, committed.cells, strict=True):
        if fresh.cell_type != "code":
            continue
        kinds = {o.output_type for o in fresh.outputs}
        assert "error" not in kinds
        # A cell that showed a table or a plot when committed still shows one.
        shown = {
            kind
            for o in old.outputs
            for kind in o.get("data", {})
            if kind in ("image/png", "text/html")
        }
        now = {kind for o in fresh.outputs for kind in o.get("data", {})}
        assert shown <= now, fresh.source[:80]
