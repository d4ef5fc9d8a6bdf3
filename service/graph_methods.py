"""F045 graph methods over JSON-RPC: getGraph, getNeighbors, findPath, ancestors/descendants,
contradictions, blocked chains and salience. Thin: params model in, free function, shape out."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from graph.algorithms.contradictions import Blocker, find_contradictions, get_blocked_chain
from graph.algorithms.paths import find_path
from graph.algorithms.salience import get_high_salience
from graph.algorithms.traversal import ancestors, descendants, get_graph, get_neighbors
from graph.algorithms.walk import EdgeRef
from graph.enums import Direction, EdgeType
from graph.errors import NodeNotFoundError
from graph.lifecycle import effective_lifecycle
from graph.timeutil import format_ts

from .application import Decigraph
from .methods import Params
from .rpc import CallContext, Registry


class GraphParams(Params):
    node_id: str
    depth: int = Field(default=1, ge=1, le=5)
    edge_types: list[EdgeType] | None = None
    direction: Direction = Direction.BOTH


class NeighborsParams(Params):
    node_id: str
    direction: Direction = Direction.BOTH
    edge_type: EdgeType | None = None
    limit: int = Field(default=20, ge=1, le=100)


class PathParams(Params):
    source_id: str
    target_id: str
    edge_types: list[EdgeType] | None = None
    max_paths: int = Field(default=1, ge=1, le=50)
    max_length: int = Field(default=6, ge=1, le=12)
    directed: bool = False


class LineageParams(Params):
    node_id: str
    edge_types: list[EdgeType] | None = None
    max_depth: int | None = Field(default=None, ge=1, le=50)


class ContradictionParams(Params):
    status: str | None = Field(default=None, pattern="^(active|all)$")
    limit: int = Field(default=20, ge=1, le=500)


class BlockedParams(Params):
    node_id: str | None = None


class EmptyParams(Params):
    pass


class HighSalienceParams(Params):
    limit: int = Field(default=10, ge=1, le=500)
    active_only: bool = False


def edge_view(edge: EdgeRef) -> dict[str, Any]:
    view: dict[str, Any] = {
        "sourceId": edge.source,
        "targetId": edge.target,
        "edgeType": edge.type.value,
        "weight": edge.weight,
        "createdAt": format_ts(edge.created_at),
        "createdBy": edge.created_by,
        "origin": edge.origin,
    }
    if edge.context:
        view["context"] = edge.context
    return view


class GraphMethods:
    """The handlers, bound to one application."""

    def __init__(self, app: Decigraph) -> None:
        self.app = app
        self.G = app.store.graph

    def need(self, node_id: str, field: str) -> None:
        if node_id not in self.G:
            raise NodeNotFoundError(node_id, field)

    def node_card(self, node_id: str) -> dict[str, Any]:
        attrs = self.G.nodes[node_id]
        card: dict[str, Any] = {
            "id": node_id,
            "kind": attrs.get("kind", "decision"),
            "summary": str(attrs["text"])[:200],
            "date": attrs.get("occurred_at") or attrs["created_at"],
            "lifecycle": effective_lifecycle(self.G, node_id).value,
            "inDegree": self.G.in_degree(node_id),
            "outDegree": self.G.out_degree(node_id),
        }
        for key in ("category", "stakes", "confidence", "outcome", "tags", "pattern", "status"):
            if key in attrs:
                card[key] = attrs[key]
        return card

    def get_graph_(self, p: GraphParams, ctx: CallContext) -> Mapping[str, Any]:
        with self.app.store.lock:
            self.need(p.node_id, "nodeId")
            sub = get_graph(self.G, p.node_id, p.depth, p.edge_types, p.direction)
            salience = self.app.store.salience()  # cached per log position; sizes the explorer
            return {
                "centerId": sub.center_id,
                "depth": sub.depth,
                "nodes": [
                    {
                        **self.node_card(n.id),
                        "distance": n.distance,
                        "salience": salience.get(n.id, 0.0),
                    }
                    for n in sub.nodes
                ],
                "edges": [edge_view(e) for e in sub.edges],
            }

    def neighbors(self, p: NeighborsParams, ctx: CallContext) -> Mapping[str, Any]:
        with self.app.store.lock:
            self.need(p.node_id, "nodeId")
            page, total = get_neighbors(self.G, p.node_id, p.direction, p.edge_type, p.limit)
            return {
                "nodeId": p.node_id,
                "neighbors": [
                    {
                        "node": self.node_card(n.node_id),
                        "direction": n.direction.value,
                        "edge": edge_view(n.edge),
                    }
                    for n in page
                ],
                "total": total,
            }

    def path(self, p: PathParams, ctx: CallContext) -> Mapping[str, Any]:
        with self.app.store.lock:
            self.need(p.source_id, "sourceId")
            self.need(p.target_id, "targetId")
            found = find_path(
                self.G,
                p.source_id,
                p.target_id,
                p.edge_types,
                directed=p.directed,
                max_paths=p.max_paths,
                max_length=p.max_length,
            )
            result: dict[str, Any] = {"found": bool(found), "path": [], "edges": [], "length": None}
            if found:
                best = found[0]
                result.update(
                    path=best.nodes, edges=[edge_view(e) for e in best.edges], length=best.length
                )
            if p.max_paths > 1:
                result["paths"] = [
                    {"path": f.nodes, "edges": [edge_view(e) for e in f.edges], "length": f.length}
                    for f in found
                ]
            return result

    def lineage(self, walk: Any) -> Any:
        def handler(p: LineageParams, ctx: CallContext) -> Mapping[str, Any]:
            with self.app.store.lock:
                self.need(p.node_id, "nodeId")
                types = p.edge_types or [EdgeType.DEPENDS_ON]
                reached = walk(self.G, p.node_id, types, p.max_depth)
                return {
                    "nodeId": p.node_id,
                    "nodes": [
                        {**self.node_card(r.node_id), "depth": r.depth, "via": edge_view(r.via)}
                        for r in reached
                    ],
                }

        return handler

    def contradictions(self, p: ContradictionParams, ctx: CallContext) -> Mapping[str, Any]:
        with self.app.store.lock:
            found = find_contradictions(
                self.G, self.app.store.salience(), include_inactive=p.status == "all", limit=p.limit
            )
            return {
                "contradictions": [
                    {
                        "a": c.a,
                        "b": c.b,
                        "salienceAtStake": c.salience_at_stake,
                        "aSalience": c.a_salience,
                        "bSalience": c.b_salience,
                        "aSummary": str(self.G.nodes[c.a]["text"])[:200],
                        "bSummary": str(self.G.nodes[c.b]["text"])[:200],
                        "edge": edge_view(c.edge),
                    }
                    for c in found
                ],
                "total": len(found),
            }

    def blocker_view(self, b: Blocker) -> dict[str, Any]:
        view: dict[str, Any] = {
            "nodeId": b.node_id,
            "reason": b.reason,
            "depth": b.depth,
            "viaType": b.via_type.value,
            "path": b.path,
            "summary": str(self.G.nodes[b.node_id]["text"])[:200],
        }
        if b.stands_for:
            view["standsFor"] = b.stands_for
        return view

    def blocked(self, p: BlockedParams, ctx: CallContext) -> Mapping[str, Any]:
        with self.app.store.lock:
            if p.node_id is None:
                chains = get_blocked_chain(self.G)
                return {
                    "blocked": [
                        {
                            "nodeId": c.node_id,
                            "blockers": [self.blocker_view(b) for b in c.blockers],
                        }
                        for c in chains
                    ],
                    "total": len(chains),
                }
            self.need(p.node_id, "nodeId")
            chain = get_blocked_chain(self.G, p.node_id)
            return {
                "nodeId": chain.node_id,
                "blocked": chain.blocked,
                "blockers": [self.blocker_view(b) for b in chain.blockers],
                "chain": [self.blocker_view(b) for b in chain.chain],
            }

    def compute(self, p: EmptyParams, ctx: CallContext) -> Mapping[str, Any]:
        started = time.perf_counter()
        scores = self.app.store.salience()
        return {
            "computed": len(scores),
            "durationMs": round((time.perf_counter() - started) * 1e3, 2),
        }

    def high(self, p: HighSalienceParams, ctx: CallContext) -> Mapping[str, Any]:
        with self.app.store.lock:
            top = get_high_salience(
                self.G, self.app.store.salience(), p.limit, active_only=p.active_only
            )
            return {"decisions": [{**self.node_card(i), "salience": s} for i, s in top]}


def register_graph(registry: Registry, app: Decigraph) -> None:
    methods = GraphMethods(app)
    registry.add("cstp.getGraph", GraphParams, methods.get_graph_)
    registry.add("cstp.getNeighbors", NeighborsParams, methods.neighbors)
    registry.add("cstp.findPath", PathParams, methods.path)
    registry.add("cstp.getAncestors", LineageParams, methods.lineage(ancestors))
    registry.add("cstp.getDescendants", LineageParams, methods.lineage(descendants))
    registry.add("cstp.findContradictions", ContradictionParams, methods.contradictions)
    registry.add("cstp.getBlockedChain", BlockedParams, methods.blocked)
    registry.add("cstp.computeSalience", EmptyParams, methods.compute)
    registry.add("cstp.getHighSalience", HighSalienceParams, methods.high)
