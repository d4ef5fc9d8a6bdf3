"""What operators and clients see from the real ``decigraph`` processes: setLifecycle and forget
over the wire, strict types, request ids as sent (raw bytes), ``/ready``, the CLI finding the
server that holds a data directory (two servers, two directories), owner-only files, and one
clear line (never a traceback) for a read-only directory, bad rules or an unreachable ChromaDB.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graph.store import DecisionStore, StoreOptions
from tests.e2e.test_serve import free_port

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "operator-token-0123456789"
ENV = {**os.environ, "CSTP_AUTH_TOKENS": f"ops:{TOKEN}", "DECIGRAPH_FSYNC": "never"}
ENV.pop("CSTP_URL", None)


class Served:
    """A ``decigraph serve`` process (started with umask 022, as a shell would)."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "service.cli", "serve", "--data-dir", str(data)]
        self.proc = subprocess.Popen(
            [*command, "--port", str(self.port)],
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            umask=0o022,
        )
        self.client = httpx.Client(timeout=60)
        self.early: list[tuple[int, dict[str, Any]]] = []  # /ready answers before 200
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                answer = self.client.get(f"{self.url}/ready", timeout=5)
            except httpx.TransportError:
                time.sleep(0.2)
                continue
            if answer.status_code == 200:
                self.ready = answer.json()
                return
            self.early.append((answer.status_code, answer.json()))
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"decigraph serve on {data} never became ready")

    def call(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        body = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": 1}
        headers = {"Authorization": f"Bearer {kw.get('token', TOKEN)}"}
        response = self.client.post(f"{self.url}/cstp", json=body, headers=headers)
        if response.status_code != 200:
            return response
        return response.json()

    def ok(self, method: str, params: dict[str, Any] | None = None) -> Any:
        answer = self.call(method, params)
        assert "error" not in answer, answer
        return answer["result"]

    def raw(self, body: bytes) -> httpx.Response:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        return self.client.post(f"{self.url}/cstp", content=body, headers=headers)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.client.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.client.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served(tmp_path_factory.mktemp("ops") / "data")
    try:
        yield served
    finally:
        served.kill()


def cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *map(str, args)],
        cwd=ROOT,
        env=env or {**ENV, "CSTP_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_ready_after_the_warm_up(server: Served) -> None:
    assert server.ready["ready"] is True
    assert server.ready["model"] == "warm"
    assert server.ready["indexes"] == "caught up"
    assert {"seq", "nodes", "edges", "indexed"} <= set(server.ready)
    for status, body in server.early:  # while the model loaded: 503, saying why
        assert status == 503
        assert body["ready"] is False
        assert body["model"] in ("pending", "loading")
    assert httpx.get(f"{server.url}/health").status_code == 200
    started = time.perf_counter()
    server.ok("cstp.recordDecision", {"decision": "Warm writes are quick"})
    assert time.perf_counter() - started < 5  # the model was loaded before the first write


def test_set_lifecycle_and_forget_over_the_wire(server: Served) -> None:
    def record(text: str, **extra: Any) -> str:
        return str(server.ok("cstp.recordDecision", {"decision": text, **extra})["id"])

    pg = record("Use PostgreSQL as the primary datastore for the payments ledger")
    for name in ("ledger service", "billing jobs", "refund worker", "audit export"):
        # Declared compatible with what it relies on: whether the judge reads a dependent as a
        # rival of pg is not what this test is about.
        dependent = record(
            f"The {name} keeps its rows in the primary datastore", compatibleWith=[pg]
        )
        server.ok(
            "cstp.linkDecisions", {"sourceId": dependent, "targetId": pg, "edgeType": "depends_on"}
        )
    rival = record(
        "Use MySQL as the primary datastore for the payments ledger",
        contradicts=[pg],
        override={"reason": "legacy ledger until Q3"},
    )
    rejected = server.ok("cstp.setLifecycle", {"id": rival, "lifecycle": "rejected"})
    assert (rejected["lifecycle"], rejected["gated"]) == ("rejected", False)
    refused = server.call("cstp.setLifecycle", {"id": rival, "lifecycle": "accepted"})
    assert refused["error"]["code"] == -32004
    assert refused["error"]["data"]["violations"][0]["guardrailId"] == "graph-contradiction"
    forced = server.ok(
        "cstp.setLifecycle",
        {"id": rival, "lifecycle": "accepted", "override": {"reason": "dual-write migration"}},
    )
    assert (forced["lifecycle"], forced["guardrailOverride"]) == ("accepted", True)
    log = (server.data / "events.jsonl").read_text()
    assert '"op":"set_lifecycle"' in log.replace(" ", "")
    assert "dual-write migration" in log

    unknown = server.call("cstp.setLifecycle", {"id": "0000dead", "lifecycle": "accepted"})
    assert (unknown["error"]["code"], unknown["error"]["data"]["field"]) == (-32005, "id")
    bad = server.call("cstp.setLifecycle", {"id": rival, "lifecycle": "superseded"})
    assert (bad["error"]["code"], bad["error"]["data"]["field"]) == (-32602, "lifecycle")
    assert server.call("cstp.forget", {"id": "0000dead"})["error"]["data"]["field"] == "id"
    denied = server.call("cstp.forget", {"id": rival}, token="not-the-token-0123456789")
    assert denied.status_code == 401

    gone = server.ok("cstp.forget", {"id": rival, "reason": "migration done"})
    assert gone["id"] == rival
    assert gone["edgesRemoved"] >= 1
    assert server.ok("cstp.getDecision", {"id": rival})["found"] is False
    assert '"op":"forget"' in (server.data / "events.jsonl").read_text().replace(" ", "")


def test_types_are_strict_over_the_wire(server: Served) -> None:
    sure = server.call("cstp.recordDecision", {"decision": "Adopt Terraform", "confidence": True})
    assert (sure["error"]["code"], sure["error"]["data"]["field"]) == (-32602, "confidence")
    text = server.call("cstp.recordDecision", {"decision": "Adopt Terraform", "confidence": "1"})
    assert text["error"]["data"]["field"] == "confidence"
    yes = server.call(
        "cstp.preAction",
        {"action": {"description": "Adopt Terraform"}, "options": {"autoRecord": "yes"}},
    )
    assert (yes["error"]["code"], yes["error"]["data"]["field"]) == (-32602, "options.autoRecord")
    whole = server.ok("cstp.recordDecision", {"decision": "Adopt Pulumi", "confidence": 1})
    stored = server.ok("cstp.getDecision", {"id": whole["id"]})["decision"]
    assert stored["confidence"] == 1.0


@pytest.mark.parametrize(
    "literal",
    [
        b"9007199254740993",
        b"12345678901234567890",
        b"123456789012345678901234567890",
        b"-9223372036854775809",
        b"0",
        b"1.5",
        b'"9007199254740993"',
        b'"req-\\u00e9"',
        b"null",
    ],
)
def test_request_ids_come_back_as_sent(server: Served, literal: bytes) -> None:
    body = b'{"jsonrpc":"2.0","method":"cstp.getStats","params":{},"id":' + literal + b"}"
    answer = server.raw(body)
    assert answer.status_code == 200
    assert answer.content.endswith(b',"id":' + literal.replace(b"\\u00e9", "é".encode()) + b"}")
    error = server.raw(b'{"jsonrpc":"2.0","method":"cstp.nope","id":' + literal + b"}")
    assert error.content.endswith(b',"id":' + literal.replace(b"\\u00e9", "é".encode()) + b"}")


def test_a_notification_gets_no_answer(server: Served) -> None:
    assert server.raw(b'{"jsonrpc":"2.0","method":"cstp.getStats"}').status_code == 204


def modes(data: Path) -> dict[str, int]:
    found = {}
    for path in [data, *data.rglob("*")]:
        found[str(path.relative_to(data))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def test_recall_asks_the_server_holding_the_data_directory(server: Served, tmp_path: Path) -> None:
    server.ok("cstp.remember", {"text": "The Lisbon datacenter flooded in March"})
    other = Served(tmp_path / "other")
    try:
        other.ok("cstp.remember", {"text": "The Oslo datacenter lost power in May"})
        published = json.loads((other.data / "server.json").read_text())
        assert published["url"] == other.url
        assert stat.S_IMODE((other.data / "server.json").stat().st_mode) == 0o600
        for data, expected in ((server.data, "Lisbon"), (other.data, "Oslo")):
            # --port names neither server: the address comes from the data directory.
            found = cli("recall", "which datacenter had trouble?", "--data-dir", data, "--json")
            assert found.returncode == 0, found.stderr
            texts = [hit["text"] for hit in json.loads(found.stdout)["results"]]
            assert any(expected in text for text in texts), texts
            assert not any(
                ("Oslo" if expected == "Lisbon" else "Lisbon") in text for text in texts
            ), texts
    finally:
        other.stop()
    assert not (other.data / "server.json").exists()  # removed on a clean shutdown
    loose = {name: mode for name, mode in modes(other.data).items() if mode & 0o077}
    assert loose == {}, loose
    assert (other.data / "chroma").is_dir()
    assert (other.data / "snapshot.json").is_file()
    assert (other.data / "index" / "memory.pickle").is_file()


def test_a_lock_without_a_published_address_is_a_clear_error(tmp_path: Path) -> None:
    data = tmp_path / "held"
    with DecisionStore.open(data, StoreOptions(fsync="never")):
        unknown = cli("recall", "anything", "--data-dir", data, "--port", "8100")
        assert unknown.returncode == 2
        assert unknown.stderr.count("\n") == 1, unknown.stderr
        assert "has not published an address" in unknown.stderr
        host = socket.gethostname()
        (data / "server.json").write_text(
            json.dumps({"url": "http://127.0.0.1:9", "pid": 1, "host": host})
        )
        stale = cli("recall", "anything", "--data-dir", data)
        assert stale.returncode == 2
        assert "a server that is gone" in stale.stderr
        assert "Traceback" not in stale.stderr + unknown.stderr


def read_only_serve(data: Path) -> subprocess.CompletedProcess[str]:
    """``decigraph serve`` on a data directory it cannot write to."""
    data.mkdir()
    command = [sys.executable, "-m", "service.cli", "serve", "--data-dir", str(data)]
    command += ["--port", str(free_port())]
    if os.geteuid() != 0:
        data.chmod(0o555)
    else:  # root writes through mode bits: a read-only bind mount in a private namespace
        script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
        command = ["unshare", "--mount", "--", "sh", "-c", script, str(data), *command]
    return subprocess.run(
        command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=180, check=False
    )


def serve_once(data: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    port = str(free_port())
    return cli("serve", "--data-dir", data, "--port", port, *extra, env=ENV)


def test_operator_errors_are_one_line_and_a_failure(tmp_path: Path) -> None:
    bad_rules = tmp_path / "rules"
    (bad_rules / "guardrails").mkdir(parents=True)
    (bad_rules / "guardrails" / "broken.yaml").write_text("- id: x\n  conditions: [\n")
    cases = {
        "read-only": (read_only_serve(tmp_path / "ro"), "not writable"),
        "rules": (serve_once(bad_rules), "broken.yaml: not valid YAML: line 3"),
        "chroma": (
            serve_once(tmp_path / "chroma", "--chroma-url", f"http://127.0.0.1:{free_port()}"),
            "ChromaDB",
        ),
        "chroma-url": (serve_once(tmp_path / "url", "--chroma-url", "chroma:8000"), "chroma"),
    }
    for name, (done, expected) in cases.items():
        if name == "read-only" and "unshare" in done.stderr and "decigraph" not in done.stderr:
            pytest.skip(f"no private mount namespace here: {done.stderr.strip()}")
        assert done.returncode != 0, name
        assert "Traceback" not in done.stderr, (name, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, (name, done.stderr)
        assert lines[0].startswith("decigraph: "), (name, lines)
        assert expected in lines[0], (name, lines)
