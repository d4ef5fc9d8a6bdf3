"""What an operator relies on, without a model or a server process: ``/ready`` (503 until the
model is warm and the indexes hold the log's graph), the server address a data directory
publishes, owner-only snapshots whatever the umask, and one-line errors for bad rule files."""

from __future__ import annotations

import dataclasses
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import orjson
import pytest
from fastapi.testclient import TestClient

from graph.snapshot import SnapshotHeader, write_snapshot
from retrieval import memsnap
from retrieval.vector import Watermark
from service.cli.address import ServerAddressError, locate, publish, read, url_of, withdraw
from service.composition import Warmup
from service.http.app import create_app
from service.http.auth import TokenTable
from service.usecases import Decigraph
from service.usecases.rules import GuardrailConfigError, load_rules
from tests.support.fakes import fake_app

TOKEN = "ops-token-0123456789abcdef"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def test_ready_waits_for_the_model_and_the_indexes(app: Decigraph) -> None:
    warmup = Warmup(app)
    http = TestClient(create_app(app, TokenTable({TOKEN: "ops"}), warmup))
    early = http.get("/ready")
    assert early.status_code == 503
    assert early.json() == {
        "ready": False,
        "model": "pending",
        "indexes": "caught up",
        "seq": 0,
        "nodes": 0,
        "edges": 0,
        "indexed": 0,
    }
    assert http.get("/health").status_code == 200  # liveness does not wait
    warmup.run()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = {"jsonrpc": "2.0", "method": "cstp.recordDecision", "id": 1}
    http.post("/cstp", json={**body, "params": {"decision": "Use Kafka"}}, headers=headers)
    ready = http.get("/ready")
    assert ready.status_code == 200
    assert ready.json() == {
        "ready": True,
        "model": "warm",
        "indexes": "caught up",
        "seq": 1,
        "nodes": 1,
        "edges": 0,
        "indexed": 1,
    }
    app.index.healthy = False  # an index that missed an event is not ready any more
    behind = http.get("/ready")
    assert behind.status_code == 503
    assert behind.json()["indexes"] == "behind"


def test_a_failed_warm_up_is_reported(app: Decigraph) -> None:
    class Broken:
        model_name, dimension = "broken", 16

        def embed(self, texts: object) -> object:
            raise RuntimeError("no model files")

    app.index.embedder = Broken()
    warmup = Warmup(app)
    warmup.run()
    answer = TestClient(create_app(app, TokenTable({TOKEN: "ops"}), warmup)).get("/ready")
    assert answer.status_code == 503
    assert answer.json()["model"] == "failed"
    assert answer.json()["error"] == "RuntimeError: no model files"


def test_the_published_address_is_the_lock_holders_own(tmp_path: Path) -> None:
    me = f"pid {os.getpid()} on {socket.gethostname()}"
    with pytest.raises(ServerAddressError, match="has not published an address"):
        locate(tmp_path, me)
    path = publish(tmp_path, "http://127.0.0.1:8111")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert locate(tmp_path, me) == "http://127.0.0.1:8111"
    for holder in (f"pid 1 on {socket.gethostname()}", f"pid {os.getpid()} on elsewhere", "?"):
        with pytest.raises(ServerAddressError, match="a server that is gone"):
            locate(tmp_path, holder)
    withdraw(tmp_path)
    assert read(tmp_path) is None
    publish(tmp_path, "http://127.0.0.1:8111")
    stale = orjson.loads(path.read_bytes())
    path.write_bytes(orjson.dumps({**stale, "pid": 1}))
    withdraw(tmp_path)  # not ours: left alone
    assert read(tmp_path) is not None


@pytest.mark.parametrize(
    ("host", "url"), [("0.0.0.0", "http://127.0.0.1:"), ("127.0.0.1", "http://127.0.0.1:")]
)
def test_a_wildcard_bind_is_reached_on_loopback(host: str, url: str) -> None:
    with socket.socket() as sock:
        sock.bind((host, 0))
        assert url_of(sock) == f"{url}{sock.getsockname()[1]}"


def test_snapshots_are_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        snapshot = tmp_path / "snapshot.json"
        numbers = {"seq": 0, "log_offset": 0}  # the other fields are hashes
        header = SnapshotHeader(
            **{f.name: numbers.get(f.name, "0" * 64) for f in dataclasses.fields(SnapshotHeader)}
        )
        write_snapshot(snapshot, nx.MultiDiGraph(), header)
        index = tmp_path / "index" / "memory.pickle"
        memsnap.save(index, Watermark(0, "0" * 64), {})
    finally:
        os.umask(previous)
    assert stat.S_IMODE(snapshot.stat().st_mode) == 0o600
    assert stat.S_IMODE(index.stat().st_mode) == 0o600
    assert stat.S_IMODE(index.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"- id: x\n  conditions: [\n", "not valid YAML: line 3, column 1: expected the node"),
        (b"- id: x\n  action: [block\n", "not valid YAML: line 3"),
        (b"\xff\xfe\x00bad", "cannot be read: not UTF-8 text"),
    ],
)
def test_a_bad_rule_file_is_one_line(tmp_path: Path, content: bytes, expected: str) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_bytes(content)
    with pytest.raises(GuardrailConfigError) as raised:
        load_rules([tmp_path])
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{rules}: ")
    assert expected in message
