"""Exports through the ``decigraph export`` console script against a real data directory.

The formats themselves (round trips, escaping) are unit-tested in ``tests/unit/test_export.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import StoreFactory, decision
from tests.integration.test_cli import cli


def test_cli_export_formats(open_store: StoreFactory, tmp_path: Path) -> None:
    store = open_store()
    store.record(decision("Export me"), "t")
    store.close()
    data = str(tmp_path / "data")
    out = cli("export", "--data-dir", data, "--format", "d3")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["nodes"][0]["text"] == "Export me"
    written = cli("export", "--data-dir", data, "--format", "csv", "--out", str(tmp_path / "csv"))
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "csv" / "edges.csv").exists()
    assert cli("export", "--data-dir", data, "--format", "csv").returncode == 2
