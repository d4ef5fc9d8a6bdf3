"""Salience-based compaction tiers, as a computed view.

Nothing here deletes or rewrites a node: :func:`compaction_plan` only says, per node, how a
consumer (a context builder, an export) should present it and from when. The event log keeps
every decision in full.

======================  ==========  ========  ===============================================
tier                    action      due       rule (checked in this order)
======================  ==========  ========  ===============================================
``superseded``          ``fold``    at once   effective lifecycle is superseded: fold into
                                              the active successor (end of its supersedes
                                              chain; the smallest id if there are several)
``high``                ``keep``    never     top ``high_fraction`` of the other nodes by
                                              salience (desc, ties by id asc), ceil(f * N),
                                              but only nodes something relies on
                                              (salience > 0)
``low``                 ``digest``  14 days   reviewed leaf: at most one decision edge
                                              (symmetric edges counted once)
``medium``              ``summary`` 30 days   everything else
======================  ==========  ========  ===============================================

Ages run from the node's ``created_at``; a superseded node is due from the time it was
superseded (its earliest incoming ``supersedes`` edge).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

import networkx as nx

from graph.builders import Keyed, raw_adjacency
from graph.enums import DECISION_EDGE_TYPES as RELATIONS
from graph.enums import EdgeType, ReviewStatus
from graph.errors import ValidationError
from graph.timeutil import parse_ts, to_utc

from .salience import salience_percentiles

__all__ = [
    "ACTIONS",
    "DECISION_EDGE_TYPES",
    "TIERS",
    "CompactionEntry",
    "compaction_plan",
    "summarise_plan",
]

Tier = Literal["high", "medium", "low", "superseded"]
Action = Literal["keep", "summary", "digest", "fold"]

TIERS: tuple[Tier, ...] = ("high", "medium", "low", "superseded")
ACTIONS: tuple[Action, ...] = ("keep", "summary", "digest", "fold")

#: The decision relations: only these count towards a node being a leaf.
DECISION_EDGE_TYPES: frozenset[str] = frozenset(t.value for t in RELATIONS)
_SYMMETRIC: frozenset[str] = frozenset(t.value for t in EdgeType if t.symmetric)
_SUPERSEDES = EdgeType.SUPERSEDES.value


@dataclass(frozen=True)
class CompactionEntry:
    """How one node should be compacted, and from when."""

    node_id: str
    tier: Tier
    action: Action
    due: bool
    """Whether ``due_at`` has passed (always true for ``fold``, never for ``keep``)."""
    due_at: datetime | None
    """When the action applies; ``None`` for ``keep``."""
    fold_into: str | None
    """For ``fold``: the active successor that absorbs this node."""
    reason: str


def _direct_successors(pred: dict[str, Keyed]) -> dict[str, list[str]]:
    """For each superseded node, the nodes that supersede it, sorted."""
    found: dict[str, list[str]] = {}
    for node_id, neighbours in pred.items():
        newer = [u for u, keys in neighbours.items() if _SUPERSEDES in keys]
        if newer:
            found[node_id] = sorted(newer)
    return found


def _decision_degree(
    succ: dict[str, Keyed], pred: dict[str, Keyed], node_id: str, cap: int = 2
) -> int:
    """Decision edges at ``node_id``, counted up to ``cap`` (only "leaf or not" matters,
    and hubs have thousands); a symmetric edge, stored both ways, counts once."""
    directed = 0
    symmetric: set[tuple[str, str]] = set()
    for neighbours in (succ[node_id], pred[node_id]):
        for other, keys in neighbours.items():
            for key in keys:
                if key not in DECISION_EDGE_TYPES:
                    continue
                if key in _SYMMETRIC:
                    symmetric.add((key, other))
                else:
                    directed += 1
            if directed + len(symmetric) >= cap:
                return cap
    return directed + len(symmetric)


def _active_successors(
    newer: Mapping[str, list[str]], start: str, memo: dict[str, tuple[str, ...]]
) -> tuple[str, ...]:
    """Sorted ends of ``start``'s supersedes chains (``(start,)`` if it is not superseded).

    Iterative, because chains can be longer than Python's recursion limit; ``memo`` is shared
    across calls so each node is resolved once.
    """
    stack: list[tuple[str, bool]] = [(start, False)]
    on_path: set[str] = set()
    while stack:
        node, expanded = stack.pop()
        if expanded:
            on_path.discard(node)
            after = newer.get(node, ())
            memo[node] = tuple(sorted({h for s in after for h in memo[s]})) if after else (node,)
            continue
        if node in memo:
            continue
        if node in on_path:
            raise ValidationError("supersedes", f"the supersedes edges form a cycle at {node!r}")
        on_path.add(node)
        stack.append((node, True))
        stack.extend((s, False) for s in newer.get(node, ()) if s not in memo)
    return memo[start]


def _created_at(G: nx.MultiDiGraph[str], node_id: str) -> datetime:
    raw = G.nodes[node_id].get("created_at")
    if raw is None:
        raise ValidationError(f"{node_id}.created_at", "is missing")
    return parse_ts(raw)


def _superseded_at(G: nx.MultiDiGraph[str], pred: dict[str, Keyed], node_id: str) -> datetime:
    """When ``node_id`` was first superseded (its node time if the edges carry none)."""
    times = [
        parse_ts(keys[_SUPERSEDES]["created_at"])
        for keys in pred[node_id].values()
        if "created_at" in keys.get(_SUPERSEDES, {})
    ]
    return min(times) if times else _created_at(G, node_id)


def _high_count(fraction: float, population: int) -> int:
    # Rounding first keeps float noise from adding a node: 0.14 * 50 is 7.000000000000001.
    return math.ceil(round(fraction * population, 9))


def _check(high_fraction: float, medium_after: timedelta, low_after: timedelta) -> None:
    if isinstance(high_fraction, bool) or not isinstance(high_fraction, int | float):
        raise ValidationError("high_fraction", f"must be a number, got {high_fraction!r}")
    if not 0 <= high_fraction <= 1:
        raise ValidationError("high_fraction", f"must be between 0 and 1, got {high_fraction!r}")
    for name, value in (("medium_after", medium_after), ("low_after", low_after)):
        if not isinstance(value, timedelta) or value < timedelta(0):
            raise ValidationError(name, f"must be a non-negative timedelta, got {value!r}")


def compaction_plan(
    G: nx.MultiDiGraph[str],
    salience: Mapping[str, float],
    now: datetime,
    *,
    high_fraction: float = 0.2,
    medium_after: timedelta = timedelta(days=30),
    low_after: timedelta = timedelta(days=14),
) -> list[CompactionEntry]:
    """Assign every node a compaction tier and action (see the module docstring for the rules).

    Parameters
    ----------
    G : networkx.MultiDiGraph
        The decision graph; it is only read.
    salience : mapping
        ``{node_id: score}`` covering every node of ``G``, e.g. from
        :func:`graph.algorithms.salience.compute_salience`; other ids are ignored.
    now : datetime
        The reference time for ``due`` (naive means UTC).
    high_fraction : float, default 0.2
        Share of the non-superseded nodes kept in full, in [0, 1]; ``ceil(f * N)`` nodes, or
        fewer when fewer have a salience above 0.
    medium_after, low_after : timedelta
        Age after which a medium node is summarised / a low node digested.

    Returns
    -------
    list of CompactionEntry
        One per node, sorted by node id.

    Raises
    ------
    ValidationError
        For out-of-range arguments, a node without a score or ``created_at``, or a cycle of
        ``supersedes`` edges.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> from graph.algorithms.salience import compute_salience
    >>> from graph.builders import build_graph
    >>> G = build_graph(
    ...     [
    ...         "aaaaaaaa",
    ...         {"id": "bbbbbbbb", "status": "reviewed", "outcome": "success"},
    ...         "cccccccc",
    ...         "dddddddd",
    ...         "eeeeeeee",
    ...     ],
    ...     [
    ...         ("bbbbbbbb", "aaaaaaaa", "depends_on"),
    ...         ("cccccccc", "aaaaaaaa", "depends_on"),
    ...         ("dddddddd", "cccccccc", "relates_to"),
    ...         ("eeeeeeee", "dddddddd", "supersedes"),
    ...     ],
    ... )
    >>> plan = compaction_plan(G, compute_salience(G), datetime(2026, 1, 20, tzinfo=UTC))
    >>> for entry in plan:
    ...     print(entry.node_id, entry.tier, entry.action, entry.due, entry.fold_into)
    aaaaaaaa high keep False None
    bbbbbbbb low digest True None
    cccccccc medium summary False None
    dddddddd superseded fold True eeeeeeee
    eeeeeeee medium summary False None
    """
    _check(high_fraction, medium_after, low_after)
    if not isinstance(now, datetime):
        raise ValidationError("now", f"must be a datetime, got {now!r}")
    now = to_utc(now)
    nodes = sorted(G)
    missing = [node_id for node_id in nodes if node_id not in salience]
    if missing:
        raise ValidationError("salience", f"has no score for {missing[0]!r}")
    _, succ, pred = raw_adjacency(G)
    newer = _direct_successors(pred)
    memo: dict[str, tuple[str, ...]] = {}
    heirs = {node_id: _active_successors(newer, node_id, memo) for node_id in nodes}
    current = [node_id for node_id in nodes if heirs[node_id] != (node_id,)]
    live = sorted(
        (node_id for node_id in nodes if heirs[node_id] == (node_id,)),
        key=lambda node_id: (-salience[node_id], node_id),
    )
    # Salience is 0 for a node nothing relies on (graph.algorithms.salience): such a node is
    # never kept in full for its rank alone, however few nodes are relied on.
    relied_on = sum(1 for node_id in live if salience[node_id] > 0)
    high_count = min(_high_count(high_fraction, len(live)), relied_on)
    rank = {node_id: i + 1 for i, node_id in enumerate(live)}
    percentile = salience_percentiles({node_id: salience[node_id] for node_id in nodes})

    plan: dict[str, CompactionEntry] = {}
    for node_id in current:
        fold = heirs[node_id][0]
        several = f" (smallest of {len(heirs[node_id])})" if len(heirs[node_id]) > 1 else ""
        direct = ", ".join(newer[node_id])
        plan[node_id] = CompactionEntry(
            node_id=node_id,
            tier="superseded",
            action="fold",
            due=True,
            due_at=_superseded_at(G, pred, node_id),
            fold_into=fold,
            reason=f"superseded by {direct}; fold into active successor {fold}{several}",
        )
    for node_id in live:
        standing = (
            f"salience {salience[node_id]:.3f}, rank {rank[node_id]} of {len(live)}, "
            f"above {percentile[node_id]:.0%} of nodes"
        )
        if rank[node_id] <= high_count:
            plan[node_id] = CompactionEntry(
                node_id=node_id,
                tier="high",
                action="keep",
                due=False,
                due_at=None,
                fold_into=None,
                reason=f"{standing}: in the top {high_count}",
            )
            continue
        reviewed = G.nodes[node_id].get("status") == ReviewStatus.REVIEWED.value
        degree = _decision_degree(succ, pred, node_id) if reviewed else None
        created = _created_at(G, node_id)
        if degree is not None and degree <= 1:
            due_at = created + low_after
            plan[node_id] = CompactionEntry(
                node_id=node_id,
                tier="low",
                action="digest",
                due=now >= due_at,
                due_at=due_at,
                fold_into=None,
                reason=f"reviewed leaf ({degree} decision edge{'' if degree == 1 else 's'}); "
                f"{standing}",
            )
            continue
        why = "pending review" if degree is None else "reviewed, but not a leaf"
        due_at = created + medium_after
        plan[node_id] = CompactionEntry(
            node_id=node_id,
            tier="medium",
            action="summary",
            due=now >= due_at,
            due_at=due_at,
            fold_into=None,
            reason=f"{standing}, outside the top {high_count}; {why}",
        )
    return [plan[node_id] for node_id in nodes]


def summarise_plan(entries: Iterable[CompactionEntry]) -> dict[str, dict[str, int]]:
    """Counts per tier, per action, and per action of the entries already due.

    Every tier and action is present (zero if unused), so summaries compare key for key.

    Parameters
    ----------
    entries : iterable of CompactionEntry

    Returns
    -------
    dict
        ``{"tier": {tier: n}, "action": {action: n}, "due": {action: n}}``.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> when = datetime(2026, 1, 1, tzinfo=UTC)
    >>> entries = [
    ...     CompactionEntry("aaaaaaaa", "high", "keep", False, None, None, "top"),
    ...     CompactionEntry("bbbbbbbb", "superseded", "fold", True, when, "aaaaaaaa", "old"),
    ... ]
    >>> summarise_plan(entries)["due"]
    {'keep': 0, 'summary': 0, 'digest': 0, 'fold': 1}
    """
    summary: dict[str, dict[str, int]] = {
        "tier": dict.fromkeys(TIERS, 0),
        "action": dict.fromkeys(ACTIONS, 0),
        "due": dict.fromkeys(ACTIONS, 0),
    }
    for entry in entries:
        summary["tier"][entry.tier] += 1
        summary["action"][entry.action] += 1
        if entry.due:
            summary["due"][entry.action] += 1
    return summary
