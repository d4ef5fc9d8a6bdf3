"""The change feed: ``GET /events`` (server-sent events) from a real ``decigraph serve``.

One server on loopback (``bench.common.Server``: real model, embedded ChromaDB, bearer token,
``DECIGRAPH_FSYNC=--fsync``, default ``always`` as in production), its store filled beforehand
with ``--backlog`` events (``--decisions`` decisions, then a ``depends_on`` edge between two of
them linked and unlinked in turn: events that embed nothing, so the figures are the feed's and
the log's, not the model's). Clients are ``httpx`` streams parsed in threads of this process.

- **Backlog replay** (``--runs`` times): one client asks for ``after=0`` and reads every
  event of the log; events/s from the request to the last event. Beside it: the same log read
  by ``cstp.listEvents`` pages of 1,000 (events/s).
- **Live** (1 client, then ``--clients`` concurrently): the clients connect at the head, then a
  writer appends ``--live`` events back to back (link/unlink in JSON-RPC batches of
  ``--batch``). Per configuration: the writer's rate, the events/s each client received
  (events over the span from the first write to its last event), and the end-to-end latency of
  every event at every client, from the event's commit stamp (its ``ts``, stamped by the server
  as it commits, same machine clock) to the client parsing it: median and p95 (nearest rank).
  Every client must receive every event once, in seq order, or the run fails.

Usage: python bench/bench_feed.py [--backlog 10000] [--live 3000] [--clients 4] [--batch 20]
       [--runs 3] [--fsync always] [--out bench/results/feed.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import orjson

from bench.common import Server, percentile
from graph.drafts import DecisionDraft
from graph.store import DecisionStore, StoreOptions
from tests.support.sse import headers, messages


def fill(data: Path, decisions: int, events: int) -> tuple[str, str]:
    """A store of ``events`` events; the two decisions the churn links (source, target)."""
    with DecisionStore.open(data, StoreOptions(fsync="never", snapshot_every=0)) as store:
        ids = [
            store.record(DecisionDraft(text=f"Decision {n} about subsystem {n}"), "bench").id
            for n in range(decisions)
        ]
        source, target = ids[1], ids[0]
        linked = False
        while store.seq < events:
            if linked:
                store.unlink(source, target, "bench")
            else:
                store.link(source, target, "depends_on", "bench")
            linked = not linked
        if linked:  # the live runs start with a link
            store.unlink(source, target, "bench")
        return source, target


class Client(threading.Thread):
    """Reads ``GET /events?after=`` until it has ``count`` events; keeps (seq, latency s)."""

    def __init__(self, server: Server, after: int, count: int) -> None:
        super().__init__(daemon=True)
        self.url, self.token = server.url, server.token
        self.after, self.count = after, count
        self.received: list[tuple[int, float]] = []
        self.opened = threading.Event()
        self.first_byte = 0.0
        self.last = 0.0
        self.error: str | None = None

    def run(self) -> None:
        timeout = httpx.Timeout(30.0, read=300.0)
        try:
            with (
                httpx.Client(timeout=timeout, trust_env=False) as client,
                client.stream(
                    "GET",
                    f"{self.url}/events",
                    params={"after": self.after},
                    headers=headers(self.token),
                ) as response,
            ):
                self.opened.set()
                for message in messages(response.iter_lines()):
                    if message.id is None:
                        continue
                    now = time.time()
                    event = orjson.loads(message.data)
                    committed = datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))
                    self.received.append((int(event["seq"]), now - committed.timestamp()))
                    if len(self.received) >= self.count:
                        break
        except Exception as exc:  # reported in the result; the run then fails
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.last = time.perf_counter()
            self.opened.set()

    def check(self, first: int) -> None:
        seqs = [s for s, _ in self.received]
        if self.error or seqs != list(range(first, first + self.count)):
            raise SystemExit(f"a client missed events: {self.error or seqs[:5]}...")


def churn(server: Server, source: str, target: str, count: int, batch: int) -> float:
    """``count`` link/unlink events back to back; seconds it took."""
    edge = {"sourceId": source, "targetId": target}
    started = time.perf_counter()
    done = 0
    while done < count:
        size = min(batch, count - done)
        body = [
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "cstp.unlinkDecisions" if (done + n) % 2 else "cstp.linkDecisions",
                "params": edge if (done + n) % 2 else {**edge, "edgeType": "depends_on"},
            }
            for n in range(size)
        ]
        answers = server.client.post(f"{server.url}/cstp", json=body).json()
        if any("error" in a for a in answers):
            raise SystemExit(f"a write failed: {answers[0]}")
        done += size
    return time.perf_counter() - started


def head(server: Server) -> int:
    return int(server.rpc("listEvents", {"order": "desc", "limit": 1})["head"])


def bench_backlog(server: Server, runs: int) -> dict[str, Any]:
    total = head(server)
    rates = []
    for _ in range(runs):
        client = Client(server, 0, total)
        started = time.perf_counter()
        client.start()
        client.join()
        client.check(1)
        rates.append(total / (client.last - started))
    pages = []
    for _ in range(runs):
        started, after = time.perf_counter(), 0
        while after < total:
            after = server.rpc("listEvents", {"after": after, "limit": 1000})["nextAfter"]
        pages.append(total / (time.perf_counter() - started))
    return {
        "events": total,
        "sse_events_per_s": {
            "median": round(statistics.median(rates)),
            "runs": [round(r) for r in rates],
        },
        "list_events_per_s": {
            "median": round(statistics.median(pages)),
            "runs": [round(r) for r in pages],
        },
    }


def bench_live(server: Server, edge: tuple[str, str], clients: int, args: Any) -> dict[str, Any]:
    start = head(server)
    readers = [Client(server, start, args.live) for _ in range(clients)]
    for reader in readers:
        reader.start()
        reader.opened.wait(30)
    time.sleep(0.5)  # every stream is open and waiting at the head
    began = time.perf_counter()
    wrote_s = churn(server, *edge, args.live, args.batch)
    for reader in readers:
        reader.join(300)
        reader.check(start + 1)
    latencies = [lat * 1000 for reader in readers for _, lat in reader.received]
    per_client = [args.live / (reader.last - began) for reader in readers]
    return {
        "clients": clients,
        "events": args.live,
        "writer_events_per_s": round(args.live / wrote_s),
        "per_client_events_per_s": round(statistics.median(per_client)),
        "delivered_events_per_s": round(sum(per_client)),
        "latency_ms": {
            "median": round(statistics.median(latencies), 2),
            "p95": round(percentile(latencies, 0.95), 2),
            "max": round(max(latencies), 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backlog", type=int, default=10_000, help="events in the log at start")
    parser.add_argument("--decisions", type=int, default=100)
    parser.add_argument("--live", type=int, default=3_000, help="events written per live run")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (after 1)")
    parser.add_argument("--batch", type=int, default=20, help="writes per JSON-RPC batch")
    parser.add_argument("--runs", type=int, default=3, help="backlog replays")
    parser.add_argument("--fsync", choices=["always", "never"], default="always")
    parser.add_argument("--out", type=Path, default=Path("bench/results/feed.json"))
    args = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="decigraph-feed-") as work:
        data = Path(work) / "data"
        edge = fill(data, args.decisions, args.backlog)
        server = Server(data, Path(work) / "serve.log", {"DECIGRAPH_FSYNC": args.fsync})
        try:
            startup_s = server.wait_answer("getStats", {})
            report: dict[str, Any] = {
                "fsync": args.fsync,
                "batch": args.batch,
                "server_start_s": round(startup_s, 1),
                "backlog": bench_backlog(server, args.runs),
                "live": [bench_live(server, edge, n, args) for n in sorted({1, args.clients})],
            }
        finally:
            server.stop()
    report["wall_s"] = round(time.perf_counter() - began, 1)
    print(json.dumps(report, indent=2), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
