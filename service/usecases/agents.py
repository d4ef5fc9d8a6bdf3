"""What an agent needs before it acts: the work queue (``ready``) and a context pack for a task.

The queue lists what needs attention, each item with the decision's text: overdue reviews,
open contradictions, high-stakes decisions held at low confidence, and blocked work. A
decision is blocked only by what it cannot rely on (:mod:`graph.algorithms.contradictions`):
a ``depends_on`` target that is rejected, failed, abandoned or still proposed, or the source of
a ``blocks`` edge that is not done yet (no ``success``/``partial`` review). Depending on an
accepted decision that simply has not been reviewed yet is not blocked.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

import networkx as nx

from graph.algorithms.contradictions import (
    BlockedChain,
    BlockReason,
    find_contradictions,
    get_blocked_chain,
)
from graph.algorithms.salience import get_high_salience
from graph.enums import EdgeType
from graph.lifecycle import is_active
from graph.timeutil import format_ts, utc_now
from retrieval.recall import recall

from .context import Decigraph
from .rules import Rule

ActionType = Literal["review_overdue", "resolve_contradiction", "unblock", "low_confidence"]
Section = Literal["relevant", "contradictions", "salient", "blocked", "ready", "guardrails"]
Priority = Literal["high", "medium", "low"]
_PRIORITY = {"high": 0, "medium": 1, "low": 2}
ALL_ACTION_TYPES: tuple[ActionType, ...] = (
    "review_overdue",
    "resolve_contradiction",
    "unblock",
    "low_confidence",
)


@dataclass(frozen=True)
class Action:
    """One item of the work queue: what to do about which decision (and its text), and why."""

    type: ActionType
    priority: Priority
    decision_id: str
    reason: str
    suggestion: str
    text: str = ""


_WHY: dict[BlockReason, str] = {
    "rejected": "was rejected",
    "failed": "was reviewed as a failure",
    "abandoned": "was abandoned",
    "proposed": "is only proposed, not accepted",
    "pending": "is not done yet (no success or partial review)",
}


def _quote(G: nx.MultiDiGraph[str], node_id: str, width: int = 80) -> str:
    text = str(G.nodes[node_id].get("text", ""))
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def blocked_reason(G: nx.MultiDiGraph[str], chain: BlockedChain) -> str:
    """Why ``chain.node_id`` is blocked, in words: its first direct blocker (and how many more)."""
    first = chain.blockers[0]
    verb = "waits for" if first.via_type is EdgeType.BLOCKS else "depends on"
    named = first.node_id
    if first.stands_for:
        named = f"{first.stands_for}, replaced by {first.node_id}"
    more = len(chain.blockers) - 1
    tail = f" (and {more} more blocker{'s' if more > 1 else ''})" if more else ""
    return f"{verb} {named} {_quote(G, first.node_id)}, which {_WHY[first.reason]}{tail}"


def ready_actions(app: Decigraph, types: Collection[ActionType], limit: int) -> list[Action]:
    """The work queue: overdue reviews, open contradictions, blocked work, shaky high stakes;
    by priority, then by how much is at stake, then by id."""
    G = app.store.graph
    now = format_ts(utc_now())
    ranked: list[tuple[int, float, str, Action]] = []

    def add(
        kind: ActionType, priority: Priority, score: float, node_id: str, why: str, tip: str
    ) -> None:
        text = str(G.nodes[node_id].get("text", ""))
        action = Action(kind, priority, node_id, why, tip, text)
        ranked.append((_PRIORITY[priority], -score, node_id, action))

    with app.store.lock:
        for node_id, attrs in G.nodes(data=True):
            if attrs.get("kind", "decision") != "decision" or not is_active(G, node_id):
                continue
            pending = attrs.get("status") == "pending"
            stakes = attrs.get("stakes")
            due = attrs.get("review_by")
            if "review_overdue" in types and pending and due and str(due) < now:
                priority: Priority = "high" if stakes in ("high", "critical") else "medium"
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
            threshold = app.settings.salience_threshold
            for c in find_contradictions(G, app.store.salience()):
                add(
                    "resolve_contradiction",
                    "high" if c.salience_at_stake >= threshold else "medium",
                    c.salience_at_stake,
                    c.a,
                    f"contradicts {c.b} {_quote(G, c.b)}",
                    f"supersede one of {c.a} and {c.b}",
                )
        if "unblock" in types:
            for chain in get_blocked_chain(G):
                first = chain.blockers[0].node_id
                tip = {
                    "pending": f"review {first} once it is done (cstp.reviewDecision)",
                    "proposed": f"accept {first} or supersede it",
                }.get(chain.blockers[0].reason, f"supersede {first}, or drop the dependency")
                add(
                    "unblock",
                    "medium",
                    float(len(chain.chain)),
                    chain.node_id,
                    blocked_reason(G, chain),
                    tip,
                )
    ranked.sort(key=lambda a: a[:3])
    return [a[3] for a in ranked[:limit]]


@dataclass(frozen=True)
class Mention:
    """A decision named in a context pack, with the score that put it there."""

    id: str
    text: str
    score: float


@dataclass
class SessionPack:
    """A bounded context pack for a task; sections not asked for stay ``None``."""

    task: str
    intent: str | None = None
    relevant: list[Mention] | None = None
    contradictions: list[tuple[str, str, float]] | None = None
    salient: list[Mention] | None = None
    blocked: list[tuple[str, list[str]]] | None = None
    ready: list[Action] | None = None
    guardrails: list[Rule] | None = None
    sections: list[Section] = field(default_factory=list)


def session_context(
    app: Decigraph, task: str, include: Collection[Section], limit: int
) -> SessionPack:
    pack = SessionPack(task, sections=[s for s in _ORDER if s in include])
    G = app.store.graph
    if "relevant" in include:
        answer = recall(app.index, task, limit)
        pack.intent = answer.intent.value
        with app.store.lock:
            pack.relevant = [
                Mention(h.id, str(G.nodes[h.id]["text"]), h.score) for h in answer.hits if h.id in G
            ]
    with app.store.lock:
        if "contradictions" in include:
            found = find_contradictions(G, app.store.salience(), limit=limit)
            pack.contradictions = [(c.a, c.b, c.salience_at_stake) for c in found]
        if "salient" in include:
            top = get_high_salience(G, app.store.salience(), limit, active_only=True)
            pack.salient = [Mention(i, str(G.nodes[i]["text"]), s) for i, s in top]
        if "blocked" in include:
            pack.blocked = [
                (c.node_id, [b.node_id for b in c.blockers]) for c in get_blocked_chain(G)[:limit]
            ]
    if "ready" in include:
        pack.ready = ready_actions(app, ALL_ACTION_TYPES, limit)
    if "guardrails" in include:
        pack.guardrails = list(app.rules)
    return pack


_ORDER: tuple[Section, ...] = (
    "relevant",
    "contradictions",
    "salient",
    "blocked",
    "ready",
    "guardrails",
)
