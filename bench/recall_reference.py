"""Recall's read path as it was before its fast paths (issue 16), to measure them against.

:func:`reference_paths` swaps, for the duration of a ``with`` block, the compiled filter
(:func:`retrieval.filters.accepting`) for the plain ``RecallFilters.matches`` predicate and the
searches' lazy ``first_accepted`` for eager filtering, and the traversal for the one that built
a step for every better offer: the answers are identical (see
``tests/unit/test_recall_fastpaths.py``), only the cost differs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import networkx as nx

from graph.builders import raw_adjacency
from graph.enums import EdgeType
from graph.lifecycle import is_superseded
from retrieval import filters, keyword, planner, query, recall
from retrieval.filters import RecallFilters
from retrieval.recall import CAUSAL, CAUSE_FIRST, Step, _neighbours, _step, path_nodes


def reference_traverse(self: Any) -> None:
    """``_Recall.traverse`` before issue 16 (a Step built for every better offer)."""
    preset = self.preset
    trust = preset.families.relative()
    gains = {t.value: trust[t.family] * preset.propagation for t in EdgeType}
    effect_gains = {
        t.value: gains[t.value] * (preset.effect_weight if t.family is CAUSAL else 1.0)
        for t in EdgeType
    }
    raw = raw_adjacency(self.G)
    frontier = list(self.anchors)
    for _depth in range(preset.max_depth):
        offers: dict[str, tuple[float, str, Step, list[Step]]] = {}
        paths: dict[str, list[tuple[float, str, Step, list[Step]]]] = {}
        for source in frontier:
            if len(raw.succ[source]) + len(raw.pred[source]) > preset.max_fanout:
                continue
            parent = self.candidates[source]
            on_path = {source, *path_nodes(parent.route)}
            for target, edge_type, weight, outgoing in _neighbours(raw, source):
                if target in on_path:
                    continue
                towards_cause = outgoing != (edge_type in CAUSE_FIRST)
                gain = gains[edge_type] if towards_cause else effect_gains[edge_type]
                offer = parent.score * gain * min(weight, 1.0)
                if offer <= 0:
                    continue
                step = _step(source, target, edge_type, weight, outgoing)
                paths.setdefault(target, []).append((offer, source, step, parent.path))
                best = offers.get(target)
                if best is None or offer > best[0]:
                    offers[target] = (offer, source, step, parent.route)
        room = max(0, preset.max_nodes - len(self.candidates))
        admitted = sorted(t for t in offers if t not in self.candidates)[:room]
        cosines = self.index.matrix.similarities(self.vector, admitted)
        for target in admitted:
            self.candidates[target] = self._score(target, cosines.get(target, 0.0))
        improved: list[str] = []
        for target in sorted(offers):
            candidate = self.candidates.get(target)
            if candidate is None or offers[target][0] <= candidate.offer:
                continue
            offer, _, step, route = offers[target]
            candidate.offer = offer
            candidate.route = [*route, step]
            improved.append(target)
            for offer, source, step, trail in sorted(paths[target], key=lambda o: -o[0]):
                if offer <= candidate.path_offer:
                    break
                if not self._explained_through(source, target):
                    candidate.path_offer = offer
                    candidate.path = [*trail, step]
                    break
        improved.sort(key=lambda i: (-self.candidates[i].score, i))
        frontier = improved[: preset.beam_width]
        if not frontier:
            break


def reference_accept(G: nx.MultiDiGraph[str], f: RecallFilters) -> Callable[[str], bool]:
    def accept(node_id: str) -> bool:
        attrs = G.nodes.get(node_id)
        return attrs is not None and f.matches(attrs, is_superseded(G, node_id))

    return accept


def eager_first_accepted(
    ranked: Iterable[tuple[str, float]], accept: Callable[[str], bool], k: int
) -> list[tuple[str, float]]:
    return [hit for hit in ranked if accept(hit[0])][: max(k, 0)]


@contextmanager
def reference_paths() -> Iterator[None]:
    patches: list[tuple[Any, str, Any]] = [
        (recall, "accepting", reference_accept),
        (query, "accepting", reference_accept),
        (planner, "first_accepted", eager_first_accepted),
        (keyword, "first_accepted", eager_first_accepted),
        (filters, "matcher", lambda f: f.matches),
        (recall._Recall, "traverse", reference_traverse),
    ]
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    try:
        for module, name, value in patches:
            setattr(module, name, value)
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
