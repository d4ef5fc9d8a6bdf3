"""Helpers every benchmark shares: one percentile definition, timing, a real server, RSS.

Percentiles are nearest-rank everywhere (``percentile``): the p95 of 20 runs is the 19th
fastest, of 15 runs the slowest. Medians are ``statistics.median``. ``summary`` turns a list
of millisecond timings into the ``{"median_ms", "p95_ms", "runs"}`` shape the report reads.
"""

from __future__ import annotations

import math
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``q`` of the values <= it."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summary(values_ms: Sequence[float], digits: int = 3) -> dict[str, float]:
    """Median and p95 (nearest rank) of timings in milliseconds, and how many there were."""
    return {
        "median_ms": round(statistics.median(values_ms), digits),
        "p95_ms": round(percentile(values_ms, 0.95), digits),
        "runs": len(values_ms),
    }


def time_ms(fn: Callable[[Any], object], items: Sequence[Any], warmup: int = 5) -> list[float]:
    """Call ``fn`` on each item (after ``warmup`` untimed calls); each call's wall time in ms."""
    for item in items[:warmup]:
        fn(item)
    times = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        times.append((time.perf_counter() - start) * 1000.0)
    return times


# -- a real `decigraph serve` on loopback --------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``decigraph serve`` on a free loopback port with a fresh bearer token (agent ``bench``)."""

    def __init__(self, data: Path, log: Path, extra_env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(24)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DECIGRAPH_")}
        env.pop("CSTP_AUTH_TOKENS", None)
        env.update({"CSTP_AUTH_TOKENS": f"bench:{self.token}", **(extra_env or {})})
        command = [sys.executable, "-m", "service.cli", "serve", "--data-dir", str(data)]
        self.started = time.perf_counter()
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [*command, "--port", str(self.port)], cwd=ROOT, env=env, stdout=out, stderr=out
            )
        self.client = httpx.Client(
            timeout=120, headers={"Authorization": f"Bearer {self.token}"}, trust_env=False
        )

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One JSON-RPC call; the whole response object (``result`` or ``error``)."""
        body = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
        reply = self.client.post(f"{self.url}/cstp", json=body)
        reply.raise_for_status()
        data: dict[str, Any] = reply.json()
        return data

    def rpc(self, method: str, params: dict[str, Any]) -> Any:
        data = self.call(method, params)
        if "error" in data:
            raise RuntimeError(f"{method}: {data['error']}")
        return data["result"]

    def wait_answer(
        self, method: str, params: dict[str, Any], timeout: float = 900, poll: float = 0.05
    ) -> float:
        """Send ``method`` until it is answered; seconds from process start to the answer."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"decigraph serve exited with {self.proc.returncode}")
            try:
                self.rpc(method, params)
                return time.perf_counter() - self.started
            except httpx.TransportError:
                time.sleep(poll)
        raise RuntimeError(f"decigraph serve did not answer within {timeout} s")

    def memory_mb(self) -> dict[str, float]:
        return process_memory_mb(self.proc.pid)

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=300)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def process_memory_mb(pid: int) -> dict[str, float]:
    """Peak (VmHWM) and current (VmRSS) resident memory of a process, in MB."""
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return {"peak_rss_mb": fields["VmHWM"], "rss_mb": fields["VmRSS"]}


def dir_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)
