"""recordDecision over HTTP for ``bench/bench_cluster.py``: ``decigraph serve`` replicas on the
file log and on the shared PostgreSQL log, written to by one client per replica."""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_http import record_params
from bench.cluster_writers import cell
from bench.common import Server

POSTGRES = "PostgreSQL + synchronous standby"


def wait_ready(server: Server, timeout: float = 300) -> float:
    """Seconds from the server's start until ``/ready`` answers 200 (the model warm)."""
    server.wait_answer("recall", {"query": "warm up", "limit": 1})
    deadline = time.perf_counter() + timeout
    while server.client.get(f"{server.url}/ready").status_code != 200:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{server.url} not ready after {timeout} s")
        time.sleep(0.05)
    return time.perf_counter() - server.started


def http_round(servers: list[Server], rngs: list[random.Random], count: int) -> list[Any]:
    """One client per server, released together, ``count`` recordDecision calls each; per
    client: (latencies, outcomes, started, finished)."""
    barrier = threading.Barrier(len(servers))
    found: list[Any] = [None] * len(servers)

    def client(i: int) -> None:
        times: list[float] = []
        outcomes: list[str] = []
        barrier.wait()
        started = time.time()
        for _ in range(count):
            params = record_params(rngs[i])
            start = time.perf_counter()
            answer = servers[i].call("recordDecision", params)
            times.append(time.perf_counter() - start)
            outcomes.append("ok" if "result" in answer else f"error {answer['error']['code']}")
        found[i] = (times, outcomes, started, time.time())

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(servers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if any(f is None for f in found):
        raise RuntimeError("an HTTP client failed (see the server logs)")
    return found


def bench_http(pg1: str, pg3: str, tmp: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """1 replica on the file log, 1 on the database ``pg1``, 3 on ``pg3``, each with
    ``--server-threads`` torch threads, and beside them 1 replica on the file log with torch's
    default thread count (as ``bench_http`` runs it); all started at once, then written to in
    ``--rounds`` interleaved rounds (the 3 replicas' clients concurrently)."""
    threads = {"OMP_NUM_THREADS": str(args.server_threads)}
    configs: dict[str, tuple[str, list[str | None], dict[str, str]]] = {
        "file": ("file log", [None], threads),
        "pg1": (POSTGRES, [pg1], threads),
        "pg3": (POSTGRES, [pg3] * 3, threads),
        "file-default": ("file log", [None], {}),
    }
    servers: dict[str, list[Server]] = {key: [] for key in configs}
    try:
        for key, (_, urls, extra) in configs.items():
            for i, url in enumerate(urls):
                env = {"DECIGRAPH_EVENT_STORE": url} if url else {}
                name = f"http-{key}-r{i}"
                servers[key].append(Server(tmp / name, tmp / f"{name}.log", {**env, **extra}))
        for group in servers.values():
            for server in group:
                wait_ready(server)
        # Replica i of every configuration writes the same seeded decisions.
        rngs = {
            key: [random.Random(args.seed + 100 + i) for i in range(len(group))]
            for key, group in servers.items()
        }
        for key, group in servers.items():
            for server, rng in zip(group, rngs[key], strict=True):
                for _ in range(args.warmup_http):
                    server.rpc("recordDecision", record_params(rng))
        found: dict[str, list[Any]] = {key: [] for key in configs}
        for _ in range(args.rounds):
            for key, group in servers.items():
                found[key].append(http_round(group, rngs[key], args.http_writes // args.rounds))
        rows = []
        for key, group in servers.items():
            clients = [c for one in found[key] for c in one]
            times = [t for c in clients for t in c[0]]
            outcomes = Counter(o for c in clients for o in c[1])
            wall = sum(max(c[3] for c in one) - min(c[2] for c in one) for one in found[key])
            rows.append(
                {
                    "replicas": len(group),
                    "event_store": configs[key][0],
                    "torch_threads": configs[key][2].get("OMP_NUM_THREADS", "default"),
                    "writes": len(times),
                    "calls_per_s": round(len(times) / wall, 1),
                    "latency": cell(times, 2),
                    "outcomes": dict(outcomes),
                    "peak_rss_mb": [s.memory_mb()["peak_rss_mb"] for s in group],
                }
            )
            print("http", json.dumps(rows[-1]), flush=True)
        return rows
    finally:
        for group in servers.values():
            for server in group:
                server.stop()
