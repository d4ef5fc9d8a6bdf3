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
from retrieval.recall import RecallHit
from service.usecases.graphs import NodeInfo
from service.usecases.reads import Read, Recalled

CARD_FIELDS = (
    "category",
    "stakes",
    "confidence",
    "outcome",
    "tags",
    "pattern",
    "status",
    "project",
)


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


#: Fields CSTP's stored rows spell in snake_case (and its CLI and dashboard read so): a
#: decision carries them in both spellings.
SNAKE_TWINS = (
    "recorded_by",
    "created_at",
    "updated_at",
    "updated_by",
    "reviewed_at",
    "reviewed_by",
    "actual_result",
    "review_notes",
    "review_by",
    "occurred_at",
    "external_id",
    "affected_kpis",
)
PROJECT_CONTEXT = ("project", "feature", "pr", "file", "line", "commit")


def decision_view(read: Read) -> dict[str, Any]:
    """A node as CSTP's clients read a decision (camelCase; ``decision`` is the statement).

    The flat review fields (``outcome``, ``actualResult``, ``lessons``, ``reviewedAt``, ...)
    are the latest review; ``reviews`` lists every review, oldest first. CSTP's stored rows are
    snake_case, so the multi-word fields also come in that spelling (:data:`SNAKE_TWINS`),
    ``summary`` repeats the statement, the fields CSTP clients sent and decigraph keeps
    verbatim (``deliberation``, ``trace``, ``mental_state``...) are top-level keys as CSTP
    returns them, and ``project_context`` gathers project, feature, pr, file, line and commit
    (the dashboard's reading).
    """
    node = read.node
    attrs = node.model_dump(mode="json", exclude_none=True, exclude={"past_reviews", "extras"})
    view = {to_camel(key): value for key, value in attrs.items() if key != "text"}
    view["decision"] = node.text
    view["summary"] = node.text
    view["date"] = attrs.get("occurred_at") or attrs["created_at"]
    for key in SNAKE_TWINS:
        if key in attrs:
            view[key] = attrs[key]
    extras = node.extras or {}
    for key, value in extras.items():
        view.setdefault(key, value)
    where = {key: view[key] for key in PROJECT_CONTEXT if view.get(key) is not None}
    if where:
        view["project_context"] = where
    view.update(state_view(read.state))
    view["reviews"] = [review_view(r) for r in node.reviews()]
    return view


def reasons_view(node: Node) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in node.reasons]


#: Which missing part of a record a later reader misses most (the one suggestion a write
#: answers by default): why, the situation, how to find it, where, then the rest.
USEFUL_FIRST = (2, 5, 1, 6, 8, 0, 3, 4, 7)


def quality(node: Node, every: bool = False) -> dict[str, Any]:
    """How complete a record is (what a later reader will miss), scored as CSTP scores it:
    the parts and weights of its ``quality`` (they sum to 1). ``suggestions`` names the one
    most useful missing part (:data:`USEFUL_FIRST`), or every missing part with ``every``."""
    extras = node.extras or {}
    deliberation = extras.get("deliberation")
    steps = deliberation.get("steps") if isinstance(deliberation, dict) else None
    reasoning = isinstance(steps, list) and any(
        isinstance(step, dict) and step.get("type") == "reasoning" for step in steps
    )
    where = (node.project, node.feature, node.pr, *(extras.get(k) for k in PROJECT_CONTEXT[3:]))
    checks = (
        (0.15, node.pattern is not None, "name the pattern this decision follows"),
        (0.15, bool(node.tags), "add tags"),
        (0.15, len({r.type for r in node.reasons}) >= 2, "give reasons of two or more types"),
        (0.10, node.bridge is not None, "describe its structure and function (bridge)"),
        (0.10, len(node.text) > 20, "state the decision in more than 20 characters"),
        (0.10, len(node.context or "") > 10, "add the context"),
        (0.10, any(v is not None for v in where), "say where: project, feature, pr or file"),
        (0.05, bool(deliberation) or "pre_decision" in extras, "attach the deliberation"),
        (0.10, reasoning, "record a reasoning step (recordThought) before deciding"),
    )
    score = sum(weight for weight, present, _ in checks if present)
    missing = [tip for _, present, tip in checks if not present]
    if not every:
        missing = [checks[n][2] for n in USEFUL_FIRST if not checks[n][1]][:1]
    return {"score": round(score, 2), "suggestions": missing}


def suggestion_view(s: Suggestion) -> dict[str, Any]:
    return {"targetId": s.target, "edgeType": str(s.type), "score": s.score, "reason": s.reason}


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


def recall_why(hit: RecallHit) -> str:
    """One line on why a hit came back: its words and meaning, or the edge that led to it."""
    if hit.path:
        step = hit.path[-1].as_dict()
        return f"reached from {hit.path[0].walked_from} ({step.get('edgeType', 'edge')})"
    strongest = max(hit.signals.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    return f"matched by {strongest[0]}" if strongest else "matched"


def recall_view(
    recalled: Recalled, include_reasons: bool = False, explain: bool = False
) -> dict[str, Any]:
    """The ``recall`` result: also what ``decigraph recall --json`` prints. ``relevance`` is
    absolute (comparable across queries); ``score`` ranks within this answer; how it was
    scored (``via``) only with ``explain``."""
    answer = recalled.answer
    results = []
    for hit, node in recalled.nodes:
        attrs = node.to_attrs()
        row: dict[str, Any] = {
            "id": node.id,
            "externalId": node.external_id,
            "kind": node.kind,
            "text": node.text,
            "relevance": recalled.relevance.get(node.id, 0.0),
            "score": hit.score,
            "why": recall_why(hit),
            "occurredAt": attrs.get("occurred_at") or attrs["created_at"],
            **state_view(recalled.states[node.id]),
        }
        if explain:
            row["via"] = hit.via()
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
