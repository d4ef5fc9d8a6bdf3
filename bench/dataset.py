"""The seeded benchmark stores (N synthetic decisions with indexes), built once and cached.

A store is a complete ``decigraph serve`` data directory: ``events.jsonl`` written through
``DecisionStore.record`` (seeded ids, a simulated clock, so the log is the same for the same
seed), its snapshot, the embedded ChromaDB (collection ``decigraph``, filled by the indexes'
normal catch-up path with real MiniLM embeddings) and the index snapshot written by a clean
``close()``. Building 100,000 decisions is embedding-bound (~10 minutes on 2 cores).

It lives in ``bench/.cache/store-<size>-s<seed>-<fingerprint>/data`` and is reused while the
fingerprint matches: size, seed, this file, ``bench/synthetic.py``, the code that decides what
is stored (``graph/`` and ``retrieval/``, except the query-only modules in ``QUERY_ONLY``) and
the versions of chromadb, torch and sentence-transformers. Benchmarks never write to it: they
copy it (``copy_store``) and work on the copy.

``DECIGRAPH_BENCH_STORES="100000=DIR,..."`` (``run_all.py --pin``) uses a store built earlier
instead, ``DIR`` being a ``store-*`` cache directory (its ``meta.json`` and ``data/``): for a
change that cannot alter what is stored (memory layout, a query path) when rebuilding 100k
would cost the run 10-20 minutes. The build record then says ``pinned`` and whether the
fingerprint differs from the current code's.

Usage: python bench/dataset.py --size 100000 [--seed 11] [--rebuild]  (prints the path)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, dir_mb
from bench.synthetic import PURPOSES, SYSTEMS, decision_spec, edge_type, skewed_target
from graph.drafts import DecisionDraft, EdgeDraft
from graph.errors import DecigraphError
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions

CACHE = ROOT / "bench" / ".cache"
QUERY_ONLY = {"recall.py", "query.py", "planner.py", "intents.py", "timeexpr.py", "filters.py"}
TEAMS = ["payments", "search", "infra", "growth", "identity", "data-platform", "mobile", "sre"]
DRIVERS = [
    "after the March outage",
    "ahead of the SOC 2 audit",
    "to unblock the EU launch",
    "following the cost review",
    "as requested by the security team",
    "to cut on-call pages",
]


def sim_clock(start: datetime = datetime(2025, 1, 1, tzinfo=UTC), step_s: float = 90.0) -> Any:
    """A clock that advances ``step_s`` per reading: the same calls give the same timestamps."""
    state = [start]

    def now() -> datetime:
        state[0] += timedelta(seconds=step_s)
        return state[0]

    return now


def draft_for(rng: random.Random, node_id: str | None = None) -> DecisionDraft:
    """One synthetic decision: statement, owner/ticket context, category, stakes, tags, project."""
    spec = decision_spec(rng)
    context = (
        f"Owner: {rng.choice(TEAMS)}, ticket {spec.project.upper()}-{rng.randrange(10_000)}, "
        f"{rng.choice(DRIVERS)}."
    )
    return DecisionDraft(
        id=node_id,
        text=spec.text,
        context=context,
        category=spec.category,  # type: ignore[arg-type]
        stakes=spec.stakes,  # type: ignore[arg-type]
        confidence=spec.confidence,
        tags=spec.tags,
        project=spec.project,
    )


def fill(store: DecisionStore, decisions: int, rng: random.Random) -> None:
    """Record ``decisions`` decisions, each with 0-3 typed edges to earlier ones (~2.2 each)."""
    ids: list[str] = []
    while len(ids) < decisions:
        node_id = store.allocate_id()
        draft = draft_for(rng, node_id)
        edges: list[EdgeDraft] = []
        if ids:
            for _ in range(rng.choice([0, 1, 1, 2, 3])):
                target = ids[skewed_target(rng, len(ids))]
                edges.append(EdgeDraft(node_id, target, edge_type(rng)))
        try:
            store.record(draft, "bench", edges)
        except DecigraphError:
            store.record(draft, "bench")  # a sampled edge would close a cycle: skip the edges
        ids.append(node_id)


def queries(rng: random.Random, count: int) -> list[str]:
    """Seeded questions of the shapes agents ask (why / when / what / who / keyword-ish)."""
    shapes = [
        "why did we choose {s} {p}",
        "when did we move to {s}",
        "what do we know about {s}",
        "{s} {p}",
        "decisions {p} last month",
        "who decided to use {s} {p}",
        "what caused the switch to {s}",
    ]
    return [
        rng.choice(shapes).format(s=rng.choice(SYSTEMS), p=rng.choice(PURPOSES))
        for _ in range(count)
    ]


def fingerprint(size: int, seed: int) -> str:
    digest = hashlib.sha256(f"{size}:{seed}".encode())
    files = [ROOT / "bench" / "dataset.py", ROOT / "bench" / "synthetic.py"]
    for package in ("graph", "retrieval"):
        files += sorted(p for p in (ROOT / package).rglob("*.py") if p.name not in QUERY_ONLY)
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    for dist in ("chromadb", "torch", "sentence-transformers"):
        digest.update(f"{dist}={version(dist)}".encode())
    return digest.hexdigest()[:12]


def build(data: Path, size: int, seed: int) -> dict[str, Any]:
    from retrieval.embedder import MiniLMEmbedder
    from retrieval.index import DualIndex
    from retrieval.vector import ChromaVectorIndex

    options = StoreOptions(fsync="never", snapshot_every=0)
    store = DecisionStore.open(data, options, clock=sim_clock(), ids=IdSource(seed))
    started = time.perf_counter()
    fill(store, size, random.Random(seed))
    fill_s = time.perf_counter() - started
    started = time.perf_counter()
    index = DualIndex.open(store, MiniLMEmbedder(), ChromaVectorIndex.persistent(data / "chroma"))
    index_s = time.perf_counter() - started
    meta = {
        "decisions": size,
        "seed": seed,
        "events": store.seq,
        "edges": store.graph.number_of_edges(),
        "fill_s": round(fill_s, 1),
        "index_build_s": round(index_s, 1),
        "embedded_per_s": round(size / index_s, 1),
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    index.close()  # flushes ChromaDB and writes the index snapshot
    store.close()  # writes the store snapshot
    meta["data_mb"] = dir_mb(data)
    return meta


PIN_ENV = "DECIGRAPH_BENCH_STORES"


def pinned_stores() -> dict[int, Path]:
    """``{size: cache directory}`` from ``DECIGRAPH_BENCH_STORES`` (``SIZE=DIR,...``)."""
    pins: dict[int, Path] = {}
    for item in filter(None, os.environ.get(PIN_ENV, "").split(",")):
        size, _, where = item.partition("=")
        pins[int(size)] = Path(where)
    return pins


def ensure_store(size: int, seed: int = 11, rebuild: bool = False) -> tuple[Path, dict[str, Any]]:
    """The cached data directory for (size, seed), built if missing; and its build record."""
    fp = fingerprint(size, seed)
    pinned = pinned_stores().get(size)
    if pinned is not None and not rebuild:
        meta = json.loads((pinned / "meta.json").read_text())
        built_fp = pinned.name.rsplit("-", 1)[-1]
        extra = {"pinned": str(pinned), "current_code_fingerprint": fp}
        return pinned / "data", {**meta, "fingerprint": built_fp, "reused": True, **extra}
    home = CACHE / f"store-{size}-s{seed}-{fp}"
    if rebuild:
        shutil.rmtree(home, ignore_errors=True)
    meta_path = home / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        return home / "data", {**meta, "fingerprint": fp, "reused": True}
    for stale in CACHE.glob(f"store-{size}-s{seed}-*"):
        shutil.rmtree(stale, ignore_errors=True)  # an older fingerprint: never reused again
    work = CACHE / f"building-{size}-s{seed}-{fp}"
    shutil.rmtree(work, ignore_errors=True)
    meta = build(work / "data", size, seed)
    (work / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    work.rename(home)
    return home / "data", {**meta, "fingerprint": fp, "reused": False}


def copy_store(data: Path, target: Path) -> Path:
    """A private copy of a cached data directory (benchmarks may write to it)."""
    shutil.copytree(data, target, ignore=shutil.ignore_patterns("LOCK"))
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="write the build record here")
    args = parser.parse_args()
    data, meta = ensure_store(args.size, args.seed, args.rebuild)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({**meta, "path": str(data)}, indent=2) + "\n")
    print(data)


if __name__ == "__main__":
    main()
