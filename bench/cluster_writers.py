"""The writer processes of ``bench/bench_cluster.py``: each opens a replica (or the file log),
warms up, waits at a barrier with the others, writes seeded decisions and reports every
write's latency, split into the event store's stages (:class:`StageTimer`)."""

from __future__ import annotations

import multiprocessing as mp
import queue
import random
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import percentile
from bench.dataset import draft_for
from graph.store import DecisionStore, StoreOptions

ACTOR = "bench"


# -- timing ------------------------------------------------------------------------------


def cell(values_s: list[float], digits: int = 3) -> dict[str, float]:
    """Median, p95 (nearest rank) and max of timings in seconds, as milliseconds."""
    ms = [v * 1e3 for v in values_s]
    return {
        "median_ms": round(statistics.median(ms), digits),
        "p95_ms": round(percentile(ms, 0.95), digits),
        "max_ms": round(max(ms), digits),
        "runs": len(ms),
    }


class StageTimer:
    """Times the event store's calls inside each write (wrapping them on this instance only):
    ``begin`` (lock the head), ``_replay_tail`` (apply other replicas' events), ``append``
    (inserts + COMMIT, or the file's write + fdatasync) and ``_commit`` (the COMMIT alone).
    ``acked`` holds (seq, time.time()) as each COMMIT returns."""

    def __init__(self, store: DecisionStore) -> None:
        self.current: dict[str, float] = {}
        self.acked: list[tuple[int, float]] = []
        names = ["begin", "append", "_commit"] if store.log.shared else ["append"]
        for name in names:
            self._wrap(store.log, name)
        if store.log.shared:
            self._wrap(store, "_replay_tail")

    def _wrap(self, owner: object, name: str) -> None:
        inner: Callable[..., Any] = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.current[name] = self.current.get(name, 0.0) + time.perf_counter() - start
                if name == "_commit":
                    self.acked.append((args[1].seq, time.time()))

        setattr(owner, name, timed)

    def take(self) -> dict[str, float]:
        taken, self.current = self.current, {}
        return taken

    def reset(self) -> None:
        self.current, self.acked = {}, []


def stages_of(total: float, raw: dict[str, float], shared: bool) -> dict[str, float]:
    """One write's time by stage (seconds); the stages add up to ``total``."""
    if not shared:
        append = raw.get("append", 0.0)
        return {"append + fdatasync": append, "build, validate, apply": total - append}
    commit = raw.get("_commit", 0.0)
    parts = {
        "lock the head (BEGIN, SELECT ... FOR UPDATE)": raw.get("begin", 0.0),
        "catch up (other replicas' events)": raw.get("_replay_tail", 0.0),
        "INSERT event, UPDATE head, NOTIFY": raw.get("append", 0.0) - commit,
        "COMMIT": commit,
    }
    parts["build, validate, apply"] = total - sum(parts.values())
    return parts


# -- writer processes ----------------------------------------------------------------------------


def writer(spec: dict[str, Any], barrier: Any, out: Any) -> None:
    """A writer process: open a replica, warm up, wait for the others, write, report."""
    try:
        out.put(write_timed(spec, barrier))
    except BaseException:
        barrier.abort()
        out.put({"writer": spec["writer"], "error": traceback.format_exc()})


def write_timed(spec: dict[str, Any], barrier: Any) -> dict[str, Any]:
    url = spec["url"]
    options = StoreOptions(event_store=url) if url else StoreOptions(fsync="always")
    store = DecisionStore.open(spec["data"], options)
    try:
        timer = StageTimer(store)
        rng = random.Random(spec["seed"])
        drafts = [draft_for(rng) for _ in range(spec["warmup"] + spec["count"])]
        for draft in drafts[: spec["warmup"]]:
            store.record(draft, ACTOR)
        barrier.wait(timeout=600)
        timer.reset()
        latencies: list[float] = []
        stages: list[dict[str, float]] = []
        interval, due = spec["interval"], time.perf_counter()
        started = time.time()
        for draft in drafts[spec["warmup"] :]:
            if interval:
                due += interval
                time.sleep(max(0.0, due - time.perf_counter()))
            start = time.perf_counter()
            store.record(draft, ACTOR)
            elapsed = time.perf_counter() - start
            latencies.append(elapsed)
            stages.append(stages_of(elapsed, timer.take(), store.log.shared))
        finished = time.time()
        texts = [len(d.text) + len(d.context or "") for d in drafts[spec["warmup"] :]]
        return {
            "writer": spec["writer"],
            "latencies": latencies,
            "stages": stages,
            "acked": timer.acked,
            "started": started,
            "finished": finished,
            "seq": store.seq,
            "chars": statistics.mean(texts),
        }
    finally:
        store.close()


def run_writers(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run one writer process per spec, released together; their reports, by writer."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(specs))
    out = ctx.Queue()
    procs = [ctx.Process(target=writer, args=(spec, barrier, out)) for spec in specs]
    for proc in procs:
        proc.start()
    results: list[dict[str, Any]] = []
    while len(results) < len(specs):
        try:
            results.append(out.get(timeout=5))
        except queue.Empty:
            if all(not p.is_alive() for p in procs) and out.empty():
                raise RuntimeError("a writer process died without a report") from None
    for proc in procs:
        proc.join(timeout=120)
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        raise RuntimeError("writer failed:\n" + errors[0])
    return sorted(results, key=lambda r: r["writer"])


def write_summary(name: str, rounds: list[list[dict[str, Any]]], log_mb: float) -> dict[str, Any]:
    """One configuration over its rounds (each round: one report per writer, released
    together): latency of every write, events over the summed wall time of the rounds."""
    results = [r for one in rounds for r in one]
    latencies = [x for r in results for x in r["latencies"]]
    writes = [s for r in results for s in r["stages"]]
    wall = sum(max(r["finished"] for r in one) - min(r["started"] for r in one) for one in rounds)
    writers = len(rounds[0])
    per_writer = [
        sum(len(r["latencies"]) for r in results if r["writer"] == w)
        / sum(r["finished"] - r["started"] for r in results if r["writer"] == w)
        for w in range(writers)
    ]
    stages = {
        key: {
            "mean_ms": round(statistics.mean(s[key] for s in writes) * 1e3, 3),
            "median_ms": round(statistics.median(s[key] for s in writes) * 1e3, 3),
        }
        for key in writes[0]
    }
    return {
        "config": name,
        "writers": writers,
        "rounds": len(rounds),
        "events": len(latencies),
        "wall_s": round(wall, 2),
        "events_per_s": round(len(latencies) / wall, 1),
        "per_writer_events_per_s": [round(x, 1) for x in per_writer],
        "latency": cell(latencies),
        "stages": stages,
        "log_mb": log_mb,
        "mean_chars": round(statistics.mean(r["chars"] for r in results)),
    }
