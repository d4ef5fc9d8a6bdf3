"""History: ``asOf`` reads (the graph replayed to a past seq), time resolution and decision
histories, at 10k and 100k events.

On a copy of the cached seeded log (``bench_cluster.ensure_log``: one record event per
decision, ~2.2 edges each, a snapshot at the head) per size:

- **history index**: the first question that needs it reads the whole log once (event times
  and each node's events); after that it follows the store by listener.
- **asOf, no checkpoint** (``--cold`` points): a past graph replayed from the first event, as a
  store that never kept a snapshot would (the worst case; a server keeps its periodic
  snapshots as checkpoints, so this happens only on stores written without them).
- **asOf, checkpoints every 5,000 events** (``--points`` random points, memory cache off):
  load the nearest checkpoint, replay the rest; what a server answers once its snapshots
  (every 10k) and earlier questions left checkpoints.
- **asOf getGraph depth 2** at a past seq (the graph, the walk and the salience of that graph)
  cold (checkpoint + replay), and warm (the past graph cached: the explorer's slider revisiting
  a point), beside the **live getGraph depth 2** (the baseline: the store as it is now, salience
  cached per seq).
- **getDecisionHistory** (the use case, on the built index) for random decisions.

Usage: python bench/bench_history.py [--sizes 10000 100000] [--points 20] [--cold 3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_cluster import ensure_log
from bench.common import summary
from graph.algorithms.traversal import get_graph
from graph.enums import DECISION_EDGE_TYPES, Direction
from graph.history import HistoryIndex
from graph.snapshot import SnapshotHeader, checkpoint_path, write_snapshot
from graph.state import GraphState
from graph.store import DecisionStore, StoreOptions
from graph.timetravel import PastStates
from service.usecases.history import StoreHistory
from service.usecases.timeline import decision_history

MEASURE_RSS = """
import gc, os, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from graph.store import DecisionStore, StoreOptions
from graph.timetravel import PastStates

def rss():
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6

options = StoreOptions(read_only=True)
with DecisionStore.open({data!r}, options) as store:
    gc.collect()
    before = rss()
    held = PastStates(store, every=5000, cache_size=1).at({seq})
    gc.collect()
    print(round(rss() - before, 1))
"""


def past_graph_rss(data: Path, seq: int) -> float:
    """RSS growth (MB) of holding one past graph, in a fresh process."""
    root = str(Path(__file__).resolve().parent.parent)
    code = MEASURE_RSS.format(root=root, data=str(data), seq=seq)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1e3, value


def make_checkpoints(store: DecisionStore, every: int) -> float:
    """One pass over the log writing a checkpoint at every multiple of ``every`` (setup)."""
    started = time.perf_counter()
    state = GraphState()
    for event in store.read_events(1, store.seq):
        state.apply(event)
        if event.seq % every == 0:
            header = SnapshotHeader(state.seq, 0, state.last_hash, "")
            write_snapshot(checkpoint_path(store.data_dir, state.seq), state.graph, header)
    return time.perf_counter() - started


def neighbourhood(graph_view: Any, node_id: str) -> int:
    sub = get_graph(graph_view.graph, node_id, 2, DECISION_EDGE_TYPES, Direction.BOTH)
    graph_view.salience()
    return len(sub.nodes)


def run_size(size: int, seed: int, points: int, cold: int, work: Path) -> dict[str, Any]:
    source, meta = ensure_log(size, seed)
    data = work / f"data-{size}"
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(source, data, ignore=shutil.ignore_patterns("LOCK"))
    rng = random.Random(seed)
    out: dict[str, Any] = {"events": meta["events"], "log_mb": meta.get("log_mb")}
    options = StoreOptions(fsync="never", snapshot_every=0, keep_checkpoints=False)
    with DecisionStore.open(data, options) as store:
        head = store.seq
        ids = sorted(store.graph.nodes)
        index = HistoryIndex(store)
        out["history_index_build_ms"], _ = timed(index.ensure)

        # asOf with no checkpoint: replayed from the first event.
        past = PastStates(store, every=10**9, cache_size=0)
        cold_ms = []
        for _ in range(cold):
            seq = rng.randrange(head // 4, head)
            ms, _ = timed(lambda seq=seq: past.at(seq))
            cold_ms.append(ms)
        out["asof_no_checkpoint_ms"] = summary(cold_ms)

        # Checkpoints every 5,000 events, as a server's snapshots and earlier questions leave.
        out["checkpoint_pass_s"] = round(make_checkpoints(store, 5000), 2)
        past = PastStates(store, every=5000, cache_size=0)
        warm_ms, replayed = [], []
        for _ in range(points):
            seq = rng.randrange(1, head)
            ms, _ = timed(lambda seq=seq: past.at(seq))
            warm_ms.append(ms)
            replayed.append(past.last_build["replayed"])
        out["asof_checkpointed_ms"] = summary(warm_ms)
        out["asof_checkpointed_replayed_median"] = statistics.median(replayed)

        # getGraph depth 2 as of a past seq: cold (checkpoint + replay + salience), then cached.
        cached = PastStates(store, every=5000, cache_size=2)
        getgraph_cold, getgraph_warm, live = [], [], []
        for _ in range(max(3, points // 4)):
            seq = rng.randrange(head // 2, head)
            # A decision recorded before that point (each event of this log records one).
            node = store.read_events(rng.randrange(1, seq), seq, 1)[0].payload["node"]["id"]
            cached.clear()
            ms, _ = timed(lambda seq=seq, node=node: neighbourhood(cached.at(seq), node))
            getgraph_cold.append(ms)
            for _ in range(5):
                ms, _ = timed(lambda seq=seq, node=node: neighbourhood(cached.at(seq), node))
                getgraph_warm.append(ms)
            with store.lock:
                store.salience()  # the live store caches it per seq: warm, as a server is
                for _ in range(5):
                    ms, _ = timed(lambda node=node: neighbourhood(store, node))
                    live.append(ms)
        out["asof_getgraph_cold_ms"] = summary(getgraph_cold)
        out["asof_getgraph_cached_ms"] = summary(getgraph_warm)
        out["live_getgraph_ms"] = summary(live)

        # What one cached past graph costs in memory: RSS growth in a fresh process that opens
        # the store, then builds the graph near the head (from the checkpoints above).
        out["past_graph_rss_mb"] = past_graph_rss(data, head - 1)

        # getDecisionHistory on the built index.
        history = StoreHistory(store, index, cached)
        hist_ms = []
        for node in rng.sample(ids, min(200, len(ids))):
            ms, _ = timed(lambda node=node: decision_history(history, node))
            hist_ms.append(ms)
        out["decision_history_ms"] = summary(hist_ms)
        checkpoint_bytes = sum(p.stat().st_size for p in (data / "history").glob("*.snap"))
        out["checkpoints_mb"] = round(checkpoint_bytes / 1e6, 1)
    shutil.rmtree(data, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {"sizes": {}}
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        for size in args.sizes:
            results["sizes"][str(size)] = run_size(
                size, args.seed, args.points, args.cold, Path(tmp)
            )
            print(json.dumps({size: results["sizes"][str(size)]}, indent=1), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
