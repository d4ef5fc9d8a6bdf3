"""Helpers for the reliability tests: a real ``decigraph serve``, JSON-RPC clients, the CLI.

Everything here talks to the server the way an agent does: over a loopback socket with a bearer
token. ``Served`` can run the server behind a command prefix (``nsenter`` into a mount namespace
for the full-disk test) and keeps its stderr in a file for post-mortems.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_serve import free_port

ROOT = Path(__file__).resolve().parents[2]
AGENTS = {f"agent-{n}": f"token-{n}-0123456789abcdef" for n in range(4)}
ARTIFACTS = Path(os.environ.get("DECIGRAPH_TEST_ARTIFACTS", ROOT / "tests" / "artifacts"))


def server_env(**extra: str) -> dict[str, str]:
    """The environment of a server with one token per agent and durable (fsync) appends."""
    env = {**os.environ, "CSTP_AUTH_TOKENS": ",".join(f"{a}:{t}" for a, t in AGENTS.items())}
    env["DECIGRAPH_FSYNC"] = "always"
    env.update(extra)
    return env


class Served:
    """A running ``decigraph serve`` process; ``start_seconds`` is its time to answer /health."""

    def __init__(
        self,
        data: Path,
        env: dict[str, str],
        log: Path,
        prefix: Sequence[str] = (),
        preexec: Callable[[], None] | None = None,
        timeout: float = 120,
    ) -> None:
        self.data = data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [*prefix, sys.executable, "-m", "service.cli", "serve"]
        command += ["--data-dir", str(data), "--port", str(self.port)]
        started = time.monotonic()
        self.proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=preexec,  # noqa: PLW1509  (only resets a signal disposition)
        )
        # Drain stderr into a file from here (a pipe, so the server's own limits never apply).
        self._drain = threading.Thread(target=_copy, args=(self.proc, log), daemon=True)
        self._drain.start()
        self.log = log
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    self.start_seconds = time.monotonic() - started
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"decigraph serve did not start; see {log}:\n{self.log_tail()}")

    def health(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.url}/health", timeout=10).json())

    def stop(self) -> None:
        """SIGTERM: a clean shutdown (vectors flushed, snapshots written)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=120)
        self._drain.join(timeout=10)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs at all."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)
        self._drain.join(timeout=10)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _copy(proc: subprocess.Popen[bytes], log: Path) -> None:
    assert proc.stderr is not None
    with log.open("ab") as out:
        for line in proc.stderr:
            out.write(line)
            out.flush()


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = int(error["code"])
        self.message = str(error.get("message"))
        self.data = error.get("data")


class Client:
    """One agent's JSON-RPC connection (one keep-alive HTTP connection; not thread-safe)."""

    def __init__(self, url: str, agent: str = "agent-0", timeout: float = 60) -> None:
        self.url = f"{url}/cstp"
        self.agent = agent
        self.http = httpx.Client(
            timeout=timeout, headers={"Authorization": f"Bearer {AGENTS[agent]}"}
        )
        self._id = 0

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The whole response document; raises ``AssertionError`` unless HTTP 200 with JSON."""
        self._id += 1
        body = {"jsonrpc": "2.0", "method": f"cstp.{method}", "params": params or {}}
        body["id"] = self._id
        response = self.http.post(self.url, json=body)
        assert response.status_code == 200, (method, response.status_code, response.text[:500])
        document = response.json()
        assert isinstance(document, dict), document
        return document

    def ok(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The result; raises :class:`RpcError` for a JSON-RPC error."""
        document = self.call(method, params)
        if "error" in document:
            raise RpcError(document["error"])
        return dict(document["result"])

    def close(self) -> None:
        self.http.close()


def cli(
    *args: str, prefix: Sequence[str] = (), env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [*prefix, sys.executable, "-m", "service.cli", *args]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def verify(data: Path, indexes: bool = True, prefix: Sequence[str] = ()) -> dict[str, Any]:
    """``decigraph verify --json [--indexes]``; asserts it passes and returns its report."""
    args = ["verify", "--data-dir", str(data), "--json"] + (["--indexes"] if indexes else [])
    done = cli(*args, prefix=prefix)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True, report
    return dict(report)


def read_log(path: Path) -> list[dict[str, Any]]:
    """Every event line of a log, parsed (the caller checks the chain with ``verify``)."""
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


@dataclass
class LatencyBook:
    """Latencies (seconds) per method, thread-safe."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, method: str, seconds: float) -> None:
        with self.lock:
            self.samples.setdefault(method, []).append(seconds)

    def summary(self, wall: float) -> dict[str, Any]:
        per_method = {}
        everything: list[float] = []
        for method, values in sorted(self.samples.items()):
            everything += values
            per_method[method] = _stats(values, wall)
        return {"all": _stats(everything, wall), "methods": per_method}


def _stats(values: Sequence[float], wall: float) -> dict[str, float]:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "perSecond": round(len(values) / wall, 1),
        "p50Ms": round(1000 * percentile(values, 50), 1),
        "p95Ms": round(1000 * percentile(values, 95), 1),
        "p99Ms": round(1000 * percentile(values, 99), 1),
        "maxMs": round(1000 * max(values), 1),
    }


def write_artifact(name: str, document: dict[str, Any]) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return path
