"""Event-log benchmark: append rate, full replay and snapshot + tail start-up.

Usage: python bench/bench_graph.py [--events 100000] [--fsync-events 2000] [--seed 7]

Reports median and p95 per-append latency for both fsync policies, the time to replay the
whole log into the graph, the time to start from a snapshot plus a tail, and the snapshot cost,
with the data size. Results go to stdout (markdown) and bench/results/graph.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import percentile
from bench.synthetic import decision_spec, edge_type, skewed_target
from graph.drafts import DecisionDraft
from graph.errors import DecigraphError
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions


def fill(store: DecisionStore, events: int, rng: random.Random) -> list[float]:
    """Write ``events`` events (60% records, 40% links); return per-event latencies (s)."""
    ids: list[str] = []
    latencies: list[float] = []
    while store.seq < events:
        start = time.perf_counter()
        if len(ids) < 2 or rng.random() < 0.6:
            spec = decision_spec(rng)
            draft = DecisionDraft(
                text=spec.text,
                category=spec.category,
                stakes=spec.stakes,  # type: ignore[arg-type]
                confidence=spec.confidence,
                tags=spec.tags,
                project=spec.project,
            )
            ids.append(store.record(draft, "bench").id)
        else:
            source = len(ids) - 1 - rng.randrange(min(len(ids) - 1, 50))
            target = skewed_target(rng, source)
            try:
                store.link(ids[source], ids[target], edge_type(rng), "bench")
            except DecigraphError:
                continue  # a would-be cycle or self-loop: rejected, not counted
        latencies.append(time.perf_counter() - start)
    return latencies


def timed(fn: object, runs: int = 3) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        store = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
        store.close()
    return statistics.median(times), max(times)


def render(results: dict[str, Any], events: int) -> str:
    fa, fn = results["fsync_always"], results["fsync_never"]
    fr, sp = results["full_replay_s"], results["snapshot_plus_tail_s"]
    rows = [
        f"## Event log ({events} events -> {results['graph']})",
        "",
        "| measure | median | p95 / max | rate |",
        "|---|---|---|---|",
        f"| append, fsync=always ({fa['events']} events) | {fa['median_ms']:.2f} ms "
        f"| {fa['p95_ms']:.2f} ms | {fa['events_per_s']:.0f} ev/s |",
        f"| append, fsync=never | {fn['median_ms']:.3f} ms | {fn['p95_ms']:.3f} ms "
        f"| {fn['events_per_s']:.0f} ev/s |",
        f"| open: full replay of {events} events | {fr['median']:.2f} s | {fr['max']:.2f} s | |",
        f"| open: snapshot + {sp['tail_events']}-event tail | {sp['median']:.2f} s "
        f"| {sp['max']:.2f} s | |",
        f"| write snapshot | {results['snapshot_write_s']:.2f} s | | |",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--fsync-events", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("bench/results/graph.json"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results: dict[str, Any] = {"events": args.events, "seed": args.seed}
    root = Path(tempfile.mkdtemp(prefix="decigraph-bench-"))
    try:
        synced = DecisionStore.open(root / "fsync", StoreOptions(fsync="always"), ids=IdSource(1))
        lat = fill(synced, args.fsync_events, rng)
        synced.close()
        results["fsync_always"] = {
            "events": len(lat),
            "median_ms": statistics.median(lat) * 1e3,
            "p95_ms": percentile(lat, 0.95) * 1e3,
            "events_per_s": len(lat) / sum(lat),
        }

        data = root / "big"
        opts = StoreOptions(fsync="never", snapshot_every=0)
        store = DecisionStore.open(data, opts, ids=IdSource(2))
        start = time.perf_counter()
        lat = fill(store, args.events, rng)
        elapsed = time.perf_counter() - start
        nodes, edges = store.graph.number_of_nodes(), store.graph.number_of_edges()
        results["fsync_never"] = {
            "events": len(lat),
            "median_ms": statistics.median(lat) * 1e3,
            "p95_ms": percentile(lat, 0.95) * 1e3,
            "events_per_s": len(lat) / elapsed,
        }
        store._writer.close()  # type: ignore[union-attr]  # leave no snapshot behind
        store._writer = None
        store._dir_lock.release()
        log_mb = (data / "events.jsonl").stat().st_size / 1e6

        replay_opts = StoreOptions(fsync="never", snapshot_every=0, use_snapshot=False)
        full_med, full_max = timed(lambda: DecisionStore.open(data, replay_opts))
        snap_store = DecisionStore.open(data, opts)
        start = time.perf_counter()
        snap_store.write_snapshot()
        snapshot_write = time.perf_counter() - start
        tail = fill(snap_store, args.events + 1_000, rng)  # a 1,000-event tail after it
        snap_store._writer.close()  # type: ignore[union-attr]
        snap_store._writer = None
        snap_store._dir_lock.release()
        snap_med, snap_max = timed(lambda: DecisionStore.open(data, opts))
        results.update(
            graph={"nodes": nodes, "edges": edges, "log_mb": round(log_mb, 1)},
            full_replay_s={"median": full_med, "max": full_max},
            snapshot_write_s=snapshot_write,
            snapshot_plus_tail_s={"median": snap_med, "max": snap_max, "tail_events": len(tail)},
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(render(results, args.events))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
