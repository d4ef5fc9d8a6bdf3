"""Use-case results in the shapes CSTP's clients read (camelCase; ``decision`` is the
statement)."""

from __future__ import annotations

from typing import Any

from pydantic.alias_generators import to_camel

from graph.algorithms.walk import EdgeRef
from graph.lifecycle import NodeState
from graph.model import Node, Review
from graph.timeutil import format_ts
from retrieval.autoedges import Suggestion
from service.usecases.graphs import NodeInfo
from service.usecases.reads import Read, Recalled
from service.usecases.rules import Verdict

CARD_FIELDS = ("category", "stakes", "confidence", "outcome", "tags", "pattern", "status")


def state_view(state: NodeState) -> dict[str, Any]:
    """A node's state as every answer reports it: CSTP's review ``status``, the effective
    ``lifecycle`` and the supersession links both ways (:func:`graph.lifecycle.node_state`)."""
    return {
        "status": state.status.value,
        "lifecycle": state.lifecycle.value,
        "supersededBy": list(state.superseded_by),
        "supersedes": list(state.supersedes),
    }


def review_view(review: Review) -> dict[str, Any]:
    """One review, camelCase (``actualResult``, ``reviewedBy``, ``reviewedAt``)."""
    fields = review.model_dump(mode="json", exclude_none=True)
    return {to_camel(key): value for key, value in fields.items()}


def decision_view(read: Read) -> dict[str, Any]:
    """A node as CSTP's clients read a decision (camelCase; ``decision`` is the statement).

    The flat review fields (``outcome``, ``actualResult``, ``lessons``, ``reviewedAt``, ...)
    are the latest review; ``reviews`` lists every review, oldest first.
    """
    node = read.node
    attrs = node.model_dump(mode="json", exclude_none=True, exclude={"past_reviews"})
    view = {to_camel(key): value for key, value in attrs.items() if key != "text"}
    view["decision"] = node.text
    view["date"] = attrs.get("occurred_at") or attrs["created_at"]
    view.update(state_view(read.state))
    view["reviews"] = [review_view(r) for r in node.reviews()]
    return view


def reasons_view(node: Node) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in node.reasons]


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


def suggestion_view(s: Suggestion) -> dict[str, Any]:
    return {"targetId": s.target, "edgeType": str(s.type), "score": s.score, "reason": s.reason}


def verdict_view(verdict: Verdict) -> dict[str, Any]:
    return {
        "allowed": verdict.allowed,
        "violations": [f.to_dict() for f in verdict.violations],
        "warnings": [f.to_dict() for f in verdict.warnings],
        "evaluated": verdict.evaluated,
    }


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


def node_card(info: NodeInfo) -> dict[str, Any]:
    """A node as the graph methods show it: summary, date, lifecycle, degrees."""
    attrs = info.attrs
    card: dict[str, Any] = {
        "id": info.id,
        "kind": attrs.get("kind", "decision"),
        "summary": str(attrs["text"])[:200],
        "date": attrs.get("occurred_at") or attrs["created_at"],
        "lifecycle": info.lifecycle,
        "inDegree": info.in_degree,
        "outDegree": info.out_degree,
    }
    for key in CARD_FIELDS:
        if key in attrs:
            card[key] = attrs[key]
    return card


def recall_view(recalled: Recalled, include_reasons: bool = False) -> dict[str, Any]:
    """The ``recall`` result: also what ``decigraph recall --json`` prints."""
    answer = recalled.answer
    results = []
    for hit, node in recalled.nodes:
        attrs = node.to_attrs()
        row: dict[str, Any] = {
            "id": node.id,
            "externalId": node.external_id,
            "kind": node.kind,
            "text": node.text,
            "score": hit.score,
            "via": hit.via(),
            "occurredAt": attrs.get("occurred_at") or attrs["created_at"],
            **state_view(recalled.states[node.id]),
        }
        if include_reasons:
            row["reasons"] = reasons_view(node)
        results.append(row)
    return {
        "intent": answer.intent.value,
        "intentSource": answer.intent_source,
        "preset": answer.preset.name,
        "weights": answer.preset.families.model_dump(),
        "results": results,
        "queryTimeMs": round(answer.query_time_ms, 2),
    }
