"""The light path's own decisions: which data directory, and whether a live server holds it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli.address import serving
from service.cli.remote import UNANSWERED, RemoteError, _result, call_server, data_dir_of
from service.settings import Settings


@pytest.mark.parametrize(
    ("flag", "env"),
    [
        (None, {}),
        (None, {"DECIGRAPH_DATA_DIR": "/srv/decigraph"}),
        (None, {"decigraph_data_dir": "relative/dir"}),
        ("/from/flag", {"DECIGRAPH_DATA_DIR": "/srv/decigraph"}),
    ],
)
def test_the_data_directory_is_the_one_settings_resolve(
    monkeypatch: pytest.MonkeyPatch, flag: str | None, env: dict[str, str]
) -> None:
    for key in [k for k in os.environ if k.lower() == "decigraph_data_dir"]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    overrides = {} if flag is None else {"data_dir": flag}
    assert data_dir_of(flag) == Settings(**overrides).data_dir  # type: ignore[arg-type]


def publish(data: Path, pid: int, holder_pid: int | None = None) -> None:
    host = socket.gethostname()
    body = {"url": "http://127.0.0.1:9", "pid": pid, "host": host}
    (data / "server.json").write_text(json.dumps(body))
    (data / "LOCK").write_text(f"pid {pid if holder_pid is None else holder_pid} on {host}")


def test_only_a_live_lock_holder_that_published_its_address_is_asked(tmp_path: Path) -> None:
    assert serving(tmp_path / "missing") is None
    tmp_path.joinpath("LOCK").write_text(f"pid {os.getpid()} on {socket.gethostname()}")
    assert serving(tmp_path) is None  # locked, no address published: the heavy path says so
    publish(tmp_path, os.getpid())
    assert serving(tmp_path) == "http://127.0.0.1:9"
    publish(tmp_path, os.getpid(), holder_pid=os.getpid() + 1)
    assert serving(tmp_path) is None  # written by another process than the holder
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    publish(tmp_path, gone.pid)
    assert serving(tmp_path) is None  # a killed server: its lock is free


def test_an_unreachable_address_goes_the_heavy_way(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    publish(tmp_path, os.getpid())
    body = json.loads((tmp_path / "server.json").read_text())
    (tmp_path / "server.json").write_text(json.dumps({**body, "url": f"http://127.0.0.1:{port}"}))
    assert call_server(tmp_path, "cstp.recall", {"query": "q"}) is UNANSWERED


def test_answers_become_the_http_clients_errors() -> None:
    with pytest.raises(RemoteError, match=r"^the server refused the token \(HTTP 401\) \(code"):
        _result(401, b"{}")
    with pytest.raises(RemoteError, match=r"^HTTP 503: busy \(code -32603\)$"):
        _result(503, b"busy")
    answer = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "query: empty"}}
    with pytest.raises(RemoteError, match=r"^query: empty \(code -32602\)$"):
        _result(200, json.dumps(answer).encode())
    assert _result(200, b'{"jsonrpc": "2.0", "id": 1, "result": {"results": []}}') == {
        "results": []
    }
