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

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_serve(
    data: Path, env: dict[str, str] | None = None, timeout: float = 120, log: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Run ``decigraph serve`` on a free loopback port; return it once /health answers (its
    stdout and stderr written to ``log`` when given)."""
    port = free_port()
    command = [sys.executable, "-m", "service.cli", "serve", "--data-dir", str(data)]
    command += ["--port", str(port)]
    if log is None:
        quiet = subprocess.DEVNULL
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=quiet, stderr=quiet)
    else:
        with log.open("wb") as out:
            proc = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
            )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"decigraph serve did not answer on {url} (exit {proc.returncode})")


def stop_serve(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def test_serve_health_and_clean_shutdown(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with DecisionStore.open(data, StoreOptions(fsync="never")) as store:
        from graph.drafts import DecisionDraft

        store.record(DecisionDraft(text="Serve the graph"), "setup")
    proc, url = start_serve(data)
    try:
        body = httpx.get(f"{url}/health", timeout=2).json()
        assert body["status"] == "ok"
        assert body["events"] == 1
        assert body["nodes"] == 1
    finally:
        stop_serve(proc)
    # The lock is released and the store reopens with the same content.
    with DecisionStore.open(data, StoreOptions(fsync="never")) as again:
        assert again.seq == 1
