"""CSTP parity over a real server: what CSTP's clients' shapes, MCP and the new methods cost.

A copy of the cached seeded store (``bench/dataset.py``) is served by a real ``decigraph
serve`` on loopback (default settings: ``fsync="always"``, guardrails on, embedded ChromaDB).
Every figure is the client's wall time for one call, median and p95 nearest-rank, sequential
calls on one keep-alive connection; each row has its baseline measured beside it in the run:

- **MCP against JSON-RPC**: ``get_decision`` and ``query_decisions`` through ``/mcp`` (the
  official SDK's streamable HTTP client and one session) against ``getDecision`` and
  ``queryDecisions`` hybrid on ``/cstp`` (the same method underneath);
- **CSTP's client shapes against decigraph's**: ``recordDecision`` as CSTP's CLI sends it
  (``project_context``, a bridge with lists, reasons with strengths, a deliberation, an unknown
  key) against the same decisions in decigraph's own params (the cost of the tolerant params
  walk and the extras); reads of ``getDecision`` in both;
- **the methods CSTP has and decigraph lacked before** (calibration, drift, reason stats,
  ready, session context, compaction, breakers, tracker, evidence verification), against the
  HTTP floor ``GET /.well-known/agent.json``.

Usage: python bench/bench_cstp.py [--size 10000] [--calls 100] [--writes 60]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_http import record_params
from bench.common import Server, summary, time_ms
from bench.dataset import copy_store, ensure_store, queries

FLOOR = "GET /.well-known/agent.json"

NEW_METHODS: list[tuple[str, dict[str, Any]]] = [
    ("getCalibration", {}),
    ("checkDrift", {"thresholdBrier": 0.2, "thresholdAccuracy": 0.15}),
    ("getReasonStats", {"minReviewed": 3}),
    ("ready", {"limit": 20}),
    ("getSessionContext", {"taskDescription": "choose a cache for the API", "format": "json"}),
    ("compact", {}),
    ("getCompacted", {"limit": 50}),
    ("getWisdom", {}),
    ("listBreakers", {}),
    ("debugTracker", {"includeConsumed": True}),
    ("listGuardrails", {}),
]


def native_record(rng: random.Random) -> dict[str, Any]:
    """bench_http's seeded decision, with a PR, a reason and a bridge (what CLI records carry)."""
    return {
        **record_params(rng),
        "pr": "4121",
        "reasons": [{"type": "analysis", "text": "Measured on the staging cluster"}],
        "bridge": {"structure": "A service boundary", "function": "Isolate the failure"},
    }


def cli_record(rng: random.Random) -> dict[str, Any]:
    """The same decision as CSTP's CLI and its deliberation-aware agents send it."""
    native = native_record(rng)
    project = native.pop("project")
    native.pop("pr")
    return {
        **native,
        "project_context": {"project": project, "pr": 4121},
        "reasons": [
            {"type": "analysis", "text": "Measured on the staging cluster", "strength": 0.9}
        ],
        "bridge": {
            **native["bridge"],
            "tolerance": ["one failed zone"],
            "enforcement": ["a circuit breaker"],
            "prevention": [],
        },
        "deliberation": {"inputs": [{"id": "q-1", "text": "Queried staging"}], "steps": []},
        "mentalState": "deliberate",
        "client_build": "cstp.py 0.15",  # unknown: reported in warnings
    }


def mcp_times(url: str, token: str, ids: list[str], texts: list[str]) -> dict[str, list[float]]:
    async def run() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {"get_decision": [], "query_decisions": []}
        auth = {"Authorization": f"Bearer {token}"}
        async with (
            httpx.AsyncClient(headers=auth, timeout=120, trust_env=False) as http,
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for name, args in [("get_decision", {"id": i}) for i in ids[:10]] + [
                ("query_decisions", {"query": q, "limit": 10}) for q in texts[:10]
            ]:
                await session.call_tool(name, args)  # warm-up
            for node_id in ids:
                started = time.perf_counter()
                result = await session.call_tool("get_decision", {"id": node_id})
                out["get_decision"].append((time.perf_counter() - started) * 1000)
                assert not result.isError
            for text in texts:
                started = time.perf_counter()
                result = await session.call_tool(
                    "query_decisions", {"query": text, "limit": 10, "retrieval_mode": "hybrid"}
                )
                out["query_decisions"].append((time.perf_counter() - started) * 1000)
                assert not result.isError
        return out

    return anyio.run(run)


def run(size: int, calls: int, writes: int, seed: int, tmp: Path) -> dict[str, Any]:
    cached, build = ensure_store(size, seed)
    data = copy_store(cached, tmp / f"data-{size}")
    server = Server(data, tmp / f"serve-{size}.log")
    try:
        texts = queries(random.Random(seed + 1), calls)
        server.wait_answer("recall", {"query": texts[0], "limit": 10})
        listed = server.rpc("listDecisions", {"limit": calls})
        ids = [d["id"] for d in listed["decisions"]]
        card = f"{server.url}/.well-known/agent.json"
        rows: dict[str, Any] = {
            FLOOR: summary(time_ms(lambda _: server.client.get(card), texts), 2)
        }
        rows["getDecision /cstp"] = summary(
            time_ms(lambda i: server.rpc("getDecision", {"id": i}), ids), 2
        )
        rows["queryDecisions hybrid /cstp"] = summary(
            time_ms(
                lambda q: server.rpc(
                    "queryDecisions", {"query": q, "limit": 10, "retrievalMode": "hybrid"}
                ),
                texts,
            ),
            2,
        )
        over_mcp = mcp_times(server.url, server.token, ids, texts)
        rows["get_decision /mcp"] = summary(over_mcp["get_decision"], 2)
        rows["query_decisions /mcp"] = summary(over_mcp["query_decisions"], 2)
        rng = random.Random(seed + 2)
        native = [native_record(rng) for _ in range(writes)]
        rng = random.Random(seed + 3)
        cli = [cli_record(rng) for _ in range(writes)]
        outcomes: dict[str, dict[str, int]] = {"native": {}, "cli": {}}

        def writer(kind: str) -> Any:
            def write(params: dict[str, Any]) -> None:
                error = server.call("recordDecision", params).get("error")
                key = "ok" if error is None else f"error {error['code']}"
                outcomes[kind][key] = outcomes[kind].get(key, 0) + 1

            return write

        # Interleaved halves, so neither shape runs on a warmer or fuller store.
        half = writes // 2
        native_ms = time_ms(writer("native"), native[:half], warmup=0)
        cli_ms = time_ms(writer("cli"), cli[:half], warmup=0)
        native_ms += time_ms(writer("native"), native[half:], warmup=0)
        cli_ms += time_ms(writer("cli"), cli[half:], warmup=0)
        rows["recordDecision, decigraph's params"] = {
            **summary(native_ms, 2),
            "outcomes": outcomes["native"],
        }
        rows["recordDecision, CSTP CLI's shape"] = {
            **summary(cli_ms, 2),
            "outcomes": outcomes["cli"],
        }
        methods = {}
        for name, params in NEW_METHODS:
            methods[name] = summary(
                time_ms(lambda _, n=name, p=params: server.rpc(n, p), range(calls // 2), 3), 2
            )
        rows["new methods"] = methods
    finally:
        server.stop()
    return {"decisions": size, "build": build, "calls": calls, "writes": writes, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--writes", type=int, default=60)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=Path("bench/results/cstp.json"))
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="decigraph-cstp-") as tmp:
        result = run(args.size, args.calls, args.writes, args.seed, Path(tmp))
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print("| call | median ms | p95 ms |")
    print("|---|---|---|")
    for name, cell in result["rows"].items():
        if name == "new methods":
            for method, m in cell.items():
                print(f"| {method} | {m['median_ms']} | {m['p95_ms']} |")
        else:
            print(f"| {name} | {cell['median_ms']} | {cell['p95_ms']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
