"""``decigraph recall`` beside a running server takes the light path (service/cli/remote.py):
the same answer as in-process, none of the heavy imports, and the same clear errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.cli import _recall_text
from service.client import AnalystError, OverHttp
from tests.e2e.test_serve import ROOT, free_port, start_serve, stop_serve

TOKEN = "fast-path-token-0123456789"
QUERY = "why did we move the billing ledger to PostgreSQL?"
HEAVY = (
    "torch",
    "sentence_transformers",
    "chromadb",
    "networkx",
    "scipy",
    "numpy",
    "pydantic",
    "httpx",
    "graph.store",
    "service.composition",
    "service.client",
)
ITEMS = [
    "We moved the billing ledger to PostgreSQL because it needs transactions",
    "The Lisbon datacenter flooded in March",
    "Cache the order store reads in front of PostgreSQL for 800 seconds",
    "Use Kafka for the event bus since the audit trail must be replayable",
]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DECIGRAPH_", "CSTP_"))}
    return {**env, "DECIGRAPH_FSYNC": "never", **extra}


def cli(*args: str | Path, env: dict[str, str], importtime: bool = False) -> Any:
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run(
        [sys.executable, *flags, "-m", "service.cli", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def imported(stderr: str) -> set[str]:
    """Module names of a ``-X importtime`` run."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }


def stable(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "queryTimeMs"}  # a timing, not the answer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    data = tmp_path_factory.mktemp("fast") / "data"
    proc, url = start_serve(data, env=clean_env(CSTP_AUTH_TOKENS=f"hook:{TOKEN}"))
    try:
        client = OverHttp(url, TOKEN, timeout=120)
        for text in ITEMS:
            client.call("cstp.remember", {"text": text})
        client.close()
        yield proc, url, data
    finally:
        if proc.poll() is None:
            stop_serve(proc)


def test_recall_beside_a_server_is_light_and_answers_like_in_process(served: Any) -> None:
    proc, url, data = served
    env = clean_env(CSTP_TOKEN=TOKEN)
    fast = cli("recall", QUERY, "--data-dir", data, "--json", env=env, importtime=True)
    assert fast.returncode == 0, fast.stderr[-2000:]
    modules = imported(fast.stderr)
    assert "service.cli.remote" in modules
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY) == []
    answer = json.loads(fast.stdout)
    assert answer["results"]
    assert "PostgreSQL" in answer["results"][0]["text"]
    client = OverHttp(url, TOKEN, timeout=120)
    try:  # what the HTTP client of the heavy path gets
        assert stable(client.call("cstp.recall", {"query": QUERY, "limit": 10})) == stable(answer)
    finally:
        client.close()
    text = cli("recall", QUERY, "--data-dir", data, "--limit", "3", env=env)
    assert text.returncode == 0, text.stderr
    three = cli("recall", QUERY, "--data-dir", data, "--limit", "3", "--json", env=env)
    assert text.stdout == _recall_text(json.loads(three.stdout)) + "\n"

    # The server gone (a clean stop), a stale server.json naming a dead process: the command
    # opens the store itself, as it always did, and answers the same.
    stop_serve(proc)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    (data / "server.json").write_text(json.dumps({"url": url, "pid": dead.pid, "host": host}))
    (data / "LOCK").write_text(f"pid {dead.pid} on {host}")
    alone = cli("recall", QUERY, "--data-dir", data, "--json", env=env)
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert stable(json.loads(alone.stdout)) == stable(answer)


@pytest.fixture
def live(tmp_path: Path) -> Any:
    data = tmp_path / "data"
    proc, url = start_serve(data, env=clean_env(CSTP_AUTH_TOKENS=f"hook:{TOKEN}"))
    try:
        yield proc, url, data
    finally:
        stop_serve(proc)


def test_errors_stay_clear(live: Any) -> None:
    _, url, data = live
    wrong = cli("recall", QUERY, "--data-dir", data, env=clean_env(CSTP_TOKEN="not-the-token"))
    assert wrong.returncode == 2
    with pytest.raises(AnalystError) as refused:  # what the heavy path's client says
        OverHttp(url, "not-the-token", timeout=30).call("cstp.recall", {"query": QUERY})
    assert wrong.stderr == f"decigraph: {refused.value}\n"
    assert "refused the token" in wrong.stderr

    env = clean_env(CSTP_TOKEN=TOKEN)
    bad = cli("recall", "", "--data-dir", data, env=env)  # the method refuses an empty query
    with pytest.raises(AnalystError) as invalid:
        OverHttp(url, TOKEN, timeout=30).call("cstp.recall", {"query": "", "limit": 10})
    assert (bad.returncode, bad.stderr) == (2, f"decigraph: {invalid.value}\n")

    # The published address no longer answers while its process holds the lock: the heavy
    # path says so, in one line (as before the light path existed).
    published = json.loads((data / "server.json").read_text())
    closed = f"http://127.0.0.1:{free_port()}"
    (data / "server.json").write_text(json.dumps({**published, "url": closed}))
    try:
        down = cli("recall", QUERY, "--data-dir", data, env=env)
    finally:
        (data / "server.json").write_text(json.dumps(published))
    assert down.returncode == 2
    assert down.stderr.startswith(f"decigraph: cannot reach the server at {closed}")
    assert down.stderr.count("\n") == 1
    assert "Traceback" not in down.stderr
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200
