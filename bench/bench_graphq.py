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

Maintained answers (``graph.riskindex.RiskIndex``, what the live store answers from; issue 16
item 3), each beside the from-scratch function it replaces, timed alternately in the same run:

- ``findContradictions (maintained)``: after a change (a node's review toggled, and a new
  salience mapping, as after a write), and unchanged (memoised); baseline
  ``find_contradictions`` on the same graph;
- ``getBlockedChain all (maintained)``: after a change (a review toggled, or a new
  ``depends_on``/``blocks`` edge, alternately), and the one-off build on the first query;
  baseline ``get_blocked_chain(G)`` (``--whole-runs`` runs, interleaved);
- ``getGraph depth 2 paged``: ``get_graph(..., limit=500)`` (the ``getGraph`` default
  ``maxNodes``), alternating with the unpaged call from the same starts;
- ``maintenance per event``: ``GraphState.apply`` of a ``--replay-events`` log (records and
  links, ``bench_graph.fill``) with and without the index attached (built on the empty graph,
  so every event is maintained), alternately (``--replay-runs`` each).

Usage: python bench/bench_graphq.py [--nodes 100000] [--edges 500000] [--picks 100]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
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
from graph.riskindex import RiskIndex


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


def change(G: nx.MultiDiGraph[str], risk: RiskIndex, order: list[str], rng: random.Random) -> None:
    """One write's worth of change, told to the index as GraphState would tell it."""
    if rng.random() < 0.5:
        node = rng.choice(order)
        attrs = G.nodes[node]
        if attrs.get("outcome") == "success":
            attrs.pop("status", None)
            attrs.pop("outcome", None)
        else:
            attrs.update(status="reviewed", outcome="success")
        risk.node_changed(node)
        return
    source = rng.randrange(1, len(order))
    target = source - 1 - rng.randrange(min(source, 50))  # an earlier node: stays acyclic
    kind = rng.choice(["depends_on", "blocks"])
    G.add_edge(
        order[source],
        order[target],
        key=kind,
        created_at="2026-01-01T00:00:00Z",
        created_by="bench",
    )
    risk.set_edge(order[source], order[target], kind, 1.0)


def alternate(
    new: Any, old: Any, items: list[Any], every: int, prepare: Any = None
) -> tuple[list[float], list[float]]:
    """Time ``new`` on every item and ``old`` on every ``every``-th, interleaved."""
    fresh: list[float] = []
    baseline: list[float] = []
    for index, item in enumerate(items):
        if prepare is not None:
            prepare(item)
        fresh.extend(time_ms(new, [item], 0))
        if index % every == 0:
            baseline.extend(time_ms(old, [item], 0))
    return fresh, baseline


def maintained(
    G: nx.MultiDiGraph[str],
    salience: dict[str, float],
    rng: random.Random,
    starts: list[str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    risk = RiskIndex()
    started = time.perf_counter()
    first = risk.blocked(G)
    build_s = time.perf_counter() - started
    assert first == get_blocked_chain(G), "maintained chains differ from get_blocked_chain"
    assert risk.contradictions(G, salience) == find_contradictions(G, salience)
    order = list(G)
    picks = list(range(args.picks))
    every = max(1, args.picks // args.whole_runs)
    scores = [salience]
    kept: list[dict[str, float]] = []

    def rescored(_: int) -> None:
        change(G, risk, order, rng)
        # A write brings a new salience mapping; the one before last is freed here, untimed
        # (the store frees it when it recomputes salience, not in the query).
        kept[:] = [scores[0]]
        scores[0] = dict(salience)

    new, old = alternate(
        lambda _: risk.contradictions(G, scores[0]),
        lambda _: find_contradictions(G, scores[0]),
        picks,
        every,
        rescored,
    )
    first20: list[float] = []
    for pick in picks:  # the method's default page (limit 20), after a change
        rescored(pick)
        first20.extend(time_ms(lambda _: risk.contradictions(G, scores[0], limit=20), [0], 0))
    out["findContradictions (maintained)"] = {
        "ours": summary(new),
        "ours_limit_20": summary(first20),
        "ours_unchanged": summary(time_ms(lambda _: risk.contradictions(G, scores[0]), picks)),
        "baseline": summary(old),
        "baseline_name": "find_contradictions (from scratch), same graph, interleaved",
        "pairs": len(risk.contradictions(G, salience)),
    }
    new, old = alternate(
        lambda _: risk.blocked(G),
        lambda _: get_blocked_chain(G),
        picks,
        every,
        lambda _: change(G, risk, order, rng),
    )
    assert risk.blocked(G) == get_blocked_chain(G), "maintained chains drifted"
    out["getBlockedChain all (maintained)"] = {
        "ours": summary(new),
        "baseline": summary(old),
        "baseline_name": "get_blocked_chain(G) (from scratch), interleaved",
        "first_query_build_s": round(build_s, 3),
        "blocked_decisions": len(first),
    }
    new, old = alternate(
        lambda n: get_graph(G, n, depth=2, limit=500),
        lambda n: get_graph(G, n, depth=2),
        starts,
        1,
    )
    out["getGraph depth 2 paged"] = {
        "ours": summary(new),
        "baseline": summary(old),
        "baseline_name": "get_graph(depth=2), unpaged, same starts, interleaved",
        "page_nodes": 500,
    }
    return out


def replay_cost(events: int, runs: int, seed: int) -> dict[str, Any]:
    """``GraphState.apply`` over a log of ``events``, with and without the index, alternately."""
    import tempfile

    from bench.bench_graph import fill
    from graph.adjacency import SparseAdjacency
    from graph.gcpause import gc_paused
    from graph.ids import IdSource
    from graph.state import GraphState
    from graph.store import DecisionStore, StoreOptions

    with tempfile.TemporaryDirectory(prefix="decigraph-graphq-") as root:
        opts = StoreOptions(fsync="never", snapshot_every=0)
        with DecisionStore.open(Path(root) / "data", opts, ids=IdSource(seed)) as store:
            fill(store, events, random.Random(seed))
            log = store.read_events(1, store.seq)
    timings: dict[bool, list[float]] = {False: [], True: []}
    for run in range(runs):
        for watched in (False, True) if run % 2 else (True, False):
            risk = RiskIndex()
            state = GraphState(SparseAdjacency(), risk if watched else None)
            risk.blocked(state.graph)  # built on the empty graph: every event is maintained
            with gc_paused():  # as the store replays on open
                started = time.perf_counter()
                for event in log:
                    state.apply(event)
                timings[watched].append(time.perf_counter() - started)
    plain = statistics.median(timings[False])
    watched_s = statistics.median(timings[True])
    return {
        "events": len(log),
        "replay_s_without": round(plain, 3),
        "replay_s_with": round(watched_s, 3),
        "per_event_us": round((watched_s - plain) / len(log) * 1e6, 2),
        "overhead_pct": round((watched_s / plain - 1) * 100, 1),
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=500_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--picks", type=int, default=100)
    parser.add_argument("--reviewed", type=float, default=0.8)
    parser.add_argument("--whole-runs", type=int, default=5)
    parser.add_argument("--replay-events", type=int, default=100_000, help="0: skip")
    parser.add_argument("--replay-runs", type=int, default=3)
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
    out.update(maintained(G, salience, rng, starts, args))
    if args.replay_events:
        out["maintenance per event"] = replay_cost(args.replay_events, args.replay_runs, args.seed)
    print(json.dumps(out, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
