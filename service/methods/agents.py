"""Agent methods: ``ready`` (the work queue) and ``getSessionContext`` (a context pack)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases.agents import (
    ALL_ACTION_TYPES,
    Action,
    ActionType,
    Section,
    SessionPack,
    ready_actions,
    session_context,
)

from .params import Params

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


def action_view(a: Action) -> dict[str, Any]:
    return {
        "type": a.type,
        "priority": a.priority,
        "reason": a.reason,
        "suggestion": a.suggestion,
        "decisionId": a.decision_id,
        "text": a.text,
    }


def pack_view(pack: SessionPack) -> dict[str, Any]:
    view: dict[str, Any] = {"taskDescription": pack.task}
    if pack.relevant is not None:
        view["relevant"] = [
            {"id": m.id, "text": m.text, "score": m.score, "intent": pack.intent}
            for m in pack.relevant
        ]
    if pack.contradictions is not None:
        view["contradictions"] = [
            {"a": a, "b": b, "salienceAtStake": s} for a, b, s in pack.contradictions
        ]
    if pack.salient is not None:
        view["salient"] = [{"id": m.id, "text": m.text, "salience": m.score} for m in pack.salient]
    if pack.blocked is not None:
        view["blocked"] = [{"id": i, "blockers": b} for i, b in pack.blocked]
    if pack.ready is not None:
        view["ready"] = [action_view(a) for a in pack.ready]
    if pack.guardrails is not None:
        view["guardrails"] = [
            {"id": r.id, "action": r.action, "description": r.description} for r in pack.guardrails
        ]
    return view


def register_agents(registry: Registry, app: usecases.Decigraph) -> None:
    def ready(p: ReadyParams, ctx: CallContext) -> Mapping[str, Any]:
        wanted = set(p.action_types or ALL_ACTION_TYPES)
        return {"actions": [action_view(a) for a in ready_actions(app, wanted, p.limit)]}

    def context(p: ContextParams, ctx: CallContext) -> Mapping[str, Any]:
        pack = pack_view(session_context(app, p.task_description, p.include, p.limit))
        if p.format == "markdown":
            text, truncated = render_markdown(pack, p.max_chars)
            return {"format": "markdown", "context": text, "truncated": truncated}
        return {"format": "json", "context": pack}

    registry.add("cstp.ready", ReadyParams, ready)
    registry.add("cstp.getSessionContext", ContextParams, context)


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
                lines.append(
                    f"- [{item['priority']}] `{item['decisionId']}` {item['text']}: "
                    f"{item['reason']}; {item['suggestion']}"
                )
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
