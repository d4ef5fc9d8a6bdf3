"""Salience benchmark: maintained adjacency, salience, and compiled/pure PageRank baselines.

Usage: python bench/bench_salience.py [--nodes 100000] [--edges 500000] [--seed 7] [--runs 15]
                                      [--sizes 10000,50000]

For each size (``--sizes`` node counts plus ``--nodes``; edges scale with ``--edges/--nodes``)
a seeded synthetic decision graph is generated and the script reports: the bulk build of
:class:`~graph.adjacency.SparseAdjacency` (``from_graph``), the cost of one incremental
``set_edge`` / ``remove_edge``, ``compute_salience`` on the maintained adjacency (median and p95;
each run follows a write, a new node linked to an old one, as in the service) with the default
type weights (reliance only) and with every type weighted (the projection salience used before
it counted only reliance, for comparison with earlier runs), ``nx.pagerank`` and igraph's
PageRank (PRPACK, compiled) on the same default projection, the ratio ours / igraph, and the
largest difference between our scores and the scale's closed form solved exactly
(``1 - 1 / r`` with ``(I - alpha S^T) r = 1``, sparse LU). Results go to stdout (markdown) and
``bench/results/salience.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import igraph
import networkx as nx
import numpy as np
import scipy
import scipy.sparse as sp
import scipy.sparse.linalg as spla

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import percentile
from bench.synthetic import EDGE_MIX
from graph.adjacency import SparseAdjacency
from graph.algorithms.salience import compute_salience, weighted_projection
from graph.enums import EdgeType
from graph.gcpause import gc_paused

STAMP = "2026-01-01T00:00:00.000000Z"
ALPHA, TOL = 0.85, 1e-10
#: Every type weighted, as salience did before it counted only reliance.
ALL_TYPES = {
    "contradicts": 0.3,
    "relates_to": 0.3,
    "causal": 0.5,
    "semantic": 0.2,
    "entity": 0.1,
    "temporal": 0.05,
    "supersedes": 1.0,
}


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def node_ids(rng: np.random.Generator, count: int, taken: set[str] | None = None) -> list[str]:
    """``count`` distinct random CSTP-style ids (8 lowercase hex characters)."""
    seen = set(taken or ())
    ids: list[str] = []
    while len(ids) < count:
        for raw in rng.integers(0, 2**32, size=count - len(ids) + 16, dtype=np.uint64).tolist():
            text = f"{raw:08x}"
            if text not in seen and len(ids) < count:
                seen.add(text)
                ids.append(text)
    return ids


def synthetic_graph(nodes: int, edges: int, seed: int) -> nx.MultiDiGraph[str]:
    """A decision graph with ``edges`` stored (directed) edges, following the storage convention.

    Types follow ``bench.synthetic.EDGE_MIX``. Targets are earlier nodes drawn like
    ``bench.synthetic.skewed_target`` (``index * u**3``: a few early hubs collect most links),
    which also keeps ``depends_on`` / ``blocks`` / ``supersedes`` acyclic; a supersession
    replaces one of the 50 decisions just before it, so chains form.
    """
    rng = np.random.default_rng(seed)
    ids = node_ids(rng, nodes)
    names = [t for t, _ in EDGE_MIX]
    share = np.array([w for _, w in EDGE_MIX], dtype=np.float64)
    share /= share.sum()
    symmetric = np.array([EdgeType(t).symmetric for t in names])
    drawn = int(edges / (1 + float(share @ symmetric)) * 1.15)  # spare for duplicates
    kind = rng.choice(len(names), size=drawn, p=share)
    src = rng.integers(1, nodes, size=drawn)
    u = rng.random(drawn)
    dst = np.floor(src * u**3).astype(np.int64)
    replaces = kind == names.index("supersedes")
    window = np.minimum(src[replaces], 50)
    dst[replaces] = src[replaces] - 1 - np.floor(u[replaces] * window).astype(np.int64)
    low = np.where(symmetric[kind], np.minimum(src, dst), src)
    high = np.where(symmetric[kind], np.maximum(src, dst), dst)
    _, first = np.unique((low * nodes + high) * 16 + kind, return_index=True)
    first.sort()
    src, dst, kind = src[first], dst[first], kind[first]
    stored = np.cumsum(1 + symmetric[kind])
    keep = int(np.searchsorted(stored, edges)) + 1
    chosen = np.arange(keep)
    if stored[keep - 1] > edges:  # a symmetric pair overshot by one: swap in a directed edge
        chosen[-1] = keep + int(np.flatnonzero(~symmetric[kind[keep:]])[0])
    src, dst, kind = src[chosen], dst[chosen], kind[chosen]
    keep = len(chosen)
    weight = np.where(rng.random(keep) < 0.8, 1.0, np.round(rng.uniform(0.5, 2.0, keep), 2))

    G: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    # Fill NetworkX's own dicts as graph.snapshot does: add_edge is ~10x slower at this size.
    node_dict: dict[str, Any] = G._node  # type: ignore[attr-defined]
    succ: dict[str, Any] = G._succ  # type: ignore[attr-defined]
    pred: dict[str, Any] = G._pred  # type: ignore[attr-defined]
    with gc_paused():
        for node_id in ids:
            node_dict[node_id] = {
                "kind": "decision",
                "text": f"decision {node_id}",
                "created_at": STAMP,
                "recorded_by": "bench",
                "lifecycle": "accepted",
                "status": "pending",
                "version": 1,
            }
            succ[node_id] = {}
            pred[node_id] = {}
        rows = zip(src.tolist(), dst.tolist(), kind.tolist(), weight.tolist(), strict=True)
        for a, b, k, w in rows:
            pairs = [(ids[a], ids[b]), (ids[b], ids[a])] if symmetric[k] else [(ids[a], ids[b])]
            for x, y in pairs:
                keyed = succ[x].get(y)
                if keyed is None:
                    keyed = succ[x][y] = {}
                    pred[y][x] = keyed
                keyed[names[k]] = {
                    "weight": w,
                    "created_at": STAMP,
                    "created_by": "bench",
                    "origin": "manual",
                }
    return G


def update_cost(G: nx.MultiDiGraph[str], adj: SparseAdjacency, rng: np.random.Generator) -> Any:
    """Mean cost of set_edge / remove_edge for edges the graph does not have (then undone)."""
    ids = list(G)
    names = [t for t, _ in EDGE_MIX]
    count = min(20_000, len(ids))
    picks = zip(
        rng.integers(0, len(ids), count).tolist(),
        rng.integers(0, len(ids), count).tolist(),
        rng.integers(0, len(names), count).tolist(),
        strict=True,
    )
    fresh = {(ids[a], ids[b], names[k]) for a, b, k in picks if a != b}
    todo = [e for e in sorted(fresh) if not adj.has_edge(*e)]
    start = time.perf_counter()
    for u, v, t in todo:
        adj.set_edge(u, v, t, 1.0)
    added = time.perf_counter() - start
    start = time.perf_counter()
    for u, v, t in todo:
        adj.remove_edge(u, v, t)
    removed = time.perf_counter() - start
    return {
        "edges": len(todo),
        "set_us": added / len(todo) * 1e6,
        "remove_us": removed / len(todo) * 1e6,
    }


def write_one(G: nx.MultiDiGraph[str], adj: SparseAdjacency, rng: np.random.Generator) -> None:
    """What a ``record`` + ``link`` does to both: a new node related to an existing one."""
    new = node_ids(rng, 1, set(G))[0]
    old = list(G)[int(rng.integers(0, G.number_of_nodes()))]
    G.add_node(new, created_at=STAMP)
    adj.add_node(new)
    for u, v in ((new, old), (old, new)):
        G.add_edge(u, v, key="relates_to", weight=1.0)
        adj.set_edge(u, v, "relates_to", 1.0)


def run_size(nodes: int, edges: int, seed: int, runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {"nodes": nodes}
    start = time.perf_counter()
    G = synthetic_graph(nodes, edges, seed)
    out["generate_s"] = time.perf_counter() - start
    out["edges"] = G.number_of_edges()
    rng = np.random.default_rng(seed + 1)

    builds = [timed(lambda: SparseAdjacency.from_graph(G)) for _ in range(3)]
    out["from_graph_s"] = statistics.median(builds)
    adj = SparseAdjacency.from_graph(G)
    out["update"] = update_cost(G, adj, rng)

    ours: list[float] = []
    every: list[float] = []
    for _ in range(runs):
        write_one(G, adj, rng)
        ours.append(timed(lambda: compute_salience(G, adj, alpha=ALPHA, tol=TOL)))
        every.append(
            timed(lambda: compute_salience(G, adj, alpha=ALPHA, tol=TOL, type_weights=ALL_TYPES))
        )
    out["salience_s"] = {"median": statistics.median(ours), "p95": percentile(ours, 0.95)}
    out["salience_all_types_s"] = {
        "median": statistics.median(every),
        "p95": percentile(every, 0.95),
    }
    scores = compute_salience(G, adj, alpha=ALPHA, tol=TOL)

    ids, matrix = weighted_projection(G, adj)
    coo = matrix.tocoo()
    out["projection_links"] = int(coo.nnz)
    ours_vec = np.array([scores[i] for i in ids])
    # The closed form: r = 1 + alpha * S^T r, S = rows divided by max(1, row sum).
    rows = np.asarray(matrix.sum(axis=1)).ravel()
    share = sp.diags(1.0 / np.maximum(rows, 1.0)) @ matrix
    system = (sp.identity(len(ids), format="csc") - ALPHA * share.T).tocsc()
    start = time.perf_counter()
    r = spla.spsolve(system, np.ones(len(ids)))
    out["exact_solve_s"] = time.perf_counter() - start
    out["max_abs_diff_vs_exact"] = float(np.abs(ours_vec - (1.0 - 1.0 / r)).max())

    D: nx.DiGraph[int] = nx.DiGraph()
    D.add_nodes_from(range(len(ids)))
    D.add_weighted_edges_from(
        zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True)
    )
    nx_times: list[float] = []
    for _ in range(3):
        start = time.perf_counter()
        # nx stops at an L1 change below N * tol, ours below tol: scale so both stop alike.
        nx.pagerank(D, alpha=ALPHA, tol=TOL / len(ids), weight="weight")
        nx_times.append(time.perf_counter() - start)
    out["networkx_s"] = {"median": statistics.median(nx_times), "runs": len(nx_times)}

    g = igraph.Graph(n=len(ids), edges=np.column_stack([coo.row, coo.col]).tolist(), directed=True)
    g.es["weight"] = coo.data.tolist()
    ig_times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        g.pagerank(damping=ALPHA, weights="weight", implementation="prpack")
        ig_times.append(time.perf_counter() - start)
    out["igraph_s"] = {"median": statistics.median(ig_times), "p95": percentile(ig_times, 0.95)}
    out["ratio_ours_over_igraph"] = out["salience_s"]["median"] / out["igraph_s"]["median"]
    return out


def render(results: list[dict[str, Any]]) -> str:
    rows = [
        "## Salience (damped walk over the weighted projection)",
        "",
        "| nodes | edges | links | from_graph | set_edge | remove_edge | ours median | ours p95 "
        "| every type | nx.pagerank | igraph median | igraph p95 | ours / igraph "
        "| max abs diff vs exact |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        rows.append(
            f"| {r['nodes']:,} | {r['edges']:,} | {r['projection_links']:,} "
            f"| {r['from_graph_s'] * 1e3:.0f} ms "
            f"| {r['update']['set_us']:.1f} µs | {r['update']['remove_us']:.1f} µs "
            f"| {r['salience_s']['median'] * 1e3:.0f} ms | {r['salience_s']['p95'] * 1e3:.0f} ms "
            f"| {r['salience_all_types_s']['median'] * 1e3:.0f} ms "
            f"| {r['networkx_s']['median'] * 1e3:.0f} ms "
            f"| {r['igraph_s']['median'] * 1e3:.0f} ms | {r['igraph_s']['p95'] * 1e3:.0f} ms "
            f"| {r['ratio_ours_over_igraph']:.2f} | {r['max_abs_diff_vs_exact']:.1e} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=500_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--sizes", default="10000,50000", help="extra node counts, comma-separated ('' for none)"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/salience.json"))
    args = parser.parse_args()
    per_node = args.edges / args.nodes
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()} | {args.nodes})
    results = []
    for nodes in sizes:
        edges = args.edges if nodes == args.nodes else round(nodes * per_node)
        print(f"running {nodes:,} nodes / {edges:,} edges ...", file=sys.stderr, flush=True)
        results.append(run_size(nodes, edges, args.seed, args.runs))
    report = {
        "seed": args.seed,
        "runs": args.runs,
        "alpha": ALPHA,
        "tol": TOL,
        "environment": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "networkx": nx.__version__,
            "igraph": igraph.__version__,
            "cpus": os.cpu_count(),
        },
        "sizes": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(render(results))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
