"""``ready`` (what needs doing) and ``getSessionContext`` (a bounded context pack for an agent)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from graph.algorithms.contradictions import find_contradictions, get_blocked_chain
from graph.algorithms.salience import get_high_salience
from graph.lifecycle import is_active
from graph.timeutil import format_ts, utc_now
from retrieval.recall import recall

from .application import Decigraph
from .methods import Params
from .rpc import CallContext, Registry

ActionType = Literal["review_overdue", "resolve_contradiction", "unblock", "low_confidence"]
Section = Literal["relevant", "contradictions", "salient", "blocked", "ready", "guardrails"]
_PRIORITY = {"high": 0, "medium": 1, "low": 2}
ALL_ACTION_TYPES: tuple[ActionType, ...] = (
    "review_overdue",
    "resolve_contradiction",
    "unblock",
    "low_confidence",
)
DEFAULT_SECTIONS: tuple[Section, ...] = (
    "relevant",
    "contradictions",
    "salient",
    "blocked",
    "guardrails",
)


class ReadyParams(Params):
    limit: int = Field(default=10, ge=1, le=100)
    action_types: list[ActionType] | None = None


class ContextParams(Params):
    task_description: str = Field(min_length=1, max_length=10_000)
    include: list[Section] = Field(default_factory=lambda: list(DEFAULT_SECTIONS))
    format: Literal["json", "markdown"] = "json"
    limit: int = Field(default=5, ge=1, le=20)
    max_chars: int = Field(default=4_000, ge=200, le=50_000)


def ready_actions(app: Decigraph, types: set[ActionType], limit: int) -> list[dict[str, Any]]:
    """The work queue: overdue reviews, open contradictions, blocked work, shaky high stakes."""
    G = app.store.graph
    now = format_ts(utc_now())
    actions: list[tuple[int, float, str, dict[str, Any]]] = []

    def add(kind: str, priority: str, score: float, node_id: str, reason: str, tip: str) -> None:
        item = {"type": kind, "priority": priority, "reason": reason, "suggestion": tip}
        item["decisionId"] = node_id
        actions.append((_PRIORITY[priority], -score, node_id, item))

    with app.store.lock:
        for node_id, attrs in G.nodes(data=True):
            if attrs.get("kind", "decision") != "decision" or not is_active(G, node_id):
                continue
            pending = attrs.get("status") == "pending"
            stakes = attrs.get("stakes")
            due = attrs.get("review_by")
            if "review_overdue" in types and pending and due and str(due) < now:
                priority = "high" if stakes in ("high", "critical") else "medium"
                add(
                    "review_overdue",
                    priority,
                    0.0,
                    node_id,
                    f"review was due {str(due)[:10]}",
                    "record the outcome with cstp.reviewDecision",
                )
            confidence = attrs.get("confidence")
            if (
                "low_confidence" in types
                and pending
                and stakes in ("high", "critical")
                and confidence is not None
                and confidence < 0.5
            ):
                add(
                    "low_confidence",
                    "medium",
                    1 - confidence,
                    node_id,
                    f"{stakes}-stakes decision at confidence {confidence}",
                    "gather evidence or add reasons before building on it",
                )
        if "resolve_contradiction" in types:
            for c in find_contradictions(G, app.store.salience()):
                priority = (
                    "high" if c.salience_at_stake >= app.settings.salience_threshold else "medium"
                )
                add(
                    "resolve_contradiction",
                    priority,
                    c.salience_at_stake,
                    c.a,
                    f"{c.a} contradicts {c.b}",
                    f"supersede one of {c.a} and {c.b}",
                )
        if "unblock" in types:
            for chain in get_blocked_chain(G):
                first = chain.blockers[0]
                add(
                    "unblock",
                    "medium",
                    float(len(chain.chain)),
                    chain.node_id,
                    f"blocked by {first.node_id} ({first.reason})",
                    f"resolve or review {first.node_id}",
                )
    actions.sort(key=lambda a: a[:3])
    return [a[3] for a in actions[:limit]]


def register_agent(registry: Registry, app: Decigraph) -> None:
    def ready(p: ReadyParams, ctx: CallContext) -> Mapping[str, Any]:
        wanted = set(p.action_types or ALL_ACTION_TYPES)
        return {"actions": ready_actions(app, wanted, p.limit)}

    def session_context(p: ContextParams, ctx: CallContext) -> Mapping[str, Any]:
        G = app.store.graph
        pack: dict[str, Any] = {"taskDescription": p.task_description}
        if "relevant" in p.include:
            answer = recall(app.index, p.task_description, p.limit)
            pack["relevant"] = [
                {
                    "id": h.id,
                    "text": str(G.nodes[h.id]["text"]),
                    "score": h.score,
                    "intent": answer.intent.value,
                }
                for h in answer.hits
            ]
        with app.store.lock:
            if "contradictions" in p.include:
                found = find_contradictions(G, app.store.salience(), limit=p.limit)
                pack["contradictions"] = [
                    {"a": c.a, "b": c.b, "salienceAtStake": c.salience_at_stake} for c in found
                ]
            if "salient" in p.include:
                top = get_high_salience(G, app.store.salience(), p.limit, active_only=True)
                pack["salient"] = [
                    {"id": i, "text": str(G.nodes[i]["text"]), "salience": s} for i, s in top
                ]
            if "blocked" in p.include:
                pack["blocked"] = [
                    {"id": c.node_id, "blockers": [b.node_id for b in c.blockers]}
                    for c in get_blocked_chain(G)[: p.limit]
                ]
        if "ready" in p.include:
            pack["ready"] = ready_actions(app, set(ALL_ACTION_TYPES), p.limit)
        if "guardrails" in p.include:
            pack["guardrails"] = [
                {"id": r.id, "action": r.action, "description": r.description} for r in app.rules
            ]
        if p.format == "markdown":
            text, truncated = render_markdown(pack, p.max_chars)
            return {"format": "markdown", "context": text, "truncated": truncated}
        return {"format": "json", "context": pack}

    registry.add("cstp.ready", ReadyParams, ready)
    registry.add("cstp.getSessionContext", ContextParams, session_context)


def render_markdown(pack: Mapping[str, Any], max_chars: int) -> tuple[str, bool]:
    """The pack as Markdown, cut at a whole line so it fits ``max_chars``."""
    lines = [f"# Context for: {pack['taskDescription']}"]
    titles = {
        "relevant": "Relevant decisions",
        "contradictions": "Open contradictions",
        "salient": "Most important decisions",
        "blocked": "Blocked work",
        "ready": "Needs attention",
        "guardrails": "Guardrails",
    }
    for key, title in titles.items():
        items = pack.get(key)
        if not items:
            continue
        lines.append(f"\n## {title}")
        for item in items:
            if key in ("relevant", "salient"):
                lines.append(f"- `{item['id']}` {item['text']}")
            elif key == "contradictions":
                stake = item["salienceAtStake"]
                lines.append(f"- `{item['a']}` contradicts `{item['b']}` (salience {stake:.2f})")
            elif key == "blocked":
                lines.append(f"- `{item['id']}` blocked by {', '.join(item['blockers'])}")
            elif key == "ready":
                lines.append(f"- [{item['priority']}] {item['reason']}: {item['suggestion']}")
            else:
                lines.append(f"- {item['id']} ({item['action']}): {item['description']}")
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > max_chars:
            return "\n".join(out), True
        out.append(line)
        used += len(line) + 1
    return "\n".join(out), False
