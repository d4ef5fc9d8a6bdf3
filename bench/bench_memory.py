"""Memory of a served store at 10k, 100k and 300k decisions, and what 1M would need.

For each size, a data directory is served by a real ``decigraph serve`` (as
``bench/bench_http.py`` does) and measured from ``/proc/<pid>/status``:

- ``after_first_answer``: VmRSS once it answered its first ``recall`` (steady state);
- ``before_flush``: VmRSS after ``--queries`` recalls and as many hybrid ``queryDecisions``
  (which read the in-memory matrix, not ChromaDB) and the first 100 accepted writes;
- ``after_load``: VmRSS and the peak (VmHWM, everything since start) once ``--writes``
  ``recordDecision`` calls were accepted (600 by default, more than the index's flush batch of
  512: ChromaDB then applies the queued vectors and loads its HNSW index, as it does in any
  server that has taken that many writes; the guardrails refuse some writes, which are
  counted and do not count towards the 600).

Each size is served ``--runs`` times with the compact representation on (``new``) and off
(``old``: ``DECIGRAPH_COMPACT_MEMORY=0``: plain attribute dicts and the previous matrix growth),
interleaved new/old in the same run; figures are the median and p95 of the runs.

Beside it, a breakdown measured in a child process that opens the same directory stage by stage
(``--probe``), RSS after each stage plus ``sys.getsizeof`` sweeps: interpreter and imports, the
store (node bodies, topology: NetworkX adjacency and edge attributes, the rest: salience
adjacency, risk index), ChromaDB (opened and queried once, so its HNSW index is loaded), the
in-memory indexes (embedding matrix, keyword, entity, statement, facet, time), the model.

Per decision: a least-squares line through the sizes (RSS = fixed + per_decision x N); the
value at 1,000,000 decisions is an extrapolation of that line, not a measurement.

Data: a size given with ``--store SIZE=DIR`` is a copy of that seeded store (``bench/dataset.py``:
real MiniLM embeddings), as is a size whose seeded store is already in ``bench/.cache`` (never
built here). Any other size is generated here, once (kept in ``bench/.cache/memory-*``): the
same seeded log as ``bench/dataset.py`` (``fill``: same seed, clock and ids, so the same
decisions and edges) with seeded random unit vectors in place of embeddings (memory does not
depend on vector values; embedding 300k texts takes ~30 min on 2 cores). The JSON says which
for each size.

Usage: python bench/bench_memory.py [--sizes 10000 100000 300000] [--store 10000=DIR ...]
       [--runs 1] [--queries 100] [--writes 600] [--out bench/results/large.json]
"""

from __future__ import annotations

import argparse
import functools
import gc
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Server, dir_mb, percentile, process_memory_mb
from bench.dataset import copy_store, fill, fingerprint, queries, sim_clock
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
SWITCH = "DECIGRAPH_COMPACT_MEMORY"
VARIANTS = {"new": "1", "old": "0"}
MB = 1024 * 1024
ONE_MILLION = 1_000_000


class RandomEmbedder:
    """Seeded random unit vectors (a hash of the text seeds each): the synthetic stores' stand-in
    for MiniLM while they are built. The server embeds its own queries with the real model."""

    model_name = "seeded-random"
    dimension = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            row = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.stack(rows) if rows else np.zeros((0, self.dimension), dtype=np.float32)


def _memoised_statements() -> None:
    """The synthetic statements come from a small grammar (~8k distinct texts), and parsing one
    for the statement index is the slowest part of indexing it: parse each text once. Same
    keys, same index; only the build is faster."""
    from retrieval import statements

    parse = functools.lru_cache(maxsize=None)(statements.parse)  # type: ignore[attr-defined]
    keys_of: dict[int, list[str]] = {}
    statement_keys = statements.statement_keys

    def cached_keys(stance: Any) -> list[str]:
        keys = keys_of.get(id(stance))  # parse's cache keeps every stance alive: ids are stable
        if keys is None:
            keys = keys_of[id(stance)] = statement_keys(stance)
        return list(keys)

    statements.parse = parse  # type: ignore[attr-defined]
    statements.statement_keys = cached_keys


def build_synthetic(data: Path, size: int, seed: int) -> dict[str, Any]:
    """``bench/dataset.py``'s store for (size, seed), with random vectors instead of MiniLM."""
    from retrieval.index import DualIndex
    from retrieval.vector import ChromaVectorIndex

    _memoised_statements()
    started = time.perf_counter()
    options = StoreOptions(fsync="never", snapshot_every=0)
    store = DecisionStore.open(data, options, clock=sim_clock(), ids=IdSource(seed))
    fill(store, size, random.Random(seed))
    vectors = ChromaVectorIndex.persistent(data / "chroma")
    index = DualIndex.open(store, RandomEmbedder(), vectors)
    edges = store.graph.number_of_edges()
    index.close()
    store.close()
    return {
        "source": f"synthetic: bench.dataset.fill (seed {seed}), seeded random unit vectors",
        "events": size,
        "edges": edges,
        "build_s": round(time.perf_counter() - started, 1),
    }


def synthetic_store(size: int, seed: int) -> tuple[Path, dict[str, Any]]:
    """A synthetic store for (size, seed), built once in a child process (so the patched
    parser never reaches a measured process) and kept in ``bench/.cache/memory-*``; its data
    directory is only ever copied."""
    home = CACHE / f"memory-synthetic-{size}-s{seed}"
    meta_path = home / "meta.json"
    building = home.with_name(home.name + ".building")
    while not meta_path.exists() and building.exists() and _recent(building / "data"):
        time.sleep(10)  # another run is building it: wait for that build
    if not meta_path.exists():
        shutil.rmtree(home, ignore_errors=True)
        work = building
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        command = [sys.executable, __file__, "--build", str(work / "data"), "--build-size"]
        subprocess.run([*command, str(size), "--seed", str(seed)], check=True, cwd=ROOT)
        work.rename(home)
    meta: dict[str, Any] = json.loads(meta_path.read_text())
    return home / "data", meta


def _recent(data: Path, seconds: float = 600) -> bool:
    """Whether a build in ``data`` wrote anything in the last ``seconds`` (it is alive)."""
    newest = max((f.stat().st_mtime for f in data.rglob("*") if f.is_file()), default=0.0)
    return time.time() - newest < seconds


def describe_store(data: Path) -> dict[str, Any]:
    with DecisionStore.open(data, StoreOptions(read_only=True)) as store:
        return {"events": store.seq, "edges": store.graph.number_of_edges()}


# -- the served process ----------------------------------------------------------------------
def serve_once(
    template: Path, work: Path, variant: str, n_queries: int, n_writes: int, seed: int
) -> dict[str, Any]:
    from bench.bench_http import record_params

    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    copy_store(template, data)
    server = Server(data, work / f"serve-{variant}.log", {SWITCH: VARIANTS[variant]})
    try:
        texts = queries(random.Random(seed + 1), max(n_queries, 1))
        first_s = server.wait_answer("recall", {"query": texts[0], "limit": 10})
        ready_s = wait_ready(server)
        steady = server.memory_mb()
        for text in texts[:n_queries]:
            server.rpc("recall", {"query": text, "limit": 10})
            server.rpc("queryDecisions", {"query": text, "limit": 10, "retrievalMode": "hybrid"})
        outcomes: Counter[str] = Counter()
        rng = random.Random(seed + 2)
        before_flush = None
        for _ in range(4 * n_writes):
            error = server.call("recordDecision", record_params(rng)).get("error")
            outcomes["ok" if error is None else f"error {error['code']}"] += 1
            if outcomes["ok"] == min(100, n_writes) and before_flush is None:
                before_flush = server.memory_mb()
            if outcomes["ok"] >= n_writes:
                break
        loaded = server.memory_mb()
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
    return {
        "first_s": first_s,
        "ready_s": ready_s,
        "steady": steady,
        "before_flush": before_flush or loaded,
        "loaded": loaded,
        "outcomes": dict(outcomes),
    }


def wait_ready(server: Server, timeout: float = 900) -> float:
    """Poll ``GET /ready`` until the model is warm and the indexes caught up (the steady state
    is measured then, not while the model may still be loading); seconds since start."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if server.client.get(f"{server.url}/ready").status_code == 200:
            return time.perf_counter() - server.started
        time.sleep(0.2)
    raise RuntimeError(f"decigraph serve was not ready within {timeout} s")


def stats(values: list[float], digits: int = 1) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), digits),
        "p95": round(percentile(values, 0.95), digits),
    }


# -- the breakdown (a child process: python bench/bench_memory.py --probe DIR) ----------------
def _rss_mb() -> float:
    return process_memory_mb(os.getpid())["rss_mb"]


def deep_size(root: Any, seen: set[int]) -> int:
    """Bytes of ``root`` and everything it holds (containers, slotted and plain objects, numpy
    arrays), each object counted once across calls sharing ``seen``."""
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            total += sys.getsizeof(obj) + (obj.nbytes if obj.base is not None else 0)
            continue
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        else:
            if hasattr(obj, "__dict__"):
                stack.append(vars(obj))
            for slot in getattr(type(obj), "__slots__", ()):
                if hasattr(obj, slot):
                    stack.append(getattr(obj, slot))
    return total


def probe(data: Path) -> dict[str, Any]:
    """RSS after each start-up stage and the sizes of the structures, in MB."""
    out: dict[str, Any] = {"rss_mb": {}, "sizes_mb": {}}
    stages = out["rss_mb"]
    stages["interpreter"] = _rss_mb()
    import networkx  # noqa: F401

    from graph.builders import raw_adjacency
    from retrieval.embedder import MiniLMEmbedder
    from retrieval.index import DualIndex
    from retrieval.vector import ChromaVectorIndex

    stages["imports"] = _rss_mb()
    store = DecisionStore.open(data, StoreOptions(read_only=True))
    gc.collect()
    stages["store"] = _rss_mb()
    vectors = ChromaVectorIndex.persistent(data / "chroma")
    probe_vector = RandomEmbedder().embed(["probe"])[0]
    vectors.query(probe_vector, 10)  # loads the HNSW index
    stages["chroma"] = _rss_mb()
    embedder = MiniLMEmbedder(threads=1)  # as the server runs it (``--torch-threads`` 1)
    index = DualIndex.open(store, embedder, vectors)
    gc.collect()
    stages["indexes"] = _rss_mb()
    embedder.embed(["load the model and embed one sentence"])
    stages["model"] = _rss_mb()
    stages["peak"] = process_memory_mb(os.getpid())["peak_rss_mb"]

    sizes = out["sizes_mb"]
    G = store.graph
    raw = raw_adjacency(G)
    seen: set[int] = set()
    sizes["node_bodies"] = deep_size(raw.nodes, seen) / MB
    edge_attrs = 0
    for nbrs in raw.succ.values():
        for keyed in nbrs.values():
            for attrs in keyed.values():
                edge_attrs += deep_size(attrs, seen)
    sizes["edge_attrs"] = edge_attrs / MB
    sizes["adjacency_dicts"] = (deep_size(raw.succ, seen) + deep_size(raw.pred, seen)) / MB
    sizes["salience_adjacency"] = deep_size(store.adjacency, seen) / MB
    sizes["risk_index"] = deep_size(store.risk, seen) / MB
    matrix = index.matrix
    # Only the used rows: the spare capacity is zero pages never written (not resident).
    used_rows = len(matrix) * matrix.dimension * 4
    sizes["matrix"] = (used_rows + deep_size([matrix._ids, matrix._row], seen)) / MB
    for name in ("keyword", "entities", "statements", "facets", "timeline"):
        sizes[name] = deep_size(getattr(index, name), seen) / MB
    sizes["index_maps"] = (
        sum(deep_size(x, seen) for x in (index._fingerprints, index.contents, index._content_of))
        / MB
    )
    out["nodes"] = G.number_of_nodes()
    out["edges"] = G.number_of_edges()
    out["sizes_mb"] = {k: round(v, 1) for k, v in sizes.items()}
    index.close()
    store.close()
    return out


def run_probe(data: Path, variant: str) -> dict[str, Any]:
    env = {**os.environ, SWITCH: VARIANTS[variant]}
    command = [sys.executable, __file__, "--probe", str(data)]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=ROOT)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def breakdown(result: dict[str, Any]) -> dict[str, float]:
    """Stage deltas (MB) from a probe: what each part adds to the process."""
    rss = result["rss_mb"]
    sizes = result["sizes_mb"]
    store = rss["store"] - rss["imports"]
    return {
        "interpreter_and_imports": round(rss["imports"], 1),
        "store": round(store, 1),
        "  node_bodies": sizes["node_bodies"],
        "  topology (adjacency + edge attributes)": round(
            sizes["adjacency_dicts"] + sizes["edge_attrs"], 1
        ),
        "  salience adjacency + risk index": round(
            sizes["salience_adjacency"] + sizes["risk_index"], 1
        ),
        "chromadb": round(rss["chroma"] - rss["store"], 1),
        "indexes": round(rss["indexes"] - rss["chroma"], 1),
        "  matrix": sizes["matrix"],
        "  keyword + entities + statements + facets + timeline + maps": round(
            sum(sizes[k] for k in ("keyword", "entities", "statements", "facets", "timeline"))
            + sizes["index_maps"],
            1,
        ),
        "model": round(rss["model"] - rss["indexes"], 1),
    }


def fit(points: list[tuple[int, float]]) -> dict[str, float]:
    """Least-squares ``mb = fixed + per_decision * n``; per decision in KB, 1M extrapolated."""
    xs = np.array([p[0] for p in points], dtype=np.float64)
    ys = np.array([p[1] for p in points], dtype=np.float64)
    slope, intercept = np.polyfit(xs, ys, 1) if len(points) > 1 else (0.0, ys[0])
    return {
        "per_decision_kb": round(float(slope) * 1024, 2),
        "fixed_mb": round(float(intercept), 1),
        "at_1m_mb_extrapolated": round(float(intercept + slope * ONE_MILLION), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 300_000])
    parser.add_argument("--store", action="append", default=[], help="SIZE=DATA_DIR (copied)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--writes", type=int, default=600)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/large.json")
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--build-size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe is not None:
        print(json.dumps(probe(args.probe)))
        return
    if args.build is not None:
        meta = build_synthetic(args.build, args.build_size, args.seed)
        (args.build.parent / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        return
    given = {int(k): Path(v) for k, v in (item.split("=", 1) for item in args.store)}
    report: dict[str, Any] = {
        "sizes": args.sizes,
        "runs": args.runs,
        "queries": args.queries,
        "writes": args.writes,
        "switch": f"{SWITCH}=0 is 'old' (plain attribute dicts, previous matrix growth)",
        "load_average_start": list(os.getloadavg()),
        "target_peak_rss_mb_at_100k": 1200,
        "per_size": [],
    }
    from bench.bench_http import model_only_rss

    with tempfile.TemporaryDirectory(prefix="decigraph-memory-") as tmp:
        root = Path(tmp)
        for size in args.sizes:
            template = root / f"template-{size}"
            entry: dict[str, Any]
            if size in given:
                copy_store(given[size], template)
                (template / "LOCK").unlink(missing_ok=True)
                entry = {"source": f"seeded store, real MiniLM embeddings ({given[size]})"}
                entry.update(describe_store(template))
            elif (
                seeded := CACHE / f"store-{size}-s{args.seed}-{fingerprint(size, args.seed)}"
            ).exists():
                copy_store(seeded / "data", template)  # bench/dataset.py's, already built
                entry = {"source": "seeded store, real MiniLM embeddings (bench/.cache)"}
                entry.update(describe_store(template))
            else:
                cached, entry = synthetic_store(size, args.seed)
                copy_store(cached, template)
            entry = {"decisions": size, **entry, "data_mb": dir_mb(template)}
            print(size, json.dumps(entry), flush=True)
            runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
            for _ in range(args.runs):
                for variant in VARIANTS:  # interleaved: new, old, new, old...
                    run = serve_once(
                        template, root / "run", variant, args.queries, args.writes, args.seed
                    )
                    runs[variant].append(run)
                    print(size, variant, json.dumps(run), flush=True)
            entry["served"] = {
                variant: {
                    "start_to_first_answer_s": stats([r["first_s"] for r in rs], 2),
                    "start_to_ready_s": stats([r["ready_s"] for r in rs], 2),
                    "after_first_answer_rss_mb": stats([r["steady"]["rss_mb"] for r in rs]),
                    "before_flush_rss_mb": stats([r["before_flush"]["rss_mb"] for r in rs]),
                    "after_load_rss_mb": stats([r["loaded"]["rss_mb"] for r in rs]),
                    "peak_rss_mb": stats([r["loaded"]["peak_rss_mb"] for r in rs]),
                    "write_outcomes": rs[-1]["outcomes"],
                    "runs": len(rs),
                }
                for variant, rs in runs.items()
            }
            entry["probe"] = {}
            entry["breakdown_mb"] = {}
            for variant in VARIANTS:
                result = run_probe(template, variant)
                entry["probe"][variant] = result
                entry["breakdown_mb"][variant] = breakdown(result)
                print(size, variant, json.dumps(entry["breakdown_mb"][variant]), flush=True)
            report["per_size"].append(entry)
            shutil.rmtree(template, ignore_errors=True)
            summarise(report, args.out)  # after each size: a cut-short run keeps what it measured
    report["model_only_process"] = model_only_rss()
    summarise(report, args.out)
    print(json.dumps(report["per_decision"], indent=2))


def summarise(report: dict[str, Any], out: Path) -> None:
    """Fit the per-decision lines over the sizes measured so far and write the report."""
    per: dict[str, Any] = {}
    for variant in VARIANTS:
        served = [(e["decisions"], e["served"][variant]) for e in report["per_size"]]
        per[variant] = {
            "ready_rss": fit([(n, s["after_first_answer_rss_mb"]["median"]) for n, s in served]),
            "after_load_rss": fit([(n, s["after_load_rss_mb"]["median"]) for n, s in served]),
            "peak_rss": fit([(n, s["peak_rss_mb"]["median"]) for n, s in served]),
        }
        parts: dict[str, dict[str, float]] = {}
        for key in report["per_size"][0]["breakdown_mb"][variant]:
            points = [(e["decisions"], e["breakdown_mb"][variant][key]) for e in report["per_size"]]
            parts[key.strip()] = fit(points)
        per[variant]["parts"] = parts
    report["per_decision"] = per
    report["extrapolation"] = (
        "at_1m_mb_extrapolated: the least-squares line through the measured sizes, evaluated at "
        "1,000,000 decisions; an extrapolation, not a measurement"
    )
    report["load_average_end"] = list(os.getloadavg())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
