"""``queryDecisions``: ranked search, CSTP's list mode (an empty query) and bridge-side search.

CSTP's clients send this method in several shapes, all accepted here: the CLI's ``filters``
with ``retrievalMode`` always set; the dashboard's filters at the top level (``category``,
``hasOutcome``, ``project``) with ``limit: 200``, which CSTP ignores and decigraph honours (the
limit is clamped as CSTP clamps it); ``top_k`` for ``limit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from graph.enums import Category, Stakes
from graph.model import MAX_TEXT, Node, ShortText
from graph.timeutil import format_ts
from retrieval.filters import RecallFilters
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases.compaction import compaction_levels
from service.usecases.history import At
from service.usecases.inputs import DecisionListing, DecisionQuery
from service.usecases.search import bridge_search

from .history import at_of, stamped
from .params import Params, TimeParams
from .views import reasons_view, state_view

#: CSTP clamps a search to 50 results and a listing (empty query) to 500.
SEARCH_LIMIT = 50


class QueryParams(Params, DecisionQuery, TimeParams):
    query: str = Field(default="", max_length=MAX_TEXT)  # empty: CSTP's list mode
    limit: int = Field(default=10, ge=1, le=500)
    top_k: int | None = Field(default=None, ge=1, le=500)
    filters: RecallFilters = Field(default_factory=RecallFilters)
    bridge_side: Literal["structure", "function"] | None = None
    include_reasons: bool = False
    include_detail: bool = False
    compacted: bool = False
    # The dashboard's filters, sent beside ``filters`` rather than in it.
    category: Category | None = None
    stakes: Stakes | None = None
    project: ShortText | None = None
    has_outcome: bool | None = None

    def effective_filters(self) -> RecallFilters:
        """``filters`` with the top-level ones added (``filters`` wins where both are given)."""
        extra: dict[str, Any] = {}
        given = self.filters.model_fields_set
        if self.category is not None and "category" not in given:
            extra["category"] = [self.category]
        if self.stakes is not None and "stakes" not in given:
            extra["stakes"] = [self.stakes]
        if self.project is not None and "project" not in given:
            extra["project"] = self.project
        if self.has_outcome is not None and "has_outcome" not in given:
            extra["has_outcome"] = self.has_outcome
        return self.filters.model_copy(update=extra) if extra else self.filters

    def wanted(self) -> int:
        if self.top_k is not None and "limit" not in self.model_fields_set:
            return self.top_k
        return self.limit


def summary_row(node: Node, p: QueryParams, distance: float) -> dict[str, Any]:
    """A decision as CSTP's DecisionSummary (``title`` is the statement)."""
    row: dict[str, Any] = {
        "id": node.id,
        "title": node.text,
        "category": node.category,
        "confidence": node.confidence,
        "stakes": node.stakes,
        "date": format_ts(node.created_at),
        "distance": distance,
        "tags": node.tags,
        "pattern": node.pattern,
    }
    if node.outcome is not None:
        row["outcome"] = node.outcome
    if node.lessons:
        row["lessons"] = node.lessons
    if node.bridge is not None:
        row["bridge"] = node.bridge.model_dump(mode="json", exclude_none=True)
    if p.include_reasons and node.reasons:
        row["reasons"] = reasons_view(node)
    if p.include_detail and node.actual_result:
        row["actualResult"] = node.actual_result
    return row


def compacted(app: usecases.Decigraph, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """CSTP's ``compacted``: each row says its compaction level, and wisdom-level decisions
    (old, reviewed, neither preserved nor structurally important) are left out: they are
    summed up by ``getWisdom`` instead."""
    levels = compaction_levels(app, [row["id"] for row in rows])
    kept = []
    for row in rows:
        level = levels.get(row["id"], "full")
        if level != "wisdom":
            kept.append({**row, "compactionLevel": level})
    return kept


def register_query(registry: Registry, app: usecases.Decigraph) -> None:
    def query(p: QueryParams, ctx: CallContext) -> Mapping[str, Any]:
        filters = p.effective_filters()
        limit = p.wanted()
        at, point = at_of(app, p)
        if not p.query:
            return stamped(listing(p, filters, limit, ctx, at), p, point)
        said: list[str] = []
        if limit > SEARCH_LIMIT:
            said.append(f"limit: {limit} is above {SEARCH_LIMIT} for a search; clamped")
            limit = SEARCH_LIMIT
        if p.bridge_side is not None:
            return {**side_search(p, filters, limit, ctx), **({"warnings": said} if said else {})}
        q = p.model_copy(update={"filters": filters, "limit": limit})
        answer = usecases.query(app, q, at=at)
        rows = []
        for hit in answer.result.hits:
            node = answer.nodes.get(hit.id)
            if node is None:
                continue
            # CSTP's cosine distance (1 - cosine: the true one, not relative to the best hit)
            # and, as ``score``, the absolute relevance (0-1, comparable across queries); in
            # keyword mode (no embedding) 1 - the keyword score relative to the best hit.
            if node.id in answer.cosine:
                distance, score = round(1.0 - answer.cosine[node.id], 6), answer.relevance[node.id]
            else:
                distance, score = round(1.0 - hit.score, 6), hit.score
            if p.min_relevance is not None and score < p.min_relevance:
                continue
            row = summary_row(node, p, distance)
            row.update(state_view(answer.states[node.id]), score=score, foundBy=hit.found_by)
            rows.append(row)
        if p.compacted:
            rows = compacted(app, rows)
        scores = {
            h.id: {"semantic": h.semantic, "keyword": h.keyword, "combined": h.score}
            for h in answer.result.hits
        }
        return stamped(
            {
                "decisions": rows,
                "total": len(rows),
                "matched": answer.result.total,
                "query": p.query,
                "queryTimeMs": round(answer.result.query_time_ms, 2),
                "agent": ctx.agent,
                "retrievalMode": answer.result.mode.value,
                **({"scores": scores} if p.explain else {}),
                **({"warnings": said} if said else {}),
            },
            p,
            point,
        )

    def listing(
        p: QueryParams, filters: RecallFilters, limit: int, ctx: CallContext, at: At
    ) -> dict[str, Any]:
        """CSTP's list mode: the newest decisions, distance 0."""
        q = DecisionListing(
            limit=limit,
            category=filters.category[0]
            if filters.category and len(filters.category) == 1
            else None,
            project=filters.project,
            include_superseded=filters.include_superseded,
        )
        page, total = usecases.list_decisions(app, q, at=at)
        rows = []
        for read in page:
            row = summary_row(read.node, p, 0.0)
            row.update(state_view(read.state))
            rows.append(row)
        if p.compacted:
            rows = compacted(app, rows)
        return {
            "decisions": rows,
            "total": len(rows),
            "matched": total,
            "query": p.query,
            "queryTimeMs": 0,
            "agent": ctx.agent,
            "retrievalMode": "list",
        }

    def side_search(
        p: QueryParams, filters: RecallFilters, limit: int, ctx: CallContext
    ) -> dict[str, Any]:
        assert p.bridge_side is not None
        hits = bridge_search(app, p.query, p.bridge_side, limit, filters)
        rows = []
        for hit in hits:
            row = summary_row(hit.read.node, p, hit.distance)
            row.update(state_view(hit.read.state), score=round(hit.similarity, 6))
            rows.append(row)
        return {
            "decisions": rows,
            "total": len(rows),
            "query": p.query,
            "queryTimeMs": 0,
            "agent": ctx.agent,
            "retrievalMode": "semantic",
            "bridgeSide": p.bridge_side,
        }

    registry.add("cstp.queryDecisions", QueryParams, query)
