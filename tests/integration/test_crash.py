"""Kill -9 a writer mid-stream: every acknowledged write survives and the log verifies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from graph.store import DecisionStore, StoreOptions

ROOT = Path(__file__).resolve().parents[2]


def run_and_kill(data_dir: Path, acks_wanted: int) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.crash_writer", str(data_dir), "4"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    acks: list[str] = []
    try:
        for line in proc.stdout:
            if line.startswith("ack "):
                acks.append(line.split()[2])
                if len(acks) >= acks_wanted:
                    break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    # Lines the child printed after we stopped reading were acknowledged too: collect them.
    acks.extend(
        line.split()[2] for line in proc.stdout.read().splitlines() if line.startswith("ack ")
    )
    return acks


@pytest.mark.parametrize("rounds", [3])
def test_acknowledged_writes_survive_kill_9(tmp_path: Path, rounds: int) -> None:
    data_dir = tmp_path / "data"
    acknowledged: list[str] = []
    for round_number in range(rounds):
        acknowledged += run_and_kill(data_dir, 60 + 37 * round_number)
        store = DecisionStore.open(data_dir, StoreOptions(fsync="never"))
        try:
            for ack in acknowledged:
                if ">" in ack:
                    source, target = ack.split(">")
                    assert store.graph.has_edge(source, target, "depends_on"), ack
                else:
                    assert ack in store.graph, ack
            report = store.verify()
            assert report.ok, report.problems
        finally:
            store.close()
