"""``listDecisions`` and ``getStats``: paging and counting over the decisions in the graph."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from graph.enums import Category, NodeKind, Stakes
from graph.lifecycle import is_superseded
from graph.timeutil import UtcDatetime
from retrieval.filters import RecallFilters

from .application import Decigraph
from .methods import Params, decision_view
from .rpc import CallContext, Registry

_STAKES_ORDER = {"low": 0, "medium": 1, "high": 2, "critical": 3}


class ListParams(Params):
    limit: int = Field(default=20, ge=1, le=500)
    offset: int = Field(default=0, ge=0)
    category: Category | None = None
    stakes: Stakes | None = None
    status: (
        Literal["pending", "reviewed", "proposed", "accepted", "rejected", "superseded"] | None
    ) = None
    tags: list[str] | None = None
    project: str | None = None
    date_from: UtcDatetime | None = None
    date_to: UtcDatetime | None = None
    search: str | None = Field(default=None, max_length=1_000)
    sort: Literal["date", "confidence", "stakes"] = "date"
    order: Literal["asc", "desc"] = "desc"
    include_superseded: bool = True


class StatsParams(Params):
    project: str | None = None


def register_listing(registry: Registry, app: Decigraph) -> None:
    G = app.store.graph

    def list_decisions(p: ListParams, ctx: CallContext) -> Mapping[str, Any]:
        filters = RecallFilters(
            kind=[NodeKind.DECISION],
            category=None if p.category is None else [p.category],
            stakes=None if p.stakes is None else [p.stakes],
            status=None if p.status is None else [p.status],
            tags=p.tags,
            project=p.project,
            date_after=p.date_from,
            date_before=p.date_to,
            include_superseded=p.include_superseded,
        )
        needle = (p.search or "").casefold()
        with app.store.lock:
            rows = [
                (node_id, attrs)
                for node_id, attrs in G.nodes(data=True)
                if filters.matches(attrs, is_superseded(G, node_id))
                and (not needle or needle in str(attrs["text"]).casefold())
            ]

            def key(row: tuple[str, dict[str, Any]]) -> tuple[Any, str]:
                node_id, attrs = row
                if p.sort == "confidence":
                    return (attrs.get("confidence", -1.0), node_id)
                if p.sort == "stakes":
                    return (_STAKES_ORDER.get(attrs.get("stakes", ""), -1), node_id)
                return (attrs["created_at"], node_id)

            rows.sort(key=key, reverse=p.order == "desc")
            page = rows[p.offset : p.offset + p.limit]
            return {
                "decisions": [decision_view(app.store.get(node_id)) for node_id, _ in page],
                "total": len(rows),
                "limit": p.limit,
                "offset": p.offset,
            }

    def stats(p: StatsParams, ctx: CallContext) -> Mapping[str, Any]:
        counts: dict[str, Counter[str]] = {
            name: Counter() for name in ("category", "stakes", "status", "agent", "day")
        }
        tags: Counter[str] = Counter()
        total = 0
        with app.store.lock:
            for _, attrs in G.nodes(data=True):
                if attrs.get("kind", "decision") != "decision":
                    continue
                if p.project is not None and attrs.get("project") != p.project:
                    continue
                total += 1
                counts["category"][str(attrs.get("category", "none"))] += 1
                counts["stakes"][str(attrs.get("stakes", "none"))] += 1
                counts["status"][str(attrs.get("status"))] += 1
                counts["agent"][str(attrs.get("recorded_by"))] += 1
                counts["day"][str(attrs["created_at"])[:10]] += 1
                tags.update(attrs.get("tags", ()))
        top = sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
        return {
            "total": total,
            "byCategory": dict(sorted(counts["category"].items())),
            "byStakes": dict(sorted(counts["stakes"].items())),
            "byStatus": dict(sorted(counts["status"].items())),
            "byAgent": dict(sorted(counts["agent"].items())),
            "byDay": dict(sorted(counts["day"].items())),
            "topTags": [{"tag": tag, "count": n} for tag, n in top],
        }

    registry.add("cstp.listDecisions", ListParams, list_decisions)
    registry.add("cstp.getStats", StatsParams, stats)
