"""``import`` events: loading exported nodes and edges into a store through its event log.

An import is planned in full before anything is written (:func:`plan_import`): every node and
edge of the document is checked against the graph and against the rest of the document (ids
free, external ids unique, endpoints present, no self-loops, acyclic types stay acyclic, the two
directions of a symmetric edge agree). Only then is it cut into events of at most
:data:`MAX_ITEMS_PER_EVENT` items, nodes first, so log lines stay bounded. Each event carries its
nodes and edges verbatim (ids, versions, timestamps, reviews, lifecycle; edge weights, origins,
authors) and is validated again by the reducer (:func:`check_new_items`) before it is appended.

Importing into a non-empty store is allowed. A node or edge that is already stored with the same
attributes is skipped (so re-running an interrupted import finishes it); one that is stored with
different attributes is a collision, refused before anything is written.

Examples
--------
>>> from graph.builders import build_graph
>>> from graph.importer import read_export
>>> from graph.export import export_graph
>>> G = build_graph(["aaaaaaaa", "bbbbbbbb"], [("aaaaaaaa", "bbbbbbbb", "relates_to")])
>>> nodes, edges = read_export("d3", export_graph(G, "d3"))
>>> plan = plan_import(build_graph([]), {}, nodes, edges)
>>> len(plan.payloads), plan.report.nodes, plan.report.edges  # the mirror is one edge
(1, 2, 1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from .enums import EdgeType
from .errors import CycleError, DuplicateIdError, NodeNotFoundError, SelfLoopError, ValidationError
from .model import Edge, Node

MAX_ITEMS_PER_EVENT = 1000
"""Nodes plus edges carried by one ``import`` event."""


@dataclass(frozen=True)
class ImportReport:
    """What an import wrote (edges counted once, symmetric or not) and what it found stored."""

    nodes: int = 0
    edges: int = 0
    skipped_nodes: int = 0
    skipped_edges: int = 0
    events: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "nodes": self.nodes,
            "edges": self.edges,
            "skippedNodes": self.skipped_nodes,
            "skippedEdges": self.skipped_edges,
            "events": self.events,
        }


@dataclass(frozen=True)
class ImportPlan:
    payloads: list[dict[str, Any]]
    report: ImportReport


def plan_import(
    G: nx.MultiDiGraph[str],
    external_ids: Mapping[str, str],
    nodes: Sequence[Node],
    edges: Sequence[Edge],
    *,
    chunk: int = MAX_ITEMS_PER_EVENT,
    note: Mapping[str, Any] | None = None,
) -> ImportPlan:
    """Check a whole document against ``G`` and cut what is new into event payloads.

    Parameters
    ----------
    G : networkx.MultiDiGraph
        The current graph (not modified).
    external_ids : mapping
        External id -> node id of the stored memory items.
    nodes, edges : sequences
        The document, e.g. from :func:`graph.importer.read_export`.
    chunk : int
        Most nodes plus edges per event.
    note : mapping, optional
        Kept in every payload for the audit trail (with ``part`` and ``parts``); replay ignores it.

    Returns
    -------
    ImportPlan
        The payloads, in order, and the counts.

    Raises
    ------
    DecigraphError
        The first problem found; nothing has been written.
    """
    if chunk < 1:
        raise ValidationError("chunk", "must be at least 1")
    fresh_nodes, skipped_nodes = _fresh_nodes(G, nodes)
    fresh_edges, skipped_edges = _fresh_edges(G, edges)
    check_new_items(G, external_ids, fresh_nodes, fresh_edges)
    items: list[tuple[str, dict[str, Any]]] = [
        ("nodes", {"id": node.id, **node.to_attrs()}) for node in fresh_nodes
    ]
    items += [("edges", edge.model_dump(mode="json", exclude_none=True)) for edge in fresh_edges]
    parts = (len(items) + chunk - 1) // chunk
    payloads: list[dict[str, Any]] = []
    for part, start in enumerate(range(0, len(items), chunk), start=1):
        payload: dict[str, Any] = {"nodes": [], "edges": []}
        for key, item in items[start : start + chunk]:
            payload[key].append(item)
        payload["note"] = {**(note or {}), "part": part, "parts": parts}
        payloads.append(payload)
    report = ImportReport(
        len(fresh_nodes), len(fresh_edges), skipped_nodes, skipped_edges, len(payloads)
    )
    return ImportPlan(payloads, report)


def check_new_items(
    G: nx.MultiDiGraph[str],
    external_ids: Mapping[str, str],
    nodes: Sequence[Node],
    edges: Sequence[Edge],
) -> None:
    """Raise unless ``nodes`` and ``edges`` can all be added to ``G`` as new items.

    Every node id and external id must be free (in ``G`` and among ``nodes``), every edge new
    (a symmetric edge in either direction), its endpoints stored or among ``nodes``, and the
    acyclic types must stay acyclic.
    """
    new_ids: set[str] = set()
    new_external: dict[str, str] = {}
    for node in nodes:
        if node.id in G or node.id in new_ids:
            raise DuplicateIdError(node.id)
        new_ids.add(node.id)
        if node.external_id is not None:
            owner = external_ids.get(node.external_id) or new_external.get(node.external_id)
            if owner is not None:
                raise ValidationError(
                    f"node {node.id!r}: external_id",
                    f"{node.external_id!r} already names {owner!r}",
                )
            new_external[node.external_id] = node.id
    seen: set[tuple[str, str, str]] = set()
    for edge in edges:
        name = edge_name(edge)
        for end, field in ((edge.source, "source"), (edge.target, "target")):
            if end not in G and end not in new_ids:
                raise NodeNotFoundError(end, f"{name}: {field}")
        if edge.source == edge.target:
            raise SelfLoopError(edge.source, edge.type.value)
        key = edge.type.value
        pairs = [(edge.source, edge.target)]
        if edge.type.symmetric:
            pairs.append((edge.target, edge.source))
        for u, v in pairs:
            if G.has_edge(u, v, key) or (u, v, key) in seen:
                raise ValidationError(name, "already exists")
        seen.add((edge.source, edge.target, key))
    _check_acyclic(G, edges)


def edge_name(edge: Edge) -> str:
    """How messages name an edge: ``edge 'a' -depends_on-> 'b'``."""
    return f"edge {edge.source!r} -{edge.type.value}-> {edge.target!r}"


def _fresh_nodes(G: nx.MultiDiGraph[str], nodes: Sequence[Node]) -> tuple[list[Node], int]:
    seen: dict[str, Node] = {}
    fresh: list[Node] = []
    skipped = 0
    for node in nodes:
        if node.id in seen:
            if seen[node.id] != node:
                raise DuplicateIdError(node.id, "twice in the import, with different attributes")
            continue
        seen[node.id] = node
        if node.id not in G:
            fresh.append(node)
            continue
        stored, attrs = dict(G.nodes[node.id]), node.to_attrs()
        if stored != attrs:
            field = min(k for k in {*stored, *attrs} if stored.get(k) != attrs.get(k))
            raise DuplicateIdError(
                node.id,
                f"with different attributes ({field}: stored {stored.get(field)!r}, imported "
                f"{attrs.get(field)!r}); import into an empty data directory, or forget it first",
            )
        skipped += 1
    return fresh, skipped


def _fresh_edges(G: nx.MultiDiGraph[str], edges: Sequence[Edge]) -> tuple[list[Edge], int]:
    seen: dict[tuple[str, str, str], Edge] = {}
    fresh: list[Edge] = []
    skipped = 0
    for edge in edges:
        key = edge.type.value
        previous = seen.get((edge.source, edge.target, key))
        if previous is None and edge.type.symmetric:
            previous = seen.get((edge.target, edge.source, key))
        if previous is not None:
            if previous.to_attrs() != edge.to_attrs():
                problem = (
                    "appears twice with different attributes"
                    if previous.source == edge.source
                    else f"differs from its mirror (a {key!r} edge is the same both ways)"
                )
                raise ValidationError(edge_name(edge), problem)
            continue
        seen[(edge.source, edge.target, key)] = edge
        stored = G.get_edge_data(edge.source, edge.target, key=key)
        if stored is None and edge.type.symmetric:
            stored = G.get_edge_data(edge.target, edge.source, key=key)
        if stored is None:
            fresh.append(edge)
        elif dict(stored) == edge.to_attrs():
            skipped += 1
        else:
            raise ValidationError(edge_name(edge), "is already stored with different attributes")
    return fresh, skipped


def _check_acyclic(G: nx.MultiDiGraph[str], edges: Sequence[Edge]) -> None:
    """Refuse, naming a cycle, if ``edges`` close one in a type that must stay acyclic."""
    types = sorted({e.type.value for e in edges if e.type.acyclic})
    if not types:
        return
    graphs: dict[str, nx.DiGraph[str]] = {key: nx.DiGraph() for key in types}
    for u, v, key in G.edges(keys=True):
        if key in graphs:
            graphs[key].add_edge(u, v)
    for edge in edges:
        if edge.type.value in graphs:
            graphs[edge.type.value].add_edge(edge.source, edge.target)
    for key, H in graphs.items():
        if not nx.is_directed_acyclic_graph(H):
            cycle = nx.find_cycle(H)
            path = [u for u, _ in cycle] + [cycle[0][0]]
            raise CycleError(EdgeType(key).value, path)
