"""Derived node state read off the graph: effective lifecycle, activity, resolution."""

from __future__ import annotations

import networkx as nx

from .builders import raw_adjacency
from .enums import EdgeType, Lifecycle, Outcome, ReviewStatus

INACTIVE = frozenset({Lifecycle.SUPERSEDED, Lifecycle.REJECTED})
RESOLVED_OUTCOMES = frozenset({Outcome.SUCCESS.value, Outcome.PARTIAL.value})


def successors_of(G: nx.MultiDiGraph[str], node_id: str) -> list[str]:
    """Ids of the nodes that supersede ``node_id`` (sources of incoming ``supersedes``), sorted."""
    return sorted(
        u for u, _, key in G.in_edges(node_id, keys=True) if key == EdgeType.SUPERSEDES.value
    )


def is_superseded(G: nx.MultiDiGraph[str], node_id: str) -> bool:
    """Whether some node supersedes ``node_id`` (checked on the raw dicts: recall asks a lot)."""
    key = EdgeType.SUPERSEDES.value
    return any(key in keyed for keyed in raw_adjacency(G).pred[node_id].values())


def effective_lifecycle(G: nx.MultiDiGraph[str], node_id: str) -> Lifecycle:
    """The stored lifecycle, or ``superseded`` when some node supersedes this one."""
    if is_superseded(G, node_id):
        return Lifecycle.SUPERSEDED
    return Lifecycle(G.nodes[node_id].get("lifecycle", Lifecycle.ACCEPTED.value))


def is_active(G: nx.MultiDiGraph[str], node_id: str) -> bool:
    """Active means neither superseded nor rejected."""
    return effective_lifecycle(G, node_id) not in INACTIVE


def is_resolved(G: nx.MultiDiGraph[str], node_id: str) -> bool:
    """A decision is resolved once reviewed with a ``success`` or ``partial`` outcome."""
    attrs = G.nodes[node_id]
    return (
        attrs.get("status") == ReviewStatus.REVIEWED.value
        and attrs.get("outcome") in RESOLVED_OUTCOMES
    )
