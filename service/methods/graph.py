"""Graph methods: link and unlink, neighbourhoods, paths, lineage, contradictions,
blocked chains and salience. Thin: params in, one use case, shape out.

``getGraph``, ``getNeighbors`` and ``findPath`` walk the decision relations unless
``includeDerived: true`` adds the derived temporal, entity, semantic and causal edges (or
``edgeTypes``/``edgeType`` names types, which always wins); the ``inDegree``/``outDegree`` of
their nodes count the same edges. ``getAncestors``/``getDescendants`` follow ``depends_on``
unless ``edgeTypes`` says otherwise.

``getGraph`` pages hubs: a neighbourhood of more than ``maxNodes`` nodes (default 500, at most
5000) answers the first ``maxNodes`` in (distance, id) order, with the edges whose later-ranked
end is among them, plus ``truncated: true``, ``totalNodes`` and ``nextCursor``; passing
``cursor: <nextCursor>`` gives the next page (``nextCursor`` is null on the last). Pages in turn
give every node and edge once. A neighbourhood within the cap answers exactly as before (no
extra keys unless a ``cursor`` was sent)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from graph.algorithms.contradictions import Blocker
from graph.algorithms.traversal import MAX_PAGE, Subgraph
from graph.enums import Direction, EdgeType
from graph.timeutil import format_ts
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases import graphs
from service.usecases.inputs import LinkDecisions, UnlinkDecisions

from .history import at_of, stamped
from .params import NoParams, Params, TimeParams, wire
from .views import edge_view, node_card

#: A neighbourhood larger than this comes in pages (``maxNodes``, ``cursor``/``nextCursor``).
DEFAULT_PAGE = 500

EDGE_WIRE = wire(source="sourceId", target="targetId", type="edgeType")


class LinkParams(Params, LinkDecisions):
    model_config = EDGE_WIRE


class UnlinkParams(Params, UnlinkDecisions):
    model_config = EDGE_WIRE


class GraphParams(Params, TimeParams):
    node_id: str
    depth: int = Field(default=1, ge=1, le=5)
    edge_types: list[EdgeType] | None = None
    direction: Direction = Direction.BOTH
    include_derived: bool = False
    max_nodes: int = Field(default=DEFAULT_PAGE, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, pattern=r"^[0-9]{1,12}$")


class NeighborsParams(Params, TimeParams):
    node_id: str
    direction: Direction = Direction.BOTH
    edge_type: EdgeType | None = None
    limit: int = Field(default=20, ge=1, le=100)
    include_derived: bool = False


class PathParams(Params, TimeParams):
    model_config = wire(source="sourceId", target="targetId")

    source: str
    target: str
    edge_types: list[EdgeType] | None = None
    max_paths: int = Field(default=1, ge=1, le=50)
    max_length: int = Field(default=6, ge=1, le=12)
    directed: bool = False
    include_derived: bool = False


class LineageParams(Params, TimeParams):
    node_id: str
    edge_types: list[EdgeType] | None = None
    max_depth: int | None = Field(default=None, ge=1, le=50)


class ContradictionParams(Params, TimeParams):
    status: Literal["active", "all"] | None = None
    limit: int = Field(default=20, ge=1, le=500)


class BlockedParams(Params, TimeParams):
    node_id: str | None = None


class HighSalienceParams(Params, TimeParams):
    limit: int = Field(default=10, ge=1, le=500)
    active_only: bool = False


def blocker_view(b: Blocker, infos: graphs.Infos) -> dict[str, Any]:
    view: dict[str, Any] = {
        "nodeId": b.node_id,
        "reason": b.reason,
        "depth": b.depth,
        "viaType": b.via_type.value,
        "path": b.path,
        "summary": str(infos[b.node_id].attrs["text"])[:200],
    }
    if b.stands_for:
        view["standsFor"] = b.stands_for
    return view


def page_keys(sub: Subgraph, p: GraphParams) -> dict[str, Any]:
    """Where a ``getGraph`` page stands; nothing for a whole neighbourhood asked without a
    ``cursor`` (the answer CSTP gives)."""
    if p.cursor is None and sub.next_offset is None:
        return {}
    more = sub.next_offset is not None
    return {
        "truncated": more,
        "totalNodes": sub.total,
        "nextCursor": str(sub.next_offset) if more else None,
    }


def register_links(registry: Registry, app: usecases.Decigraph) -> None:
    def link(p: LinkParams, ctx: CallContext) -> Mapping[str, Any]:
        made = usecases.link(app, p, ctx.agent)
        edge = made.edge
        return {
            "success": True,
            "created": made.created,
            "edge": {
                "sourceId": edge.source,
                "targetId": edge.target,
                "edgeType": edge.type,
                "weight": edge.weight,
                "createdAt": format_ts(edge.created_at),
                "createdBy": edge.created_by,
                "context": edge.context,
            },
        }

    def unlink(p: UnlinkParams, ctx: CallContext) -> Mapping[str, Any]:
        usecases.unlink(app, p, ctx.agent)
        return {"success": True, "sourceId": p.source, "targetId": p.target}

    registry.add("cstp.linkDecisions", LinkParams, link, writes=True)
    registry.add("cstp.unlinkDecisions", UnlinkParams, unlink, writes=True)


def register_graph(registry: Registry, app: usecases.Decigraph) -> None:
    register_links(registry, app)

    def get_graph(p: GraphParams, ctx: CallContext) -> Mapping[str, Any]:
        at, point = at_of(app, p)
        sub, infos = graphs.neighbourhood(
            app,
            p.node_id,
            p.depth,
            p.edge_types,
            p.direction,
            p.include_derived,
            at,
            limit=p.max_nodes,
            offset=int(p.cursor or 0),
        )
        answer = {
            "centerId": sub.center_id,
            "depth": sub.depth,
            "nodes": [
                {
                    **node_card(infos[n.id]),
                    "distance": n.distance,
                    "salience": infos[n.id].salience,
                }
                for n in sub.nodes
            ],
            "edges": [edge_view(e) for e in sub.edges],
        }
        return stamped({**answer, **page_keys(sub, p)}, p, point)

    def neighbors(p: NeighborsParams, ctx: CallContext) -> Mapping[str, Any]:
        at, point = at_of(app, p)
        page, total, infos = graphs.neighbours(
            app, p.node_id, p.direction, p.edge_type, p.limit, p.include_derived, at
        )
        answer = {
            "nodeId": p.node_id,
            "neighbors": [
                {
                    "node": node_card(infos[n.node_id]),
                    "direction": n.direction.value,
                    "edge": edge_view(n.edge),
                }
                for n in page
            ],
            "total": total,
        }
        return stamped(answer, p, point)

    def path(p: PathParams, ctx: CallContext) -> Mapping[str, Any]:
        at, point = at_of(app, p)
        found = graphs.paths(
            app,
            p.source,
            p.target,
            p.edge_types,
            directed=p.directed,
            max_paths=p.max_paths,
            max_length=p.max_length,
            include_derived=p.include_derived,
            at=at,
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
        return stamped(result, p, point)

    def lineage(direction: str) -> Any:
        def handler(p: LineageParams, ctx: CallContext) -> Mapping[str, Any]:
            at, point = at_of(app, p)
            reached, infos = graphs.lineage(
                app, p.node_id, direction, p.edge_types, p.max_depth, at
            )
            answer = {
                "nodeId": p.node_id,
                "nodes": [
                    {**node_card(infos[r.node_id]), "depth": r.depth, "via": edge_view(r.via)}
                    for r in reached
                ],
            }
            return stamped(answer, p, point)

        return handler

    def contradictions(p: ContradictionParams, ctx: CallContext) -> Mapping[str, Any]:
        at, point = at_of(app, p)
        found, infos = graphs.contradictions(app, p.status == "all", p.limit, at)
        answer = {
            "contradictions": [
                {
                    "a": c.a,
                    "b": c.b,
                    "salienceAtStake": c.salience_at_stake,
                    "aSalience": c.a_salience,
                    "bSalience": c.b_salience,
                    "aSummary": str(infos[c.a].attrs["text"])[:200],
                    "bSummary": str(infos[c.b].attrs["text"])[:200],
                    # Raised by the judge and not yet confirmed, superseded or declared
                    # compatible; or linked (or confirmed) by someone.
                    "status": "suspected" if c.edge.signal == "suspected" else "confirmed",
                    "edge": edge_view(c.edge),
                }
                for c in found
            ],
            "total": len(found),
        }
        return stamped(answer, p, point)

    def blocked(p: BlockedParams, ctx: CallContext) -> Mapping[str, Any]:
        at, point = at_of(app, p)
        if p.node_id is None:
            chains, infos = graphs.blocked_chains(app, at)
            return stamped(
                {
                    "blocked": [
                        {
                            "nodeId": c.node_id,
                            "blockers": [blocker_view(b, infos) for b in c.blockers],
                        }
                        for c in chains
                    ],
                    "total": len(chains),
                },
                p,
                point,
            )
        chain, infos = graphs.blocked_chain(app, p.node_id, at)
        answer = {
            "nodeId": chain.node_id,
            "blocked": chain.blocked,
            "blockers": [blocker_view(b, infos) for b in chain.blockers],
            "chain": [blocker_view(b, infos) for b in chain.chain],
        }
        return stamped(answer, p, point)

    def compute(p: NoParams, ctx: CallContext) -> Mapping[str, Any]:
        count, ms = graphs.compute_salience(app)
        return {"computed": count, "durationMs": round(ms, 2)}

    def high(p: HighSalienceParams, ctx: CallContext) -> Mapping[str, Any]:
        at, point = at_of(app, p)
        top, infos = graphs.high_salience(app, p.limit, p.active_only, at)
        answer = {"decisions": [{**node_card(infos[i]), "salience": s} for i, s in top]}
        return stamped(answer, p, point)

    registry.add("cstp.getGraph", GraphParams, get_graph)
    registry.add("cstp.getNeighbors", NeighborsParams, neighbors)
    registry.add("cstp.findPath", PathParams, path)
    registry.add("cstp.getAncestors", LineageParams, lineage("ancestors"))
    registry.add("cstp.getDescendants", LineageParams, lineage("descendants"))
    registry.add("cstp.findContradictions", ContradictionParams, contradictions)
    registry.add("cstp.getBlockedChain", BlockedParams, blocked)
    registry.add("cstp.computeSalience", NoParams, compute)
    registry.add("cstp.getHighSalience", HighSalienceParams, high)
