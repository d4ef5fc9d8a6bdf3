"""Structural risk: live contradictions, and decisions held up by unresolved blockers.

Blocking semantics (the ready rule): a decision is blocked only by something it cannot rely on.

* ``B -depends_on-> A``: B builds on A. An *accepted* A can be relied on as it stands, reviewed
  or not (most decisions are never reviewed, and "not reviewed yet" is no reason to wait). A
  blocks B only when it cannot be relied on: ``rejected`` (its lifecycle), reviewed ``failed``
  or ``abandoned`` (its outcome), or still ``proposed`` (not accepted yet).
* ``A -blocks-> B``: an explicit ordering, "B waits until A is done". A blocks B until A is
  *resolved*, reviewed with outcome ``success`` or ``partial``
  (:func:`graph.lifecycle.is_resolved`); before that its reason is ``pending`` (accepted, not
  done yet) or ``proposed``, and after a bad review ``failed`` or ``abandoned``.
* ``rejected`` wins over everything, even a good review (a rejected decision is not going to be
  carried out); a ``success``/``partial`` review otherwise resolves either kind of blocker.
* A superseded blocker stands for its *heirs*, the non-superseded ends of its ``supersedes``
  chains (:func:`graph.lifecycle.successors_of`, followed), which are checked in its place
  with the same edge type.
* B is blocked when any direct blocker blocks it. Blocking is transitive through blockers: if B
  waits on A, which blocks it, and A waits on C, which blocks A, B waits on C too. A dependency
  that does not block (accepted, or done) stops the chain: if it is blocked itself it is listed
  under its own id, once, rather than once more for everything built on it.

``blocks``, ``depends_on`` and ``supersedes`` are kept acyclic by the store, but every walk here
keeps a visited set, so a hand-built cyclic graph still terminates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, overload

import networkx as nx

from graph.algorithms.walk import EdgeRef, check_int, check_node, edge_ref
from graph.enums import EdgeType, Lifecycle, NodeKind, Outcome
from graph.lifecycle import is_active, is_resolved, successors_of

__all__ = [
    "MAX_LIMIT",
    "BlockReason",
    "BlockedChain",
    "Blocker",
    "Contradiction",
    "all_blocked",
    "find_contradictions",
    "get_blocked_chain",
]

MAX_LIMIT = 1_000

BlockReason = Literal["pending", "proposed", "rejected", "failed", "abandoned"]

_CONTRADICTS = EdgeType.CONTRADICTS.value
_BLOCKS = EdgeType.BLOCKS.value
_DEPENDS_ON = EdgeType.DEPENDS_ON.value


@dataclass(frozen=True)
class Contradiction:
    """Decisions ``a < b`` joined by ``contradicts``; ``salience_at_stake`` is the larger score."""

    a: str
    b: str
    salience_at_stake: float
    a_salience: float
    b_salience: float
    edge: EdgeRef


def find_contradictions(
    G: nx.MultiDiGraph[str],
    salience: Mapping[str, float],
    *,
    include_inactive: bool = False,
    limit: int | None = None,
) -> list[Contradiction]:
    """Pairs of decisions joined by ``contradicts``, the most salient conflicts first.

    Parameters
    ----------
    G : networkx.MultiDiGraph
    salience : mapping of str to float
        Scores by node id (e.g. :func:`graph.algorithms.salience.compute_salience`); a node
        without one counts as 0.0.
    include_inactive : bool, default False
        Also report pairs where a side is superseded or rejected. By default those are left
        out: a replaced or refused decision no longer conflicts with anything live.
    limit : int, optional
        Return at most this many, 1 to 1000.

    Returns
    -------
    list of Contradiction
        Each unordered pair once, ordered by (salience at stake desc, the lower of the two
        scores desc, a, b): a conflict between two important decisions outranks one between an
        important and a marginal one.

    Raises
    ------
    ValidationError
        ``limit`` is out of range.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> a, b, c, d = "aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"
    >>> edges = [(b, a, "contradicts"), (c, d, "contradicts")]
    >>> scores = {a: 0.9, b: 0.2, c: 0.9, d: 0.5}
    >>> found = find_contradictions(build_graph([a, b, c, d], edges), scores)
    >>> [(x.a, x.b, x.salience_at_stake) for x in found]
    [('cccccccc', 'dddddddd', 0.9), ('aaaaaaaa', 'bbbbbbbb', 0.9)]

    Once ``c`` supersedes ``b``, the ``a``/``b`` conflict is settled:

    >>> G = build_graph([a, b, c, d], [*edges, (c, b, "supersedes")])
    >>> [(x.a, x.b) for x in find_contradictions(G, scores)]
    [('cccccccc', 'dddddddd')]
    """
    if limit is not None:
        check_int(limit, "limit", 1, MAX_LIMIT)
    pairs: dict[tuple[str, str], EdgeRef] = {}
    for u, v, key in G.edges(keys=True):
        if key == _CONTRADICTS and u != v and (min(u, v), max(u, v)) not in pairs:
            ref = edge_ref(G, u, v, key)  # canonical: ref.source < ref.target
            pairs[ref.source, ref.target] = ref
    found: list[Contradiction] = []
    for (a, b), ref in pairs.items():
        if include_inactive or (is_active(G, a) and is_active(G, b)):
            sa, sb = float(salience.get(a, 0.0)), float(salience.get(b, 0.0))
            found.append(Contradiction(a, b, max(sa, sb), sa, sb, ref))
    found.sort(key=lambda c: (-c.salience_at_stake, -min(c.a_salience, c.b_salience), c.a, c.b))
    return found if limit is None else found[:limit]


@dataclass(frozen=True)
class Blocker:
    """A decision in the way of ``path[0]``, ``depth`` blocking hops away, and why (``reason``).

    ``via_type`` is the type of the last blocking edge (``blocks`` or ``depends_on``) on the way.
    ``path`` runs from the blocked node to this blocker; consecutive ids are joined by a
    blocking edge, or by ``supersedes`` where a superseded blocker was replaced by its heir
    (``stands_for`` then names the superseded decision this one replaced).
    """

    node_id: str
    reason: BlockReason
    depth: int
    via_type: EdgeType
    path: list[str]
    stands_for: str | None = None


@dataclass(frozen=True)
class BlockedChain:
    """Whether ``node_id`` is blocked, by whom directly (``blockers``) and transitively (``chain``).

    Both lists are ordered by (depth, id); ``blockers`` is ``chain``'s depth-1 part.
    """

    node_id: str
    blocked: bool
    blockers: list[Blocker]
    chain: list[Blocker]


def _reason(G: nx.MultiDiGraph[str], node_id: str, via: EdgeType) -> BlockReason | None:
    """Why ``node_id`` blocks what reaches it over a ``via`` edge, or ``None`` when it does not.

    Reads the stored lifecycle: heirs are never superseded, except on a supersession cycle,
    where the derived ``superseded`` would hide a rejection.
    """
    attrs = G.nodes[node_id]
    lifecycle = attrs.get("lifecycle", Lifecycle.ACCEPTED.value)
    if lifecycle == Lifecycle.REJECTED.value:
        return "rejected"
    if is_resolved(G, node_id):
        return None
    outcome = attrs.get("outcome")
    if outcome == Outcome.FAILURE.value:
        return "failed"
    if outcome == Outcome.ABANDONED.value:
        return "abandoned"
    if lifecycle == Lifecycle.PROPOSED.value:
        return "proposed"
    return "pending" if via is EdgeType.BLOCKS else None  # accepted: relied on as it stands


def _heirs(
    G: nx.MultiDiGraph[str], node_id: str, visited: set[str] | None = None
) -> list[list[str]]:
    """Supersession paths ``[node_id, ..., heir]`` to each heir, by heir id.

    A node that is not superseded is its own heir. Breadth-first over id-sorted successors, so
    each heir's path is its shortest, smallest-id one. On a (hand-built) supersession cycle
    with no way out, the node stands for itself. ``visited`` (when given) receives every node
    whose successors were read (what the answer depends on: :mod:`graph.riskindex`).
    """
    paths = {node_id: [node_id]}
    frontier = [node_id]
    heirs: dict[str, list[str]] = {}
    while frontier:
        following: list[str] = []
        for current in frontier:
            newer = successors_of(G, current)
            if not newer:
                heirs[current] = paths[current]
            for nxt in newer:
                if nxt not in paths:
                    paths[nxt] = [*paths[current], nxt]
                    following.append(nxt)
        frontier = following
    if visited is not None:
        visited.update(paths)
    return [heirs[h] for h in sorted(heirs)] or [[node_id]]


def _direct_blockers(G: nx.MultiDiGraph[str], node_id: str) -> list[tuple[str, EdgeType]]:
    """``(blocker, edge type)`` for the blocking edges at ``node_id``, sorted by (id, type)."""
    found = {(u, EdgeType.BLOCKS) for u, _, k in G.in_edges(node_id, keys=True) if k == _BLOCKS}
    found |= {
        (v, EdgeType.DEPENDS_ON) for _, v, k in G.out_edges(node_id, keys=True) if k == _DEPENDS_ON
    }
    return sorted(found, key=lambda item: (item[0], item[1].value))


class _Lookups:
    """Per-node answers that every chain of one listing asks again (blockers, heirs, reasons)."""

    def __init__(self, G: nx.MultiDiGraph[str]) -> None:
        self.G = G
        self._blockers: dict[str, list[tuple[str, EdgeType]]] = {}
        self._heirs: dict[str, list[list[str]]] = {}
        self._reasons: dict[tuple[str, EdgeType], BlockReason | None] = {}

    def blockers(self, node_id: str) -> list[tuple[str, EdgeType]]:
        if node_id not in self._blockers:
            self._blockers[node_id] = _direct_blockers(self.G, node_id)
        return self._blockers[node_id]

    def heirs(self, node_id: str) -> list[list[str]]:
        if node_id not in self._heirs:
            self._heirs[node_id] = _heirs(self.G, node_id)
        return self._heirs[node_id]

    def reason(self, node_id: str, via: EdgeType) -> BlockReason | None:
        if (node_id, via) not in self._reasons:
            self._reasons[node_id, via] = _reason(self.G, node_id, via)
        return self._reasons[node_id, via]


def _chain(G: nx.MultiDiGraph[str], node_id: str, lookups: _Lookups | None = None) -> list[Blocker]:
    """Every blocker reachable from ``node_id`` through blockers, breadth-first, by (depth, id).

    A blocker found several ways keeps its first: the fewest hops, then the smallest-id parent,
    then the smaller edge type (``blocks`` before ``depends_on``).
    """
    lookups = lookups or _Lookups(G)
    seen = {node_id}
    frontier: list[Blocker | None] = [None]  # None stands for node_id itself
    chain: list[Blocker] = []
    depth = 0
    while frontier:
        depth += 1
        level: dict[str, Blocker] = {}
        for parent in frontier:  # in id order, so the smallest-id parent wins ties
            here = node_id if parent is None else parent.node_id
            trail = [node_id] if parent is None else parent.path
            for blocker, via in lookups.blockers(here):
                for hops in lookups.heirs(blocker):
                    heir = hops[-1]
                    if heir in seen or heir in level:
                        continue
                    reason = lookups.reason(heir, via)
                    if reason is None:
                        continue  # relied on or done: neither it nor its blockers hold us up
                    stands_for = blocker if heir != blocker else None
                    level[heir] = Blocker(heir, reason, depth, via, trail + hops, stands_for)
        ordered = [level[k] for k in sorted(level)]
        seen.update(level)
        chain.extend(ordered)
        frontier = list(ordered)
    return chain


def _blocked_chain(
    G: nx.MultiDiGraph[str], node_id: str, lookups: _Lookups | None = None
) -> BlockedChain:
    chain = _chain(G, node_id, lookups)
    direct = [b for b in chain if b.depth == 1]
    return BlockedChain(node_id, bool(direct), direct, chain)


@overload
def get_blocked_chain(G: nx.MultiDiGraph[str], node_id: str) -> BlockedChain: ...


@overload
def get_blocked_chain(G: nx.MultiDiGraph[str], node_id: None = None) -> list[BlockedChain]: ...


def get_blocked_chain(
    G: nx.MultiDiGraph[str], node_id: str | None = None
) -> BlockedChain | list[BlockedChain]:
    """What keeps a decision from proceeding: its blockers, direct and transitive.

    See the module docstring for what blocks what: a ``depends_on`` target only when it cannot
    be relied on (rejected, failed, abandoned, proposed), a ``blocks`` source until it is done.

    Parameters
    ----------
    G : networkx.MultiDiGraph
    node_id : str, optional
        The decision to explain. ``None`` lists every blocked active decision instead.

    Returns
    -------
    BlockedChain or list of BlockedChain
        For ``node_id``: its chain (``blocked`` is False and the lists empty when nothing holds
        it up). For ``None``: the chains of every blocked active decision, ordered by (chain
        length desc, id), so the most entangled come first.

    Raises
    ------
    NodeNotFoundError
        ``node_id`` is not in the graph.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> a, b, c, d = "aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"
    >>> G = build_graph(
    ...     [a, b, c, {"id": d, "lifecycle": "proposed"}],
    ...     [(a, b, "blocks"), (c, a, "depends_on"), (c, d, "depends_on")],
    ... )
    >>> found = get_blocked_chain(G, c)
    >>> found.blocked, [(x.node_id, x.reason, x.via_type.value, x.path) for x in found.chain]
    (True, [('dddddddd', 'proposed', 'depends_on', ['cccccccc', 'dddddddd'])])
    >>> [(x.node_id, [y.node_id for y in x.chain]) for x in get_blocked_chain(G)]
    [('bbbbbbbb', ['aaaaaaaa']), ('cccccccc', ['dddddddd'])]

    ``c`` relies on the accepted ``a`` as it stands (not yet reviewed is no reason to wait),
    but not on the proposed ``d``; ``b`` waits until ``a`` is done (reviewed as a success).
    """
    if node_id is not None:
        return _blocked_chain(G, check_node(G, node_id))
    found: list[BlockedChain] = []
    lookups = _Lookups(G)
    for node in sorted(G.nodes):
        kind = G.nodes[node].get("kind", NodeKind.DECISION.value)
        if kind == NodeKind.DECISION.value and is_active(G, node) and lookups.blockers(node):
            item = _blocked_chain(G, node, lookups)
            if item.blocked:
                found.append(item)
    found.sort(key=lambda c: (-len(c.chain), c.node_id))
    return found


def all_blocked(G: nx.MultiDiGraph[str]) -> list[BlockedChain]:
    """Every blocked active decision: ``get_blocked_chain(G)`` under its own name.

    Examples
    --------
    >>> from graph.builders import build_graph
    >>> a, b, c = "aaaaaaaa", "bbbbbbbb", "cccccccc"
    >>> G = build_graph([a, b, c], [(a, b, "blocks"), (b, c, "blocks")])
    >>> [(x.node_id, [y.node_id for y in x.chain]) for x in all_blocked(G)]
    [('cccccccc', ['bbbbbbbb', 'aaaaaaaa']), ('bbbbbbbb', ['aaaaaaaa'])]
    """
    return get_blocked_chain(G)
