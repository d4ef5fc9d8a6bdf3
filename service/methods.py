"""CSTP JSON-RPC methods: params models (camelCase, snake_case aliases) and thin handlers.

Each handler validates nothing itself (its params model did), calls one use case and shapes
the result the way CSTP's clients read it: camelCase, except ``recordDecision`` which CSTP
answers in snake_case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidatorFunctionWrapHandler,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError
from pydantic_core import ValidationError as CoreValidationError

from graph.drafts import DecisionDraft, MemoryDraft, parse_review_in
from graph.enums import Category, EdgeType, NodeKind, Outcome, Stakes
from graph.model import Bridge, Node, Reason
from graph.timeutil import UtcDatetime, format_ts, parse_ts
from retrieval.filters import RecallFilters
from retrieval.intents import Intent
from retrieval.query import RetrievalMode, query_decisions
from retrieval.recall import recall
from retrieval.writes import record, remember

from .application import Decigraph
from .gate import check_action
from .rpc import RECORD_FAILED, CallContext, Registry, RpcError

#: Timestamps are stored as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``: a four-digit year keeps text order
#: equal to time order and keeps every stored value parseable.
MIN_YEAR, MAX_YEAR = 1000, 9999
#: Integers must survive the JSON round trip (the encoder writes 64-bit integers only).
INT_RANGE = range(-(2**63), 2**63)
MAX_REVIEW_IN = timedelta(days=100 * 365)


def _range_error(loc: tuple[str, ...], value: Any, message: str) -> CoreValidationError:
    error = PydanticCustomError("out_of_range", message)
    return CoreValidationError.from_exception_data(
        "Params", [{"type": error, "loc": loc, "input": value}]
    )


def _overflowing_key(value: Any) -> tuple[str, ...]:
    """The key of a nested object whose timestamp overflows (``()`` when it is the value)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(item, str):
                try:
                    parse_ts(item)
                except OverflowError:
                    return (str(key),)
                except ValueError:
                    continue
    return ()


def _range_problem(value: Any) -> tuple[tuple[str, ...], str] | None:
    """Where a validated value leaves the storable range, and why (``None`` when it does not)."""
    if isinstance(value, datetime):
        if not MIN_YEAR <= value.year <= MAX_YEAR:
            return (), f"year must be between {MIN_YEAR} and {MAX_YEAR} (UTC)"
    elif isinstance(value, int) and not isinstance(value, bool):
        if value not in INT_RANGE:
            return (), "is out of range (64-bit integers only)"
    elif isinstance(value, BaseModel) and not isinstance(value, Params):  # e.g. RecallFilters
        for name, info in type(value).model_fields.items():
            problem = _range_problem(getattr(value, name))
            if problem is not None:
                return (info.alias or name, *problem[0]), problem[1]
    return None


class Params(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        allow_inf_nan=False,
        str_strip_whitespace=True,
    )

    @field_validator("*", mode="wrap")
    @classmethod
    def _storable(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """Refuse, naming the field, dates and integers that validate but cannot be stored or
        answered: a UTC conversion past year 9999 (``OverflowError``), a year below 1000 (its
        timestamp text would not parse back), an integer past 64 bits (``1e30`` is a valid
        ``int`` and would break the JSON encoder when echoed)."""
        try:
            result = handler(value)
        except OverflowError:
            raise _range_error(_overflowing_key(value), value, "date is out of range") from None
        problem = _range_problem(result)
        if problem is not None:
            raise _range_error(problem[0], value, problem[1])
        return result


class Override(Params):
    reason: str = Field(min_length=3, max_length=2_000)


class RecordParams(Params):
    decision: str = Field(min_length=1, max_length=10_000)
    id: str | None = None
    confidence: float | None = Field(default=None, ge=0, le=1)
    category: Category | None = None
    stakes: Stakes | None = None
    context: str | None = None
    reasons: list[Reason] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    pattern: str | None = None
    bridge: Bridge | None = None
    review_in: str | None = Field(default=None, pattern=r"^\s*\d{1,4}\s*[dwmy]\s*$")
    project: str | None = None
    feature: str | None = None
    pr: str | None = None
    entities: list[str] = Field(default_factory=list)
    external_id: str | None = None
    confirm: list[str] = Field(default_factory=list)
    contradicts: list[str] = Field(default_factory=list)
    override: Override | None = None

    @field_validator("review_in")
    @classmethod
    def _review_in_bounded(cls, value: str | None) -> str | None:
        if value is not None and parse_review_in(value) > MAX_REVIEW_IN:
            raise ValueError("must be at most 100 years (e.g. 100y, 1200m)")
        return value


class IdParams(Params):
    id: str = Field(validation_alias=AliasChoices("id", "decision_id", "decisionId"))


class QueryParams(Params):
    query: str = Field(min_length=1, max_length=10_000)
    limit: int = Field(default=10, ge=1, le=50)
    filters: RecallFilters = Field(default_factory=RecallFilters)
    retrieval_mode: RetrievalMode = RetrievalMode.HYBRID
    hybrid_weight: float = Field(default=0.7, ge=0, le=1)
    decision_id: str | None = None
    hops: int = Field(default=2, ge=1, le=5)
    bridge_side: Literal["structure", "function"] | None = None
    include_reasons: bool = False


class UpdateFields(Params):
    decision: str | None = Field(default=None, min_length=1, max_length=10_000)
    confidence: float | None = Field(default=None, ge=0, le=1)
    category: Category | None = None
    stakes: Stakes | None = None
    tags: list[str] | None = None
    pattern: str | None = None
    context: str | None = None
    reasons: list[Reason] | None = None
    bridge: Bridge | None = None
    project: str | None = None


class UpdateParams(IdParams):
    updates: UpdateFields
    expected_version: int | None = Field(default=None, ge=1)


class ReviewParams(IdParams):
    outcome: Outcome
    actual_result: str | None = None
    lessons: str | None = None
    notes: str | None = None
    expected_version: int | None = Field(default=None, ge=1)


class LinkParams(Params):
    source_id: str
    target_id: str
    edge_type: EdgeType
    weight: float = Field(default=1.0, gt=0, le=1000)
    context: str | None = None


class UnlinkParams(Params):
    source_id: str
    target_id: str
    edge_type: EdgeType | None = None


class RememberParams(Params):
    text: str = Field(min_length=1, max_length=10_000)
    kind: Literal[NodeKind.OBSERVATION, NodeKind.FACT, NodeKind.THOUGHT] = NodeKind.OBSERVATION
    source: str | None = None
    occurred_at: UtcDatetime | None = None
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    project: str | None = None
    external_id: str | None = None


class RecallParams(Params):
    query: str = Field(min_length=1, max_length=10_000)
    limit: int = Field(default=10, ge=1, le=100)
    intent: Intent | None = None
    filters: RecallFilters = Field(default_factory=RecallFilters)


def decision_view(node: Node) -> dict[str, Any]:
    """A node as CSTP's clients read a decision (camelCase; ``decision`` is the statement)."""
    attrs = node.model_dump(mode="json", exclude_none=True, by_alias=False)
    view = {to_camel(key): value for key, value in attrs.items() if key != "text"}
    view["decision"] = node.text
    view["date"] = attrs.get("occurred_at") or attrs["created_at"]
    return view


def quality(node: Node) -> dict[str, Any]:
    """How complete a record is (what a later reader will miss), as CSTP reports it."""
    checks = {
        "add a confidence": node.confidence is not None,
        "add a category": node.category is not None,
        "add the context": bool(node.context),
        "add at least one reason": bool(node.reasons),
        "add tags": bool(node.tags),
    }
    missing = [tip for tip, present in checks.items() if not present]
    return {"score": round(1 - len(missing) / len(checks), 2), "suggestions": missing}


def recorder(app: Decigraph) -> Callable[[RecordParams, CallContext], Mapping[str, Any]]:
    """``recordDecision``: the guardrail gate first (fail closed), then one atomic write."""

    def record_decision(p: RecordParams, ctx: CallContext) -> Mapping[str, Any]:
        draft = DecisionDraft(
            text=p.decision,
            **p.model_dump(
                exclude={"decision", "confirm", "contradicts", "override"}, exclude_none=True
            ),
        )
        fields = {"description": p.decision, **p.model_dump(mode="json", exclude_none=True)}
        verdict = check_action(app, fields, p.contradicts)
        note = None
        if not verdict.allowed:
            if p.override is None:
                raise RpcError(
                    RECORD_FAILED,
                    "blocked by guardrails: " + "; ".join(v.message for v in verdict.violations),
                    {"violations": [v.to_dict() for v in verdict.violations]},
                )
            note = {
                "guardrailOverride": {
                    "reason": p.override.reason,
                    "violations": [v.to_dict() for v in verdict.violations],
                }
            }
        result = record(
            app.index,
            draft,
            ctx.agent,
            app.auto_edges,
            confirm=p.confirm,
            note=note,
            links=[(target, EdgeType.CONTRADICTS) for target in p.contradicts],
        )
        node = result.node
        return {
            "success": True,
            "id": node.id,
            "indexed": True,
            "timestamp": format_ts(node.created_at),
            "quality": quality(node),
            "graph_edges_created": len(result.edges),
            "related_count": len(result.suggestions),
            "suggestions": [_suggestion(s) for s in result.suggestions],
            "guardrail_warnings": [w.to_dict() for w in verdict.warnings],
            "guardrail_override": note is not None,
        }

    return record_decision


def register(registry: Registry, app: Decigraph) -> None:
    """Add every method to ``registry``, bound to ``app``."""

    def get_decision(p: IdParams, ctx: CallContext) -> Mapping[str, Any]:
        if p.id not in app.store.graph:
            return {"found": False, "id": p.id}
        return {"found": True, "decision": decision_view(app.store.get(p.id))}

    def query(p: QueryParams, ctx: CallContext) -> Mapping[str, Any]:
        result = query_decisions(
            app.index,
            p.query,
            p.retrieval_mode,
            p.limit,
            filters=p.filters,
            hybrid_weight=p.hybrid_weight,
            decision_id=p.decision_id,
            hops=p.hops,
        )
        rows = []
        for hit in result.hits:
            node = app.store.get(hit.id)
            row: dict[str, Any] = {
                "id": node.id,
                "title": node.text,
                "category": node.category,
                "confidence": node.confidence,
                "stakes": node.stakes,
                "status": node.status,
                "date": format_ts(node.created_at),
                "distance": hit.distance,
                "score": hit.score,
                "foundBy": hit.found_by,
                "outcome": node.outcome,
                "tags": node.tags,
                "pattern": node.pattern,
            }
            if p.include_reasons:
                row["reasons"] = [r.model_dump(mode="json") for r in node.reasons]
            rows.append(row)
        scores = {
            h.id: {"semantic": h.semantic, "keyword": h.keyword, "combined": h.score}
            for h in result.hits
        }
        return {
            "decisions": rows,
            "total": result.total,
            "query": p.query,
            "queryTimeMs": round(result.query_time_ms, 2),
            "agent": ctx.agent,
            "retrievalMode": result.mode.value,
            "scores": scores,
        }

    def update_decision(p: UpdateParams, ctx: CallContext) -> Mapping[str, Any]:
        changes = p.updates.model_dump(exclude_unset=True, mode="json")
        if "decision" in changes:
            changes["text"] = changes.pop("decision")
        node = app.store.update(p.id, changes, ctx.agent, p.expected_version)
        fields = sorted(p.updates.model_dump(exclude_unset=True, by_alias=True))
        return {"success": True, "id": node.id, "updated_fields": fields, "version": node.version}

    def review_decision(p: ReviewParams, ctx: CallContext) -> Mapping[str, Any]:
        node = app.store.review(
            p.id,
            p.outcome,
            ctx.agent,
            actual_result=p.actual_result,
            lessons=p.lessons,
            notes=p.notes,
            expected_version=p.expected_version,
        )
        reviewed = format_ts(node.reviewed_at) if node.reviewed_at else None
        return {"success": True, "id": node.id, "status": node.status, "reviewedAt": reviewed}

    def link(p: LinkParams, ctx: CallContext) -> Mapping[str, Any]:
        made = app.store.link(
            p.source_id, p.target_id, p.edge_type, ctx.agent, weight=p.weight, context=p.context
        )
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
        app.store.unlink(p.source_id, p.target_id, ctx.agent, p.edge_type)
        return {"success": True, "sourceId": p.source_id, "targetId": p.target_id}

    def remember_item(p: RememberParams, ctx: CallContext) -> Mapping[str, Any]:
        draft = MemoryDraft(**p.model_dump(exclude_none=True))
        result = remember(app.index, draft, ctx.agent, app.auto_edges)
        return {
            "id": result.node.id,
            "created": result.created,
            "edgesCreated": len(result.edges),
            "edges": [
                {
                    "targetId": e.target,
                    "edgeType": e.type,
                    "weight": e.weight,
                    "signal": e.meta.get("signal"),
                }
                for e in result.edges
            ],
            "candidates": [_suggestion(s) for s in result.suggestions],
        }

    def recall_items(p: RecallParams, ctx: CallContext) -> Mapping[str, Any]:
        answer = recall(app.index, p.query, p.limit, intent=p.intent, filters=p.filters)
        results = []
        for hit in answer.hits:
            node = app.store.get(hit.id)
            attrs = node.to_attrs()
            results.append(
                {
                    "id": node.id,
                    "externalId": node.external_id,
                    "kind": node.kind,
                    "text": node.text,
                    "score": hit.score,
                    "via": hit.via(),
                    "occurredAt": attrs.get("occurred_at") or attrs["created_at"],
                }
            )
        return {
            "intent": answer.intent.value,
            "intentSource": answer.intent_source,
            "preset": answer.preset.name,
            "weights": answer.preset.families.model_dump(),
            "results": results,
            "queryTimeMs": round(answer.query_time_ms, 2),
        }

    registry.add("cstp.recordDecision", RecordParams, recorder(app), writes=True)
    registry.add("cstp.getDecision", IdParams, get_decision)
    registry.add("cstp.queryDecisions", QueryParams, query)
    registry.add("cstp.updateDecision", UpdateParams, update_decision, writes=True)
    registry.add("cstp.reviewDecision", ReviewParams, review_decision, writes=True)
    registry.add("cstp.linkDecisions", LinkParams, link, writes=True)
    registry.add("cstp.unlinkDecisions", UnlinkParams, unlink, writes=True)
    registry.add("cstp.remember", RememberParams, remember_item, writes=True)
    registry.add("cstp.recall", RecallParams, recall_items)


def _suggestion(s: Any) -> dict[str, Any]:
    return {"targetId": s.target, "edgeType": str(s.type), "score": s.score, "reason": s.reason}
