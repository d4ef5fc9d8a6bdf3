"""Graph queries at 100k nodes / 500k edges, in-process, next to plain NetworkX baselines.

The graph is ``bench_salience.synthetic_graph`` (the same seeded decision graph the salience
benchmark uses: typed edges in ``bench.synthetic.EDGE_MIX`` proportions, heavy-tailed
in-degree, acyclic ``depends_on``/``blocks``/``supersedes``), with a seeded ``--reviewed``
share of decisions reviewed as successes (resolved blockers; the rest stay pending: with every
decision pending, the chains of a heavy-tailed graph span most of it). The
functions are the ones the JSON-RPC methods call (``graph.algorithms``), timed in-process:
no HTTP, no JSON (``bench_http.py`` gives the HTTP overhead). Seeded picks, median and p95
nearest-rank (``bench.common.summary``):

- ``findPath``: ``find_path(G, a, b)`` (shortest, either direction, max length 6) between
  random pairs; baseline ``nx.bidirectional_shortest_path`` on the undirected view;
- ``getGraph depth 2``: ``get_graph(G, n, depth=2)`` (nodes, edges, distances) from random
  nodes; baseline ``nx.single_source_shortest_path_length(cutoff=2)`` on the undirected view
  (the node set only: the floor of any depth-2 answer);
- ``getBlockedChain``: ``get_blocked_chain(G, n)`` for random nodes that have a blocker;
  no baseline (no NetworkX equivalent of the blocker rules);
- ``findContradictions`` (``--whole-runs`` runs; baseline: a bare scan of every edge for
  ``contradicts``) and ``getBlockedChain (all)``, every blocked decision (one run, last).

Usage: python bench/bench_graphq.py [--nodes 100000] [--edges 500000] [--picks 100]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_salience import synthetic_graph
from bench.common import summary, time_ms
from graph.algorithms.contradictions import find_contradictions, get_blocked_chain
from graph.algorithms.paths import find_path
from graph.algorithms.salience import compute_salience
from graph.algorithms.traversal import get_graph


def review(G: nx.MultiDiGraph[str], share: float, rng: random.Random) -> None:
    for node in sorted(G):
        if rng.random() < share:
            G.nodes[node].update(status="reviewed", outcome="success")


def has_blocker(G: nx.MultiDiGraph[str], node: str) -> bool:
    out_keys = (k for keyed in G._succ[node].values() for k in keyed)  # type: ignore[attr-defined]
    in_keys = (k for keyed in G._pred[node].values() for k in keyed)  # type: ignore[attr-defined]
    return "depends_on" in set(out_keys) or "blocks" in set(in_keys)


def nx_path(U: Any, a: str, b: str) -> list[str]:
    try:
        return list(nx.bidirectional_shortest_path(U, a, b))
    except nx.NetworkXNoPath:
        return []


def contradiction_scan(G: nx.MultiDiGraph[str]) -> list[tuple[str, str]]:
    return [(u, v) for u, v, k in G.edges(keys=True) if k == "contradicts" and u < v]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=500_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--picks", type=int, default=100)
    parser.add_argument("--reviewed", type=float, default=0.8)
    parser.add_argument("--whole-runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results/graphq.json"))
    args = parser.parse_args()
    G = synthetic_graph(args.nodes, args.edges, args.seed)
    U = G.to_undirected(as_view=True)
    rng = random.Random(args.seed)
    review(G, args.reviewed, rng)
    nodes = sorted(G)
    pairs = [(rng.choice(nodes), rng.choice(nodes)) for _ in range(args.picks)]
    starts = [rng.choice(nodes) for _ in range(args.picks)]
    blocked = [n for n in nodes if has_blocker(G, n)]
    chains = [rng.choice(blocked) for _ in range(args.picks)]
    salience = compute_salience(G)

    sizes = [len(get_graph(G, n, depth=2).nodes) for n in starts]
    found = [bool(find_path(G, a, b)) for a, b in pairs]
    out: dict[str, Any] = {
        "nodes": G.number_of_nodes(),
        "edges": G.number_of_edges(),
        "seed": args.seed,
        "reviewed_share": args.reviewed,
        "mode": "in-process (graph.algorithms on the NetworkX graph)",
        "findPath": {
            "ours": summary(time_ms(lambda p: find_path(G, *p), pairs)),
            "baseline": summary(time_ms(lambda p: nx_path(U, *p), pairs)),
            "baseline_name": "nx.bidirectional_shortest_path (undirected view)",
            "pairs_with_a_path": sum(found),
        },
        "getGraph depth 2": {
            "ours": summary(time_ms(lambda n: get_graph(G, n, depth=2), starts)),
            "baseline": summary(
                time_ms(lambda n: nx.single_source_shortest_path_length(U, n, cutoff=2), starts)
            ),
            "baseline_name": "nx.single_source_shortest_path_length(cutoff=2), node set only",
            "median_subgraph_nodes": sorted(sizes)[len(sizes) // 2],
            "max_subgraph_nodes": max(sizes),
        },
        "getBlockedChain": {
            "ours": summary(time_ms(lambda n: get_blocked_chain(G, n), chains)),
            "baseline": None,
            "baseline_name": "none",
            "nodes_with_a_blocker": len(blocked),
        },
    }
    whole = list(range(args.whole_runs))
    out["findContradictions"] = {
        "ours": summary(time_ms(lambda _: find_contradictions(G, salience), whole, 1)),
        "baseline": summary(time_ms(lambda _: contradiction_scan(G), whole, 1)),
        "baseline_name": "a bare scan of every edge for 'contradicts'",
        "pairs": len(find_contradictions(G, salience)),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")  # the slow scan below may time out
    everything: list[Any] = []
    out["getBlockedChain (all)"] = {
        "ours": summary(time_ms(lambda _: everything.append(get_blocked_chain(G)), [0], 0)),
        "baseline": None,
        "baseline_name": "none",
        "blocked_decisions": len(everything[-1]),
    }
    started = time.perf_counter()
    compute_salience(G)
    out["salience_from_scratch_s"] = round(time.perf_counter() - started, 3)
    print(json.dumps(out, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
