"""The ``decigraph`` console script against a real data directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson

from tests.conftest import StoreFactory, decision

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_verify_stats_rebuild(open_store: StoreFactory, tmp_path: Path) -> None:
    store = open_store()
    a, b = store.record(decision("a"), "x"), store.record(decision("b"), "x")
    store.link(a.id, b.id, "relates_to", "x")
    data = str(tmp_path / "data")

    result = cli("verify", "--data-dir", data, "--json")  # read-only: works while we hold it
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["events"] == 3

    stats = json.loads(cli("stats", "--data-dir", data, "--json").stdout)
    assert stats["nodes"] == {"decision": 2}
    assert stats["edges"] == {"relates_to": 2}

    locked = cli("rebuild", "--data-dir", data)
    assert locked.returncode == 2
    assert "locked for writing" in locked.stderr
    store.close()

    rebuilt = cli("rebuild", "--data-dir", data, "--json", "--snapshot-only")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["graphHash"] == store.graph_hash()


def test_verify_fails_on_tampering(open_store: StoreFactory, tmp_path: Path) -> None:
    store = open_store()
    store.record(decision("a"), "x")
    store.record(decision("b"), "x")
    store.close()
    log = tmp_path / "data" / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    event = orjson.loads(lines[0])
    event["actor"] = "mallory"
    lines[0] = orjson.dumps(event) + b"\n"
    log.write_bytes(b"".join(lines))
    result = cli("verify", "--data-dir", str(tmp_path / "data"))
    assert result.returncode != 0
    assert "hash" in (result.stdout + result.stderr)


def test_rebuild_and_verify_the_indexes(open_store: StoreFactory, tmp_path: Path) -> None:
    store = open_store()
    a = store.record(decision("Use PostgreSQL for the ledger"), "x")
    store.record(decision("Cache sessions in Redis"), "x")
    store.forget(a.id, "x")
    store.close()
    data = str(tmp_path / "data")
    behind = cli("verify", "--data-dir", data, "--indexes", "--json")
    assert behind.returncode == 1  # nothing indexed yet: the vector index lacks the decision
    assert any("lacks" in p for p in json.loads(behind.stdout)["problems"])
    rebuilt = cli("rebuild", "--data-dir", data, "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["embedded"] == 1
    verified = cli("verify", "--data-dir", data, "--indexes", "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["indexesChecked"] is True
