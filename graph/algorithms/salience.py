"""Salience: how much of the graph relies on a decision, on a scale that does not depend on size.

**Projection.** Each typed edge is first *projected* onto a flow link along which reliance moves,
towards what is relied upon. By default only the relations that say one decision relies on
another count; the others weigh 0 (pass ``type_weights`` to count them anyway):

==============  ==================  ======  ==============================================
type            stored ``A -> B``   weight  why
==============  ==================  ======  ==============================================
``depends_on``  flow ``A -> B``     1.0     B had to exist first: the strongest reliance
``blocks``      flow ``B -> A``     0.8     "A blocks B": B waits on A, so B leans on A
``caused_by``   flow ``A -> B``     0.7     A is a consequence of B's outcome
``refines``     flow ``A -> B``     0.6     A narrows B and is built on it
``contradicts``                     0       a conflict, not reliance
``relates_to``                      0       a topical link, not reliance
``causal``,                         0       derived on write from wording, mentions,
``semantic``,                               similarity and time: they say nothing about
``entity``,                                 reliance, and dense clusters of them would
``temporal``                                make every member look central
``supersedes``  see below           0       the replaced node's link to its heir
==============  ==================  ======  ==============================================

An edge's own ``weight`` multiplies its type's weight, and links of different types between the
same pair add up. Symmetric types, when weighted, flow both ways.

**Superseded nodes pass their reliance on.** If ``A supersedes B``, B's *heirs* are the nodes at
the ends of its ``supersedes`` chains that are not themselves superseded (``supersedes`` is
acyclic, so they exist). Every projected link into B is redirected to its heirs, split evenly,
so what relied on B now relies on its replacement. A redirected link that would point at its
own source (A depended on the B it replaced) is dropped rather than becoming a self-loop. With a
``supersedes`` weight above 0, B also gets a link of that weight to its heirs (split evenly; the
edge's own ``weight`` is ignored); by default the act of replacing adds nothing.

**Scale.** A damped walk (``alpha``, 0.85) runs over the links. A node passes on
``min(1, out-weight)`` of its damped mass, shared by link weight, so a lone link of weight 0.3
passes 30 %; what is not passed, and the teleport term, go to a pool every node receives an
equal share of. A node nothing leans on receives only that share, the *baseline* ``b``; every
node's rank ``PR(v) >= b``. Salience is the part of a node's rank that flows in over links::

    salience(v) = 1 - b / PR(v),     r(v) = PR(v) / b = 1 + alpha * sum_u share(u -> v) * r(u)

``r`` depends only on what leans on ``v`` (transitively), never on the node count, so a score,
and the guardrail threshold compared with it, mean the same at 10 decisions and at 100k:

==================================================  ============  ===========
what leans on the decision                          r             salience
==================================================  ============  ===========
nothing                                             1             0.0
one ``depends_on`` from a node nothing leans on     1.85          0.46
two such dependents / a chain ``C <- B <- A``       2.70 / 2.57   0.63 / 0.61
three / ten such dependents                         3.55 / 9.50   0.72 / 0.89
two ``caused_by`` / two ``refines`` dependents      2.19 / 2.02   0.54 / 0.51
==================================================  ============  ===========

``salience > 0.5`` means more of the node's rank comes from what relies on it than from the
baseline: two direct dependents cross it, one does not (the default guardrail threshold, see
:mod:`service.settings`).

Scores are deterministic whatever order the graph was built or edited in: nodes are ranked by
id, edges sorted canonically before any floating-point sum, and the iteration's operations are
fixed, so equal graphs give bit-identical scores.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from types import MappingProxyType

import networkx as nx
import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from graph.adjacency import TYPE_CODES, SparseAdjacency
from graph.enums import EdgeType
from graph.errors import NodeNotFoundError, ValidationError
from graph.lifecycle import is_active

__all__ = [
    "DEFAULT_TYPE_WEIGHTS",
    "REVERSED_TYPES",
    "compute_salience",
    "get_high_salience",
    "salience_percentiles",
    "weighted_projection",
]

#: Weight of each edge type in the projection (see the module docstring for the reasons).
DEFAULT_TYPE_WEIGHTS: Mapping[EdgeType, float] = MappingProxyType(
    {
        EdgeType.DEPENDS_ON: 1.0,
        EdgeType.BLOCKS: 0.8,
        EdgeType.CAUSED_BY: 0.7,
        EdgeType.REFINES: 0.6,
        EdgeType.CONTRADICTS: 0.0,
        EdgeType.RELATES_TO: 0.0,
        EdgeType.CAUSAL: 0.0,
        EdgeType.SEMANTIC: 0.0,
        EdgeType.ENTITY: 0.0,
        EdgeType.TEMPORAL: 0.0,
        EdgeType.SUPERSEDES: 0.0,
    }
)

#: Types whose importance flows against the stored direction ("A blocks B": B leans on A).
REVERSED_TYPES: frozenset[EdgeType] = frozenset({EdgeType.BLOCKS})

MAX_LIMIT = 1_000

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_N_CODES = len(TYPE_CODES)
_SUPERSEDES = TYPE_CODES[EdgeType.SUPERSEDES.value]
_REVERSED = np.array([EdgeType(t) in REVERSED_TYPES for t in TYPE_CODES], dtype=bool)


def _weights_by_code(type_weights: Mapping[EdgeType | str, float] | None) -> FloatArray:
    """Type weights as an array indexed by type code: defaults, overridden by ``type_weights``."""
    weights = {t.value: w for t, w in DEFAULT_TYPE_WEIGHTS.items()}
    for raw, value in (type_weights or {}).items():
        name = raw.value if isinstance(raw, EdgeType) else str(raw)
        if name not in weights:
            raise ValidationError(f"type_weights.{name}", "is not an edge type")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number and math.isfinite(value) and value >= 0):
            raise ValidationError(f"type_weights.{name}", f"must be finite and >= 0: {value!r}")
        weights[name] = float(value)
    return np.array([weights[t] for t in TYPE_CODES], dtype=np.float64)


def _adjacency_for(G: nx.MultiDiGraph[str], adjacency: SparseAdjacency | None) -> SparseAdjacency:
    if adjacency is None:
        return SparseAdjacency.from_graph(G)
    # Cheap guard against a mirror that missed an update (MultiDiGraph.number_of_edges()
    # walks every node, so only the node count is compared).
    if len(adjacency) != G.number_of_nodes():
        raise ValidationError(
            "adjacency",
            f"is out of step with the graph ({len(adjacency)} nodes, the graph has "
            f"{G.number_of_nodes()})",
        )
    return adjacency


def _heirs(n: int, newer: IntArray, older: IntArray) -> sp.csr_array:
    """Row ``b`` spreads 1.0 evenly over b's heirs (sorted); rows of other nodes are empty.

    ``newer[i] supersedes older[i]``. Chains are followed by squaring the one-step "passes to"
    matrix (identity on nodes that are not superseded) until no entry lands on a superseded
    node; ``supersedes`` is acyclic, so that takes log2(longest chain) sparse products.
    """
    superseded = np.zeros(n, dtype=bool)
    superseded[older] = True
    keep = np.flatnonzero(~superseded)
    rows = np.concatenate([older, keep])
    cols = np.concatenate([newer, keep])
    step = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    while superseded[step.indices].any():
        step = step @ step
        step.data[:] = 1.0  # only reachability matters; this stops path counts growing
    step.sort_indices()
    counts = np.diff(step.indptr)
    owner = np.repeat(np.arange(n), counts)
    mine = superseded[owner]
    indptr = np.concatenate([[0], np.cumsum(np.where(superseded, counts, 0))])
    share = 1.0 / counts[owner[mine]].astype(np.float64)
    return sp.csr_array((share, step.indices[mine], indptr), shape=(n, n))


def _redirect(
    src: IntArray, dst: IntArray, w: FloatArray, heirs: sp.csr_array
) -> tuple[IntArray, IntArray, FloatArray]:
    """Move every link into a superseded node onto its heirs; drop links that loop back.

    Only the few moved links are touched: they are removed and their replacements (one per
    heir, in heir order) appended, so a canonical input still gives a canonical output.
    """
    indptr = heirs.indptr.astype(np.int64)
    counts = np.diff(indptr)[dst]
    moved = np.flatnonzero(counts)
    if moved.size == 0:
        return src, dst, w
    # Positions of each moved link's heirs in ``heirs``: concatenated aranges, no Python loop.
    origin = np.repeat(moved, counts[moved])
    first = np.cumsum(counts[moved]) - counts[moved]
    pos = indptr[dst[origin]] + np.arange(len(origin)) - np.repeat(first, counts[moved])
    new_src = src[origin]
    new_dst = heirs.indices[pos].astype(np.int64)
    new_w = w[origin] * heirs.data[pos]
    loops = new_src == new_dst
    stay = np.ones(len(src), dtype=bool)
    stay[moved] = False
    return (
        np.concatenate([src[stay], new_src[~loops]]),
        np.concatenate([dst[stay], new_dst[~loops]]),
        np.concatenate([w[stay], new_w[~loops]]),
    )


def _flow_links(
    adjacency: SparseAdjacency, weights: FloatArray
) -> tuple[list[str], IntArray, IntArray, FloatArray]:
    """Ids in rank order, and the projected links ``(from, to, weight)`` in canonical order.

    Canonical order: sorted by (from, to, type), then redirected links moved to the end; any
    fixed order would do, as long as equal graphs give identical arrays.
    """
    edges = adjacency.canonical_edges()
    n = len(edges.ids)
    code = edges.type_code.astype(np.int64)
    type_weight = weights[code]
    flows = (code != _SUPERSEDES) & (type_weight > 0)
    flip = _REVERSED[code]
    src = np.where(flip, edges.target, edges.source)[flows]
    dst = np.where(flip, edges.source, edges.target)[flows]
    w = (edges.weight * type_weight)[flows]
    code = code[flows]
    is_supersedes = edges.type_code == _SUPERSEDES
    heirs = None
    if is_supersedes.any():
        heirs = _heirs(n, edges.source[is_supersedes], edges.target[is_supersedes])
        if weights[_SUPERSEDES] > 0:
            # A placeholder self-link on each superseded node; redirection turns it into the
            # node's link to its heirs, split evenly like any other link into it.
            old = np.flatnonzero(np.diff(heirs.indptr))
            src = np.concatenate([src, old])
            dst = np.concatenate([dst, old])
            w = np.concatenate([w, np.full(len(old), weights[_SUPERSEDES])])
            code = np.concatenate([code, np.full(len(old), _SUPERSEDES, dtype=np.int64)])
    # (from, to, type) is unique, so any sort gives the same, history-free order.
    order = np.argsort((src * n + dst) * _N_CODES + code)
    src, dst, w = src[order], dst[order], w[order]
    if heirs is not None:
        src, dst, w = _redirect(src, dst, w, heirs)
    return edges.ids, src, dst, w


def _check_params(alpha: float, tol: float, max_iter: int) -> None:
    if not (isinstance(alpha, int | float) and 0 < alpha < 1):
        raise ValidationError("alpha", f"must be between 0 and 1 (exclusive), got {alpha!r}")
    if not (isinstance(tol, int | float) and math.isfinite(tol) and tol > 0):
        raise ValidationError("tol", f"must be a finite number > 0, got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValidationError("max_iter", f"must be an integer >= 1, got {max_iter!r}")


def weighted_projection(
    G: nx.MultiDiGraph[str],
    adjacency: SparseAdjacency | None = None,
    *,
    type_weights: Mapping[EdgeType | str, float] | None = None,
) -> tuple[list[str], sp.csr_array]:
    """The weighted digraph that salience walks, as a sparse matrix (link weights, uncapped).

    Parameters
    ----------
    G : networkx.MultiDiGraph
        The decision graph (storage convention of :mod:`graph.builders`).
    adjacency : SparseAdjacency, optional
        A maintained mirror of ``G``; built from ``G`` when omitted.
    type_weights : mapping, optional
        Overrides for :data:`DEFAULT_TYPE_WEIGHTS` (types not named keep their default).

    Returns
    -------
    ids : list of str
        Node ids in ascending order; row and column ``i`` belong to ``ids[i]``.
    matrix : scipy.sparse.csr_array
        ``matrix[i, j]`` is the total weight of the flow links ``ids[i] -> ids[j]``.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> G = build_graph(
    ...     ["aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"],
    ...     [
    ...         ("aaaaaaaa", "bbbbbbbb", "depends_on"),
    ...         ("cccccccc", "bbbbbbbb", "supersedes"),
    ...         ("dddddddd", "aaaaaaaa", "blocks"),
    ...     ],
    ... )
    >>> ids, matrix = weighted_projection(G)
    >>> for node_id, row in zip(ids, matrix.toarray().tolist()):
    ...     print(node_id, row)
    aaaaaaaa [0.0, 0.0, 1.0, 0.8]
    bbbbbbbb [0.0, 0.0, 0.0, 0.0]
    cccccccc [0.0, 0.0, 0.0, 0.0]
    dddddddd [0.0, 0.0, 0.0, 0.0]

    ``a`` leans on ``d`` (which blocks it); its dependency on the superseded ``b`` moved to
    ``b``'s heir ``c``.
    """
    weights = _weights_by_code(type_weights)
    ids, src, dst, w = _flow_links(_adjacency_for(G, adjacency), weights)
    n = len(ids)
    return list(ids), sp.csr_array((w, (src, dst)), shape=(n, n))  # a copy: ids is cached


def compute_salience(
    G: nx.MultiDiGraph[str],
    adjacency: SparseAdjacency | None = None,
    *,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 200,
    type_weights: Mapping[EdgeType | str, float] | None = None,
) -> dict[str, float]:
    """Salience of every node, in [0, 1): the share of its rank that what leans on it gives it.

    Power iteration over :func:`weighted_projection`; see the module docstring for the
    projection, the supersession redirection and the size-independent scale (0 for a node
    nothing leans on, 0.46 / 0.63 / 0.72 for one / two / three direct ``depends_on``
    dependents, whatever the graph's size).

    Parameters
    ----------
    G : networkx.MultiDiGraph
        The decision graph (storage convention of :mod:`graph.builders`).
    adjacency : SparseAdjacency, optional
        The store's maintained mirror of ``G`` (fast path); built from ``G`` when omitted.
    alpha : float, default 0.85
        Damping factor, in (0, 1): the share of a dependent's own rank it passes on.
    tol : float, default 1e-10
        Stop once an iteration changes the rank vector (which sums to 1) by less than ``tol``
        in L1 norm. Unlike ``nx.pagerank`` this is not scaled by the node count.
    max_iter : int, default 200
        Iteration cap.
    type_weights : mapping, optional
        Overrides for :data:`DEFAULT_TYPE_WEIGHTS`; weight 0 drops a type.

    Returns
    -------
    dict
        ``{node_id: score}`` in ascending id order, scores in [0, 1); ``{}`` for an empty
        graph.

    Raises
    ------
    ValidationError
        For an out-of-range parameter, or an ``adjacency`` that does not match ``G``.
    networkx.PowerIterationFailedConvergence
        If ``max_iter`` iterations do not reach ``tol``.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> G = build_graph(
    ...     ["aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"],
    ...     [
    ...         ("bbbbbbbb", "aaaaaaaa", "depends_on"),
    ...         ("cccccccc", "aaaaaaaa", "depends_on"),
    ...         ("dddddddd", "cccccccc", "depends_on"),
    ...         ("dddddddd", "bbbbbbbb", "temporal"),
    ...     ],
    ... )
    >>> {k: round(v, 3) for k, v in compute_salience(G).items()}
    {'aaaaaaaa': 0.708, 'bbbbbbbb': 0.0, 'cccccccc': 0.459, 'dddddddd': 0.0}

    ``c`` has one dependent; ``a`` has two, one of which (``c``) is itself relied on. The
    temporal edge counts for nothing unless asked for, and then only at its small weight:

    >>> round(compute_salience(G, type_weights={"temporal": 0.05})["bbbbbbbb"], 3)
    0.04
    """
    _check_params(alpha, tol, max_iter)
    weights = _weights_by_code(type_weights)
    ids, src, dst, w = _flow_links(_adjacency_for(G, adjacency), weights)
    n = len(ids)
    if n == 0:
        return {}
    # A node passes min(1, out-weight) of its damped mass: each link carries w / max(1, out).
    out_weight = np.bincount(src, weights=w, minlength=n)
    share = w / np.maximum(out_weight[src], 1.0)
    # Transposed and damped, so one CSR mat-vec is one damped step of the walk. The links
    # arrive in canonical order, so the per-row sort and the summing of duplicate links that
    # scipy does here are deterministic too.
    step = sp.csr_array((alpha * share, (dst, src)), shape=(n, n))
    x = np.full(n, 1.0 / n)
    change = np.empty(n)
    for _ in range(max_iter):
        flow = step @ x
        # The walk keeps total mass 1, so what the step did not move (teleport, unpassed
        # shares, dangling nodes) is 1 - sum(flow): the pool, spread evenly. One sum instead of
        # a gather, and rounding drift cannot accumulate. Each node's share is the baseline.
        baseline = (1.0 - float(np.sum(flow))) / n
        moved = flow + baseline
        np.subtract(moved, x, out=change)
        np.abs(change, out=change)
        x = moved
        if float(np.sum(change)) < tol:
            # 1 - baseline / rank, written so a node nothing flows into is exactly 0.0.
            scores = flow / moved
            return dict(zip(ids, scores.tolist(), strict=True))
    raise nx.PowerIterationFailedConvergence(max_iter)


def _rank_key(item: tuple[str, float]) -> tuple[float, str]:
    return -item[1], item[0]


def get_high_salience(
    G: nx.MultiDiGraph[str],
    salience: Mapping[str, float],
    n: int = 10,
    *,
    active_only: bool = False,
) -> list[tuple[str, float]]:
    """The ``n`` most salient nodes, by score descending then id ascending.

    Parameters
    ----------
    G : networkx.MultiDiGraph
        The graph the scores were computed on.
    salience : mapping
        ``{node_id: score}``, e.g. from :func:`compute_salience`.
    n : int, default 10
        How many to return, 1 to 1000.
    active_only : bool, default False
        Skip nodes that are superseded or rejected (:func:`graph.lifecycle.is_active`).

    Returns
    -------
    list of (str, float)

    Raises
    ------
    ValidationError
        ``limit`` if ``n`` is not an integer from 1 to 1000.
    NodeNotFoundError
        If a node to be returned is not in ``G`` (scores from another graph).

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> G = build_graph(
    ...     ["aaaaaaaa", "bbbbbbbb", "cccccccc"],
    ...     [("bbbbbbbb", "aaaaaaaa", "depends_on"), ("cccccccc", "aaaaaaaa", "supersedes")],
    ... )
    >>> scores = compute_salience(G)
    >>> [node for node, _ in get_high_salience(G, scores, 2)]
    ['cccccccc', 'aaaaaaaa']
    >>> [node for node, _ in get_high_salience(G, scores, 2, active_only=True)]
    ['cccccccc', 'bbbbbbbb']
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_LIMIT:
        raise ValidationError("limit", f"must be an integer from 1 to {MAX_LIMIT}, got {n!r}")
    if active_only:
        ranked = sorted(salience.items(), key=_rank_key)
    else:
        ranked = heapq.nsmallest(n, salience.items(), key=_rank_key)
    picked: list[tuple[str, float]] = []
    for node_id, score in ranked:
        if node_id not in G:
            raise NodeNotFoundError(node_id, "salience")
        if active_only and not is_active(G, node_id):
            continue
        picked.append((node_id, float(score)))
        if len(picked) == n:
            break
    return picked


def salience_percentiles(salience: Mapping[str, float]) -> dict[str, float]:
    """For each node, the fraction of nodes with strictly lower salience.

    Tied nodes share a percentile, so the result depends only on the scores.

    Parameters
    ----------
    salience : mapping
        ``{node_id: score}``.

    Returns
    -------
    dict
        ``{node_id: fraction}`` in ascending id order, each in [0, 1).

    Examples
    --------
    >>> salience_percentiles({"bb": 0.5, "aa": 1.0, "cc": 0.5, "dd": 0.1})
    {'aa': 0.75, 'bb': 0.25, 'cc': 0.25, 'dd': 0.0}
    """
    ids = sorted(salience)
    if not ids:
        return {}
    values = np.array([salience[i] for i in ids], dtype=np.float64)
    lower = np.searchsorted(np.sort(values), values, side="left")
    return dict(zip(ids, (lower / len(ids)).tolist(), strict=True))
