"""``decigraph serve`` over a real socket: starts on the store, answers /health, stops cleanly."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from graph.store import DecisionStore, StoreOptions

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_health_and_clean_shutdown(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with DecisionStore.open(data, StoreOptions(fsync="never")) as store:
        from graph.drafts import DecisionDraft

        store.record(DecisionDraft(text="Serve the graph"), "setup")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service.cli",
            "serve",
            "--data-dir",
            str(data),
            "--port",
            str(port),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        body = None
        while time.monotonic() < deadline:
            try:
                body = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert body is not None, "server did not answer"
        assert body["status"] == "ok"
        assert body["events"] == 1
        assert body["nodes"] == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    # The lock is released and the store reopens with the same content.
    with DecisionStore.open(data, StoreOptions(fsync="never")) as again:
        assert again.seq == 1
