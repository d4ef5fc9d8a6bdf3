"""Derived node state read off the graph: effective lifecycle, activity, resolution.

Two axes describe a decision, and every answer reports both the same way:

- ``status`` (CSTP's): has the outcome been reviewed yet, ``pending`` or ``reviewed``; stored.
- ``lifecycle`` (decigraph's): ``proposed``, ``accepted``, ``rejected`` or ``superseded``. The
  first three are stored; ``superseded`` is derived from an incoming ``supersedes`` edge and
  wins over the stored value. This *effective* lifecycle is the only one any answer, filter or
  export reports (:func:`node_state`, :func:`reported_attrs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


def lifecycle_of(attrs: Mapping[str, Any], superseded: bool) -> Lifecycle:
    """The effective lifecycle of a node with these attributes: ``superseded`` when some node
    supersedes it, else the stored one (``accepted`` when none is stored)."""
    if superseded:
        return Lifecycle.SUPERSEDED
    return Lifecycle(attrs.get("lifecycle", Lifecycle.ACCEPTED.value))


def effective_lifecycle(G: nx.MultiDiGraph[str], node_id: str) -> Lifecycle:
    """The stored lifecycle, or ``superseded`` when some node supersedes this one."""
    return lifecycle_of(G.nodes[node_id], is_superseded(G, node_id))


def superseded_ids(G: nx.MultiDiGraph[str], node_id: str) -> list[str]:
    """Ids of the nodes ``node_id`` supersedes (targets of its ``supersedes`` edges), sorted."""
    return sorted(
        v for _, v, key in G.out_edges(node_id, keys=True) if key == EdgeType.SUPERSEDES.value
    )


@dataclass(frozen=True)
class NodeState:
    """A node's state as every answer reports it."""

    lifecycle: Lifecycle
    """Effective: ``superseded`` whenever a node supersedes this one."""
    status: ReviewStatus
    """CSTP's review status."""
    superseded_by: tuple[str, ...]
    """The nodes that supersede this one, sorted."""
    supersedes: tuple[str, ...]
    """The nodes this one supersedes, sorted."""


def node_state(G: nx.MultiDiGraph[str], node_id: str) -> NodeState:
    """The one reading of a node's state that answers report (see the module docstring)."""
    attrs = G.nodes[node_id]
    newer = successors_of(G, node_id)
    return NodeState(
        lifecycle=lifecycle_of(attrs, bool(newer)),
        status=ReviewStatus(attrs.get("status", ReviewStatus.PENDING.value)),
        superseded_by=tuple(newer),
        supersedes=tuple(superseded_ids(G, node_id)),
    )


#: The attribute an export adds when the effective lifecycle hides the stored one.
STORED_LIFECYCLE = "stored_lifecycle"
#: The node's salience when an export carries it (derived: never stored).
SALIENCE = "salience"


def reported_attrs(G: nx.MultiDiGraph[str], node_id: str) -> dict[str, Any]:
    """A node's attributes as exports and tables report them: ``lifecycle`` is the effective
    one; when that differs from the stored value, ``stored_lifecycle`` keeps the stored one so
    the export reads back exactly (:func:`stored_attrs`)."""
    attrs = dict(G.nodes[node_id])
    if is_superseded(G, node_id):
        attrs[STORED_LIFECYCLE] = attrs.get("lifecycle", Lifecycle.ACCEPTED.value)
        attrs["lifecycle"] = Lifecycle.SUPERSEDED.value
    return attrs


def stored_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Undo :func:`reported_attrs`: the attributes the store keeps (``superseded`` is derived
    from the ``supersedes`` edges, which an export carries; ``salience`` from the graph)."""
    out = dict(attrs)
    out.pop(SALIENCE, None)
    stored = out.pop(STORED_LIFECYCLE, None)
    if out.get("lifecycle") == Lifecycle.SUPERSEDED.value:
        out["lifecycle"] = stored or Lifecycle.ACCEPTED.value
    return out


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
