"""Salience of a few nodes, computed from what leans on them only (the guardrail gate's view).

:func:`~graph.algorithms.salience.compute_salience` ranks the whole graph (1-3 s at 100k
decisions). The gate needs the salience of the one or two decisions a new decision contradicts,
and salience is *local*: with ``r(v) = PR(v) / baseline``,

    r(v) = 1 + alpha * sum over flow links u -> v of share(u -> v) * r(u)

(module docstring of :mod:`.salience`), so ``r(v)`` depends only on the nodes with a flow path
to ``v`` (its *ancestors*: what leans on it, transitively) and on those nodes' out-links. This
module rebuilds exactly the projection of :mod:`.salience` (type weights, ``blocks`` reversed,
links into a superseded node redirected to its heirs, loops dropped, ``min(1, out-weight)``
shares) around ``v`` and solves the linear system on the ancestors (Jacobi iteration from
``r = 1`` until a step changes the solved ``r`` by less than ``1e-14`` of their sum).
The result equals ``compute_salience(G)[v]`` up to that global power iteration's own
convergence error (``tests/unit/test_salience_local.py`` checks ``<= 1e-6`` on varied graphs).

**Budget.** A hub may have tens of thousands of ancestors. With ``budget=N`` and ``at_least``,
the first bound tried is the cheapest: ``node``'s direct in-links in id order, each source at
``r = 1``, summed until the bound exceeds ``at_least``. Then the ancestors are collected
breadth-first (neighbours in id order) in stages of 1, 8, 64... up to ``N`` nodes; while the
set is not complete, the system is solved on what was collected with every node outside it
taken at ``r = 1`` (the least any node has) -- a *lower bound* of ``r(v)``, since every term is
non-negative. As soon as a bound exceeds ``at_least`` (the gate's threshold) it is returned
with ``exact=False``: the verdict "above the threshold" is then exact. A complete set, or a
bound that stays below ``at_least`` up to ``N``, gives the exact solve on every ancestor.
Every step is a deterministic function of the graph (ids sorted, fixed iteration), so the same
log gives the same scores.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from graph.builders import raw_adjacency
from graph.enums import EdgeType

from .salience import REVERSED_TYPES, _check_params, _weights_by_code

__all__ = ["LocalSalience", "local_salience"]

_TYPES = tuple(EdgeType)
_SUPERSEDES = EdgeType.SUPERSEDES.value
_REVERSED = frozenset(t.value for t in REVERSED_TYPES)
_TOL = 1e-14  # relative to the sum of ``r`` over the solved nodes
_MAX_ITER = 5_000
_GROWTH = 8  # ancestors collected per stage: 1, 8, 64... up to the budget

Keyed = Mapping[str, Mapping[str, Mapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class LocalSalience:
    """A node's salience; ``exact`` False: a lower bound (see the module docstring)."""

    score: float
    exact: bool
    ancestors: int  # nodes the solve covered (the whole ancestor set when exact)


class _Projection:
    """The flow links of :mod:`.salience` around given nodes, read from the graph on demand."""

    def __init__(self, G: nx.MultiDiGraph[str], weights: Mapping[str, float]) -> None:
        raw = raw_adjacency(G)
        self.succ: Keyed = raw.succ
        self.pred: Keyed = raw.pred
        self.weights = weights
        self._heirs: dict[str, tuple[str, ...]] = {}
        self._out: dict[str, float] = {}
        self._in: dict[str, list[tuple[str, float]]] = {}
        self._heir_sets: dict[str, frozenset[str]] = {}

    def superseded(self, node: str) -> bool:
        return any(_SUPERSEDES in keyed for keyed in self.pred[node].values())

    def heirs(self, node: str) -> tuple[str, ...]:
        """The non-superseded ends of ``node``'s supersedes chains (itself when not superseded)."""
        known = self._heirs.get(node)
        if known is not None:
            return known
        if not self.superseded(node):
            found: tuple[str, ...] = (node,)
        else:
            ends: set[str] = set()
            seen = {node}
            stack = [node]
            while stack:
                x = stack.pop()
                newer = [u for u, keyed in self.pred[x].items() if _SUPERSEDES in keyed]
                if not newer:
                    ends.add(x)
                for u in newer:
                    if u not in seen:
                        seen.add(u)
                        stack.append(u)
            found = tuple(sorted(ends))
        self._heirs[node] = found
        return found

    def _heir_set(self, node: str) -> frozenset[str]:
        known = self._heir_sets.get(node)
        if known is None:
            known = self._heir_sets[node] = frozenset(self.heirs(node))
        return known

    def _raw_out(self, node: str) -> Iterable[tuple[str, float]]:
        """Raw flow links ``node -> x`` (before redirection): ``(x, weight)``."""
        weights = self.weights
        for x, keyed in self.succ[node].items():
            for kind, attrs in keyed.items():
                w = weights[kind]
                if w > 0 and kind != _SUPERSEDES and kind not in _REVERSED:
                    yield x, float(attrs.get("weight", 1.0)) * w
        for x, keyed in self.pred[node].items():
            for kind, attrs in keyed.items():
                w = weights[kind]
                if w > 0 and kind in _REVERSED:
                    yield x, float(attrs.get("weight", 1.0)) * w

    def _raw_in(self, node: str) -> Iterable[tuple[str, float]]:
        """Raw flow links ``u -> node``: ``(u, weight)``."""
        weights = self.weights
        for u, keyed in self.pred[node].items():
            for kind, attrs in keyed.items():
                w = weights[kind]
                if w > 0 and kind != _SUPERSEDES and kind not in _REVERSED:
                    yield u, float(attrs.get("weight", 1.0)) * w
        for u, keyed in self.succ[node].items():
            for kind, attrs in keyed.items():
                w = weights[kind]
                if w > 0 and kind in _REVERSED:
                    yield u, float(attrs.get("weight", 1.0)) * w

    def out_weight(self, node: str) -> float:
        """Total weight of ``node``'s flow links after redirection (loops dropped)."""
        known = self._out.get(node)
        if known is not None:
            return known
        total = 0.0
        for x, w in sorted(self._raw_out(node)):
            heirs = self.heirs(x)
            if heirs == (x,):
                total += w
            else:  # one link per heir, w / len(heirs) each; the one back to ``node`` dropped
                kept = len(heirs) - (node in self._heir_set(x))
                total += kept * (w / len(heirs))
        sup = self.weights[_SUPERSEDES]
        if sup > 0 and self.superseded(node):
            total += sup
        self._out[node] = total
        return total

    def in_links(self, node: str) -> list[tuple[str, float]]:
        """Flow links into ``node`` after redirection, ``(source, weight)`` sorted."""
        known = self._in.get(node)
        if known is None:
            known = self._in[node] = self._in_links(node)
        return known

    def _in_links(self, node: str) -> list[tuple[str, float]]:
        if self.superseded(node):
            return []  # every link into a superseded node moved to its heirs
        links: list[tuple[str, float]] = list(self._raw_in(node))
        sup = self.weights[_SUPERSEDES]
        # Superseded nodes whose heirs include ``node``: down its supersedes chains.
        seen = {node}
        stack = [node]
        while stack:
            y = stack.pop()
            for x, keyed in self.succ[y].items():
                if _SUPERSEDES in keyed and x not in seen:
                    seen.add(x)
                    stack.append(x)
                    share = 1.0 / len(self.heirs(x))
                    links.extend((u, w * share) for u, w in self._raw_in(x) if u != node)
                    if sup > 0:
                        links.append((x, sup * share))
        return sorted(links)


def local_salience(
    G: nx.MultiDiGraph[str],
    node: str,
    *,
    alpha: float = 0.85,
    type_weights: Mapping[EdgeType | str, float] | None = None,
    budget: int | None = None,
    at_least: float | None = None,
) -> LocalSalience:
    """Salience of ``node`` from its ancestors only (see the module docstring).

    Parameters
    ----------
    G : networkx.MultiDiGraph
        The decision graph; ``node`` must be in it.
    alpha, type_weights
        As for :func:`~graph.algorithms.salience.compute_salience`.
    budget : int, optional
        Ancestors to collect before trying a lower bound (``None``: no limit, always exact).
    at_least : float, optional
        A lower bound above this is returned as is (``exact=False``).

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> G = build_graph(
    ...     ["aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"],
    ...     [
    ...         ("bbbbbbbb", "aaaaaaaa", "depends_on"),
    ...         ("cccccccc", "aaaaaaaa", "depends_on"),
    ...         ("dddddddd", "cccccccc", "depends_on"),
    ...     ],
    ... )
    >>> round(local_salience(G, "aaaaaaaa").score, 3)
    0.708
    """
    _check_params(alpha, 1.0, 1)
    codes = _weights_by_code(type_weights)
    weights = {t.value: float(codes[i]) for i, t in enumerate(_TYPES)}
    projection = _Projection(G, weights)
    if budget is not None and at_least is not None:
        quick = _prefix_bound(projection, node, alpha, at_least)
        if quick is not None:
            return LocalSalience(quick, False, 1)
    stage = 1
    while budget is not None and at_least is not None and stage <= budget:
        ancestors, truncated = _collect(projection, node, stage)
        if not truncated:
            return LocalSalience(_solve(projection, node, ancestors, alpha), True, len(ancestors))
        score = _solve(projection, node, ancestors, alpha)
        if score > at_least:
            return LocalSalience(score, False, len(ancestors))
        stage = budget if stage < budget < stage * _GROWTH else stage * _GROWTH
    ancestors, _ = _collect(projection, node, None)
    return LocalSalience(_solve(projection, node, ancestors, alpha), True, len(ancestors))


def _prefix_bound(
    projection: _Projection, node: str, alpha: float, at_least: float
) -> float | None:
    """The cheapest lower bound: ``node``'s direct in-links in id order, each source at
    ``r = 1``, summed only until the bound exceeds ``at_least`` (``None`` if it never does).
    A hub's first two or three dependents settle it without reading the other thousands."""
    r = 1.0
    for u, w in projection.in_links(node):
        r += alpha * w / max(1.0, projection.out_weight(u))
        if 1.0 - 1.0 / r > at_least:
            return 1.0 - 1.0 / r
    return None


def _collect(
    projection: _Projection, node: str, budget: int | None
) -> tuple[dict[str, list[tuple[str, float]]], bool]:
    """Breadth-first over in-links: ``{ancestor: its in-links}`` and whether it was cut short.
    Nodes reached but not expanded (beyond the budget) have no entry: they count as ``r = 1``."""
    links: dict[str, list[tuple[str, float]]] = {}
    queue = deque([node])
    queued = {node}
    truncated = False
    while queue:
        x = queue.popleft()
        if budget is not None and len(links) >= budget:
            truncated = True
            break
        links[x] = incoming = projection.in_links(x)
        for u, _ in incoming:
            if u not in queued:
                queued.add(u)
                queue.append(u)
    return links, truncated


def _solve(
    projection: _Projection,
    node: str,
    links: Mapping[str, list[tuple[str, float]]],
    alpha: float,
) -> float:
    """Solve ``r = 1 + alpha * sum share * r`` on ``links``' nodes (others fixed at 1)."""
    if not links.get(node):
        return 0.0
    order = sorted({node, *links, *(u for incoming in links.values() for u, _ in incoming)})
    index = {x: i for i, x in enumerate(order)}
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for x in sorted(links):
        for u, w in links[x]:
            rows.append(index[x])
            cols.append(index[u])
            vals.append(alpha * w / max(1.0, projection.out_weight(u)))
    n = len(order)
    step = sp.csr_array((np.array(vals), (np.array(rows), np.array(cols))), shape=(n, n))
    r = np.ones(n)
    for _ in range(_MAX_ITER):
        nxt = 1.0 + step @ r
        change = float(np.sum(np.abs(nxt - r)))
        r = nxt
        if change <= _TOL * float(np.sum(r)):
            break
    value = float(r[index[node]])
    return 0.0 if value <= 1.0 else 1.0 - 1.0 / value
