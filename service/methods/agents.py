"""Agent methods: ``ready`` (the work queue) and ``getSessionContext`` (a context pack).

Both answer CSTP's shapes and keep decigraph's: ``ready`` gives ``{actions, total, filtered,
warnings?}`` whose items carry CSTP's keys and the decision's ``text``; ``getSessionContext``
gives decigraph's ``format``/``context`` beside CSTP's ``agentProfile``, ``relevantDecisions``...
or, in Markdown, CSTP's ``markdown`` (cut at ``maxChars``; ``truncated`` when it was). With a
task, the relevant decisions are its briefing (:mod:`service.usecases.briefing`): conflicts,
failures and decisions at least ``minRelevance`` relevant, each with why it is there.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from graph.enums import Category
from graph.model import ShortText
from graph.timeutil import format_ts
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases.agents import (
    ALL_ACTION_TYPES,
    Action,
    Priority,
    Section,
    SessionPack,
    ready_queue,
    session_context,
)
from service.usecases.briefing import Briefing
from service.usecases.gate import GRAPH_GUARDRAIL, graph_rule_description

from .briefs import markdown_lines
from .guardrails import rule_view
from .params import Params

#: decigraph's sections and CSTP's default ones (``ready`` and ``guardrails`` are both).
DEFAULT_SECTIONS: tuple[Section, ...] = (
    "relevant",
    "contradictions",
    "salient",
    "blocked",
    "guardrails",
    "decisions",
    "calibration",
    "ready",
    "patterns",
)
#: CSTP's ``readyQueue`` reason for each action type it lists.
QUEUE_REASON = {"review_outcome": "overdue_review", "stale_pending": "stale_pending"}


class ReadyParams(Params):
    limit: int = Field(default=20, ge=1, le=100)
    #: CSTP's types (``review_outcome``, ``calibration_drift``, ``stale_pending``) and
    #: decigraph's; an unknown name matches nothing and is reported in ``warnings``.
    action_types: list[Annotated[str, Field(max_length=64)]] | None = Field(
        default=None, max_length=20
    )
    min_priority: Priority = "low"
    category: Category | None = None
    agent_id: ShortText | None = None  # CSTP's MCP tool sends it; unused, as in CSTP


class ContextParams(Params):
    #: Without it there are no relevant decisions (CSTP).
    task_description: str | None = Field(default=None, max_length=10_000)
    include: list[Section] = Field(default_factory=lambda: list(DEFAULT_SECTIONS), max_length=20)
    format: Literal["json", "markdown"] = "json"
    #: decigraph's sections' size, and the Markdown ``context``'s.
    limit: int = Field(default=5, ge=1, le=20)
    max_chars: int = Field(default=4_000, ge=200, le=50_000)
    decisions_limit: int = Field(default=10, ge=1, le=50)
    ready_limit: int = Field(default=5, ge=1, le=20)
    #: The name in the Markdown header (CSTP's MCP tool); the caller's agent by default.
    agent_id: ShortText | None = None
    #: The least relevance (0-1) a decision needs to be named (default: the server's floor).
    min_relevance: float | None = Field(default=None, ge=0.0, le=1.0)


def action_view(a: Action) -> dict[str, Any]:
    """CSTP's ReadyAction plus decigraph's ``text`` (drift items name no decision)."""
    view: dict[str, Any] = {
        "type": a.type,
        "priority": a.priority,
        "reason": a.reason,
        "suggestion": a.suggestion,
    }
    if a.decision_id is not None:
        view.update(decisionId=a.decision_id, title=a.title, text=a.text)
    optional = {"category": a.category, "date": a.date, "detail": a.detail}
    view.update({k: v for k, v in optional.items() if v is not None})
    return view


def pack_view(pack: SessionPack) -> dict[str, Any]:
    """decigraph's sections (the ``context`` object)."""
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


def cstp_view(app: usecases.Decigraph, pack: SessionPack) -> dict[str, Any]:
    """CSTP's keys of a session context (§4.4.1), without ``queryTimeMs``."""
    relevant = []
    why = {i.id: i for i in pack.briefing.items()} if pack.briefing is not None else {}
    for node, distance in pack.relevant_decisions:
        row: dict[str, Any] = {
            "id": node.id,
            "title": node.text,
            "category": node.category,
            "confidence": node.confidence,
            "stakes": node.stakes,
            "status": node.status,
            "date": format_ts(node.created_at)[:10],
            "distance": distance,
        }
        if node.outcome is not None:
            row["outcome"] = node.outcome
        if node.tags:
            row["tags"] = node.tags
        if node.pattern:
            row["pattern"] = node.pattern
        if node.id in why:
            row["relevance"] = why[node.id].relevance
            row["why"] = why[node.id].why
        relevant.append(row)
    guardrails: list[dict[str, Any]] = []
    if pack.guardrails is not None:  # as listGuardrails lists them: the rules, then the graph's
        guardrails = [rule_view(r) for r in pack.guardrails]
        guardrails.append(
            {
                "id": GRAPH_GUARDRAIL,
                "description": graph_rule_description(app),
                "action": "block",
                "scope": [],
                "scopeBy": {},
                "conditions": [],
                "requirements": [],
            }
        )
    view: dict[str, Any] = {
        "agentProfile": pack.profile,
        "relevantDecisions": relevant,
        "activeGuardrails": guardrails,
        "calibrationByCategory": pack.calibration,
        "readyQueue": [
            {
                "id": a.decision_id,
                "title": a.title,
                "reason": QUEUE_REASON[a.type],
                "date": a.date,
                "detail": a.detail,
            }
            for a in pack.ready_queue
        ],
        "confirmedPatterns": pack.patterns,
    }
    if pack.wisdom:
        view["wisdom"] = pack.wisdom
    if pack.breakers:
        view["circuitBreakers"] = pack.breakers
    return view


def register_agents(registry: Registry, app: usecases.Decigraph) -> None:
    def ready(p: ReadyParams, ctx: CallContext) -> Mapping[str, Any]:
        types = p.action_types or ALL_ACTION_TYPES  # none or [] (CSTP): every type
        queue = ready_queue(app, types, p.limit, p.min_priority, p.category)
        result: dict[str, Any] = {
            "actions": [action_view(a) for a in queue.actions],
            "total": queue.total,
            "filtered": queue.filtered,
        }
        if queue.warnings:
            result["warnings"] = queue.warnings
        return result

    def context(p: ContextParams, ctx: CallContext) -> Mapping[str, Any]:
        started = time.perf_counter()
        task = p.task_description or None
        pack = session_context(
            app,
            task,
            p.include,
            p.limit,
            p.decisions_limit,
            p.ready_limit,
            agent=ctx.agent,
            floor=p.min_relevance,
        )
        decigraph, cstp = pack_view(pack), cstp_view(app, pack)
        elapsed = round((time.perf_counter() - started) * 1000)
        if p.format == "markdown":
            text = render_markdown(decigraph, cstp, p.agent_id or ctx.agent, pack.briefing)
            cut, truncated = fit(text, p.max_chars)
            answer: dict[str, Any] = {"format": "markdown", "markdown": cut}
            if truncated:
                answer["truncated"] = True
            answer["queryTimeMs"] = elapsed
            return answer
        return {"format": "json", "context": decigraph, **cstp, "queryTimeMs": elapsed}

    registry.add("cstp.ready", ReadyParams, ready)
    registry.add("cstp.getSessionContext", ContextParams, context)


def _profile_line(profile: Mapping[str, Any]) -> str:
    parts = [f"{profile['totalDecisions']} decisions, {profile['reviewed']} reviewed"]
    if "overallAccuracy" in profile:
        parts.append(
            f"accuracy {profile['overallAccuracy']:.0%}, Brier {profile['brierScore']:.3f}, "
            f"{str(profile['tendency']).replace('_', ' ')}"
        )
    if "strongestCategory" in profile:
        parts.append(
            f"strongest in {profile['strongestCategory']}, weakest in {profile['weakestCategory']}"
        )
    if "activeSince" in profile:
        parts.append(f"active since {profile['activeSince']}")
    return "- " + "; ".join(parts)


def _breaker_wait(remaining_ms: Any) -> str:
    """When an open breaker lets a probe through; a half-open one (no cooldown left) already
    does."""
    if remaining_ms is None:
        return "the next matching check is the probe"
    return f"resets in {int(remaining_ms) // 1000}s"


def _cstp_sections(cstp: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """CSTP's Markdown sections, in its order: (title, lines)."""
    breakers = [
        f"- [{str(b['state']).upper()}] {b['scope']} — {b['failure_count']}/"
        f"{b['failure_threshold']} failures, {_breaker_wait(b.get('cooldown_remaining_ms'))}"
        for b in cstp.get("circuitBreakers", ())
    ]
    calibration = ["| Category | Reviewed | Accuracy | Brier | Tendency |", "|---|---|---|---|---|"]
    calibration += [
        f"| {name} | {c['reviewedDecisions']} | {c['accuracy']:.0%} | {c['brierScore']:.3f} | "
        f"{str(c['interpretation']).replace('_', ' ')} |"
        for name, c in cstp["calibrationByCategory"].items()
    ]
    pending = [
        f"- {'OVERDUE' if q['reason'] == 'overdue_review' else 'STALE'} `{q['id']}` "
        f"{q['title']} ({q['detail']})"
        for q in cstp["readyQueue"]
    ]
    patterns = [
        f"- {p['pattern']} ({p['count']} decisions: {', '.join(p['categories']) or '-'})"
        for p in cstp["confirmedPatterns"]
    ]
    wisdom = [
        f"- {w['category'] or 'uncategorised'}: {w['decisions']} decisions"
        + (f", {w['successRate']:.0%} succeeded" if "successRate" in w else "")
        + "".join(f"; {k['text']}" for k in w.get("keyPrinciples", ()))
        for w in cstp.get("wisdom", ())
    ]
    relevant = [
        f"- `{d['id']}` [{d['category'] or '-'}, confidence {d['confidence']}] {d['title']}"
        + (f" → {d['outcome']}" if "outcome" in d else "")
        for d in cstp["relevantDecisions"]
    ]
    return [
        ("Profile", [_profile_line(cstp["agentProfile"])]),
        (
            "Active Guardrails",
            [f"- [{g['action']}] {g['description']}" for g in cstp["activeGuardrails"]],
        ),
        ("Circuit Breakers", breakers),
        ("Calibration by Category", calibration if cstp["calibrationByCategory"] else []),
        ("Pending Actions", pending),
        ("Confirmed Patterns", patterns),
        ("Wisdom", wisdom),
        ("Relevant Decisions", relevant),
    ]


def _about(pack: Mapping[str, Any], named: set[str]) -> dict[str, Any]:
    """decigraph's sections cut to what concerns the ``named`` decisions: contradictions
    between two of them, blocked work among them, queue items about them; no separate recall
    or most-important list (the briefing ranks those already)."""
    return {
        "contradictions": [
            c for c in pack.get("contradictions") or () if {c["a"], c["b"]} <= named
        ],
        "blocked": [b for b in pack.get("blocked") or () if b["id"] in named],
        "ready": [r for r in pack.get("ready") or () if r.get("decisionId") in named],
    }


def _decigraph_sections(pack: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """decigraph's own sections (recall, contradictions, salience, blocked work, the queue)."""
    lines: dict[str, list[str]] = {}
    for item in pack.get("relevant") or ():
        lines.setdefault("Recalled for this task", []).append(f"- `{item['id']}` {item['text']}")
    for item in pack.get("contradictions") or ():
        stake = item["salienceAtStake"]
        lines.setdefault("Open contradictions", []).append(
            f"- `{item['a']}` contradicts `{item['b']}` (salience {stake:.2f})"
        )
    for item in pack.get("salient") or ():
        lines.setdefault("Most important decisions", []).append(f"- `{item['id']}` {item['text']}")
    for item in pack.get("blocked") or ():
        lines.setdefault("Blocked work", []).append(
            f"- `{item['id']}` blocked by {', '.join(item['blockers'])}"
        )
    for item in pack.get("ready") or ():
        named = f"`{item['decisionId']}` {item['text']}" if "decisionId" in item else ""
        lines.setdefault("Needs attention", []).append(
            f"- [{item['priority']}] {named or item.get('category', '')}: "
            f"{item['reason']}; {item['suggestion']}"
        )
    return list(lines.items())


def render_markdown(
    pack: Mapping[str, Any],
    cstp: Mapping[str, Any],
    agent: str,
    briefing: Briefing | None = None,
) -> str:
    """One document: the task, a heading naming the agent, CSTP's sections in its order,
    decigraph's, and CSTP's closing reminder; empty sections are left out. With a task's
    ``briefing``, its sections stand for CSTP's relevant decisions, and decigraph's sections
    keep only what concerns the decisions it names (the rest is noise for this task)."""
    lines = []
    if pack.get("taskDescription"):
        lines.append(f"# Context for: {pack['taskDescription']}")
    lines.append(f"## Session context for {agent}")
    if briefing is not None:
        named = set(briefing.ids())
        cstp = {**cstp, "readyQueue": [q for q in cstp["readyQueue"] if q["id"] in named]}
    sections = _cstp_sections(cstp)
    if briefing is not None:
        sections = [(t, b) for t, b in sections if t != "Relevant Decisions"]
        sections += markdown_lines(briefing)
        sections += _decigraph_sections(_about(pack, named))
    else:
        sections += _decigraph_sections(pack)
    for title, body in sections:
        if body:
            lines += ["", f"### {title}", *body]
    lines += [
        "",
        "> Before acting, call pre_action (cstp.preAction): it checks the guardrails "
        "and records the decision.",
    ]
    return "\n".join(lines)


def fit(text: str, max_chars: int) -> tuple[str, bool]:
    """``text`` cut at a whole line so it fits ``max_chars``, and whether it was cut."""
    out: list[str] = []
    used = 0
    for line in text.split("\n"):
        if used + len(line) + 1 > max_chars:
            return "\n".join(out), True
        out.append(line)
        used += len(line) + 1
    return "\n".join(out), False
