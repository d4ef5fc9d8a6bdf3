"""Lifecycle writes: set a decision's lifecycle, forget a node.

Setting a rejected decision back to ``proposed`` or ``accepted`` makes it active again, and an
active decision can contradict an important one: that change is gated exactly like recording
the decision as it reads now (the statement embedded before the lock; the gate and the append
in one critical section; ``override`` as for a record). Rejecting, or moving between the active
states, cannot create a contradiction, nor can forgetting, so those are not gated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from graph.enums import EdgeType, Lifecycle, NodeKind
from graph.lifecycle import effective_lifecycle
from graph.model import Node

from .context import Decigraph
from .gate import Candidate, candidate, judge
from .inputs import ForgetNode, SetLifecycle
from .rules import Verdict
from .writes import admit


@dataclass
class LifecycleSet:
    """A lifecycle change: the node after it, its effective lifecycle before and after (a
    superseded decision stays ``superseded`` whatever is stored), and the verdict when the
    change was gated (``None`` when it could not create a contradiction)."""

    node: Node
    previous: Lifecycle
    lifecycle: Lifecycle
    verdict: Verdict | None = None
    overridden: bool = False


@dataclass
class Forgotten:
    """A forgotten node as it was, and how many edges went with it."""

    node: Node
    edges: int


def _reactivates(G: nx.MultiDiGraph[str], node: Node, target: Lifecycle) -> bool:
    """Whether moving ``node`` to ``target`` makes an inactive decision active again."""
    return (
        node.kind is NodeKind.DECISION
        and target is not Lifecycle.REJECTED
        and effective_lifecycle(G, node.id) is Lifecycle.REJECTED
    )


def _linked(G: nx.MultiDiGraph[str], node_id: str, edge_type: EdgeType) -> list[str]:
    """Nodes linked to ``node_id`` by ``edge_type``: out-edges, and for ``contradicts`` (which
    holds both ways) in-edges too."""
    key = edge_type.value
    linked = {v for _, v, k in G.out_edges(node_id, keys=True) if k == key}
    if edge_type is EdgeType.CONTRADICTS:
        linked |= {u for u, _, k in G.in_edges(node_id, keys=True) if k == key}
    return sorted(linked - {node_id})


def reactivation_candidate(app: Decigraph, node: Node, target: Lifecycle) -> Candidate:
    """``node`` as the gate sees it once active again: its fields with the new lifecycle, the
    decisions it is linked to as contradicting, and those it supersedes (never a conflict)."""
    G = app.store.graph
    fields = {**node.model_dump(mode="json", exclude_none=True), "lifecycle": target.value}
    return candidate(
        fields,
        contradicts=_linked(G, node.id, EdgeType.CONTRADICTS),
        supersedes=_linked(G, node.id, EdgeType.SUPERSEDES),
        node_id=node.id,
    )


def set_lifecycle(app: Decigraph, cmd: SetLifecycle, actor: str) -> LifecycleSet:
    """Move a decision to ``cmd.lifecycle``; bringing a rejected one back is gated."""
    target = Lifecycle(cmd.lifecycle)
    with app.store.writing():  # one critical section: the gate needs no embedding
        current = app.store.get(cmd.id)
        previous = effective_lifecycle(app.store.graph, cmd.id)
        stale = cmd.expected_version is not None and cmd.expected_version != current.version
        if stale or not _reactivates(app.store.graph, current, target):
            return _write(app, cmd, target, actor, previous)
        reactivated = reactivation_candidate(app, current, target)
        verdict = judge(app, reactivated, agent=actor).verdict
        note = admit(verdict, cmd.override)
        if app.on_gated is not None:
            app.on_gated()
        return _write(app, cmd, target, actor, previous, verdict, note)


def _write(
    app: Decigraph,
    cmd: SetLifecycle,
    target: Lifecycle,
    actor: str,
    previous: Lifecycle,
    verdict: Verdict | None = None,
    note: Mapping[str, Any] | None = None,
) -> LifecycleSet:
    """Append the change (hold the store lock) and report it."""
    node = app.store.set_lifecycle(
        cmd.id,
        target,
        actor,
        reason=cmd.reason,
        expected_version=cmd.expected_version,
        note=note,
    )
    now = effective_lifecycle(app.store.graph, cmd.id)
    return LifecycleSet(node, previous, now, verdict, note is not None)


def forget(app: Decigraph, cmd: ForgetNode, actor: str) -> Forgotten:
    """Remove a node and every edge touching it (logged; the log keeps its history)."""
    with app.store.writing():
        node = app.store.get(cmd.id)
        edges = int(app.store.graph.degree(cmd.id))
        app.store.forget(cmd.id, actor, reason=cmd.reason, expected_version=cmd.expected_version)
    return Forgotten(node, edges)
