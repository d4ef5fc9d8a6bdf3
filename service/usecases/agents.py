"""What an agent needs before it acts: the work queue (``ready``) and a context pack for a task.

The queue lists what needs attention, each item with the decision's text: CSTP's detectors
(reviews past their ``review_by`` date, decisions pending for over 30 days with no review date,
calibration drift per category) and decigraph's (open contradictions, high-stakes decisions
held at low confidence, and blocked work). A decision is blocked only by what it cannot rely on
(:mod:`graph.algorithms.contradictions`): a ``depends_on`` target that is rejected, failed,
abandoned or still proposed, or the source of a ``blocks`` edge that is not done yet (no
``success``/``partial`` review). Depending on an accepted decision that simply has not been
reviewed yet is not blocked. "Today" is the store's clock.
"""

from __future__ import annotations

import typing
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import networkx as nx

from graph.algorithms.contradictions import (
    BlockedChain,
    BlockReason,
)
from graph.algorithms.salience import get_high_salience
from graph.enums import EdgeType
from graph.model import Node
from graph.timeutil import format_ts
from retrieval.recall import recall

from .analytics import Row, by_category, rounded, scan, score, today
from .analytics_reasons import DriftQuery, drift_report
from .breakers import open_breakers
from .briefing import Briefing, brief
from .compaction import wisdom
from .context import Decigraph
from .graphs import every_blocked_chain
from .reads import get_node
from .rules import Rule

ActionType = Literal[
    "review_outcome",
    "calibration_drift",
    "stale_pending",
    "resolve_contradiction",
    "unblock",
    "low_confidence",
]
#: decigraph's earlier name for CSTP's ``review_outcome`` (still accepted in ``actionTypes``).
ALIASES: dict[str, ActionType] = {"review_overdue": "review_outcome"}
Section = Literal[
    "relevant",
    "contradictions",
    "salient",
    "blocked",
    "ready",
    "guardrails",
    # CSTP's sections ("ready" and "guardrails" are shared)
    "decisions",
    "calibration",
    "patterns",
    "wisdom",
]
Priority = Literal["high", "medium", "low"]
_PRIORITY = {"high": 0, "medium": 1, "low": 2}
#: Every action type, in CSTP's sort order (decigraph's after CSTP's).
ALL_ACTION_TYPES: tuple[ActionType, ...] = (
    "review_outcome",
    "calibration_drift",
    "stale_pending",
    "resolve_contradiction",
    "unblock",
    "low_confidence",
)
_TYPE_RANK = {t: i for i, t in enumerate(ALL_ACTION_TYPES)}
#: CSTP: a pending decision with no review date is stale after 30 days, urgent after 60.
STALE_DAYS, URGENT_DAYS = 30, 60


@dataclass(frozen=True)
class Action:
    """One item of the work queue: what to do about which decision (and its text), and why.

    Calibration-drift items name a category, not a decision (``decision_id`` is ``None``).
    """

    type: ActionType
    priority: Priority
    decision_id: str | None
    reason: str
    suggestion: str
    text: str = ""
    category: str | None = None
    date: str | None = None
    detail: str | None = None
    score: float = 0.0

    @property
    def title(self) -> str | None:
        """CSTP's title: the decision's text, at most 80 characters."""
        if self.decision_id is None:
            return None
        return self.text if len(self.text) <= 80 else self.text[:79] + "…"

    def order(self) -> tuple[int, int, float, str, str]:
        """CSTP's order (priority, type, date, a missing date last), then the stake, then id."""
        rank = (_PRIORITY[self.priority], _TYPE_RANK[self.type], -self.score)
        return (*rank, self.date or "9999", self.decision_id or self.category or "")


@dataclass
class ReadyQueue:
    """The queue after sorting: ``total`` actions found, ``filtered`` of them below the
    minimum priority, ``actions`` the first ``limit`` of the rest."""

    actions: list[Action]
    total: int
    filtered: int
    warnings: list[str] = field(default_factory=list)


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


def _row_action(
    kind: ActionType, priority: Priority, r: Row, why: str, tip: str, detail: str
) -> Action:
    return Action(
        kind, priority, r.id, why, tip, r.text, r.category, format_ts(r.created)[:10], detail
    )


def _dated_actions(rows: list[Row], now: datetime, types: Collection[ActionType]) -> list[Action]:
    """CSTP's detectors over pending, active decisions: overdue reviews and stale ones."""
    out = []
    for r in rows:
        if r.status != "pending" or not r.active:
            continue
        if r.review_by is not None:
            overdue = (now.date() - r.review_by.date()).days
            if "review_outcome" in types and overdue > 0:
                due = format_ts(r.review_by)[:10]
                priority: Priority = (
                    "high"
                    if r.stakes in ("high", "critical")
                    else "medium"
                    if r.stakes == "medium"
                    else "low"
                )
                why = f"Decision needs outcome review (due {due}, {overdue}d overdue)"
                tip = "record how it turned out with review_outcome (cstp.reviewDecision)"
                detail = f"review by {due} ({overdue}d overdue)"
                out.append(_row_action("review_outcome", priority, r, why, tip, detail))
            continue
        age = (now - r.created).days
        if "stale_pending" in types and age > STALE_DAYS:
            why = f"Decision pending for {age} days with no outcome"
            tip = "review its outcome (cstp.reviewDecision) or set a review date"
            priority = "high" if age > URGENT_DAYS else "medium"
            out.append(_row_action("stale_pending", priority, r, why, tip, f"pending {age} days"))
    return out


def _drift_actions(rows: list[Row], now: datetime, category: str | None) -> list[Action]:
    """CSTP's calibration-drift detector: checkDrift (default thresholds) per category with
    reviewed decisions, each alert an action."""
    names = sorted({r.category for r in rows if r.category is not None and r.reviewed})
    out = []
    for name in names if category is None else [category]:
        report = drift_report(
            [r for r in rows if r.category == name],
            now,
            DriftQuery.model_validate({"category": name}),
        )
        for alert in report["alerts"]:
            priority: Priority = "high" if abs(float(alert["changePct"])) >= 40 else "medium"
            tip = f"recalibrate {name} confidence (cstp.getCalibration) before the next call"
            out.append(
                Action(
                    "calibration_drift",
                    priority,
                    None,
                    str(alert["message"]),
                    tip,
                    category=name,
                    detail=str(alert["type"]),
                )
            )
    return out


def _graph_actions(app: Decigraph, types: Collection[ActionType]) -> list[Action]:
    """decigraph's detectors: shaky high stakes, open contradictions, blocked work (hold the
    store lock)."""
    G = app.store.graph
    out: list[Action] = []

    def add(
        kind: ActionType, priority: Priority, stake: float, node_id: str, why: str, tip: str
    ) -> None:
        attrs = G.nodes[node_id]
        category = attrs.get("category")
        date = str(attrs.get("created_at", ""))[:10] or None
        text = str(attrs.get("text", ""))
        out.append(Action(kind, priority, node_id, why, tip, text, category, date, score=stake))

    if "low_confidence" in types:
        for r in scan(app):
            confidence = r.confidence
            if (
                r.status == "pending"
                and r.active
                and r.stakes in ("high", "critical")
                and (confidence is not None and confidence < 0.5)
            ):
                why = f"{r.stakes}-stakes decision at confidence {confidence}"
                tip = "gather evidence or add reasons before building on it"
                add("low_confidence", "medium", 1 - confidence, r.id, why, tip)
    if "resolve_contradiction" in types:
        threshold = app.settings.salience_threshold
        for c in app.store.risk.contradictions(G, app.store.salience()):
            priority: Priority = "high" if c.salience_at_stake >= threshold else "medium"
            why = f"contradicts {c.b} {_quote(G, c.b)}"
            add(
                "resolve_contradiction",
                priority,
                c.salience_at_stake,
                c.a,
                why,
                f"supersede one of {c.a} and {c.b}",
            )
    if "unblock" in types:
        for chain in every_blocked_chain(app):
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
    return out


def ready_queue(
    app: Decigraph,
    types: Collection[str],
    limit: int,
    min_priority: Priority = "low",
    category: str | None = None,
) -> ReadyQueue:
    """The work queue, in CSTP's order; unknown type names match nothing (and are reported
    in ``warnings``); ``category`` restricts every detector to that category's decisions."""
    wanted = {ALIASES.get(t, t) for t in types}
    warnings = [
        f"actionTypes: {t!r} is not an action type; it matches nothing"
        for t in sorted(set(types))
        if ALIASES.get(t, t) not in _TYPE_RANK
    ]
    known: set[ActionType] = {t for t in ALL_ACTION_TYPES if t in wanted}
    now = today(app)
    with app.store.lock:
        rows = scan(app)
        found = _dated_actions(rows, now, known)
        if "calibration_drift" in known:
            found += _drift_actions(rows, now, category)
        found += _graph_actions(app, known)
    if category is not None:
        found = [a for a in found if a.category == category]
    found.sort(key=Action.order)
    kept = [a for a in found if _PRIORITY[a.priority] <= _PRIORITY[min_priority]]
    return ReadyQueue(kept[:limit], len(found), len(found) - len(kept), warnings)


def ready_actions(app: Decigraph, types: Collection[str], limit: int) -> list[Action]:
    """The first ``limit`` actions of the queue (every priority, every category)."""
    return ready_queue(app, types, limit).actions


@dataclass(frozen=True)
class Mention:
    """A decision named in a context pack, with the score that put it there."""

    id: str
    text: str
    score: float


@dataclass
class SessionPack:
    """A context pack for a task; decigraph's sections not asked for stay ``None``, CSTP's
    are empty. ``relevant_decisions`` pairs each decision with its distance (lower is closer)."""

    task: str | None
    intent: str | None = None
    relevant: list[Mention] | None = None
    contradictions: list[tuple[str, str, float]] | None = None
    salient: list[Mention] | None = None
    blocked: list[tuple[str, list[str]]] | None = None
    ready: list[Action] | None = None
    guardrails: list[Rule] | None = None
    sections: list[Section] = field(default_factory=list)
    profile: dict[str, Any] = field(default_factory=dict)
    relevant_decisions: list[tuple[Node, float]] = field(default_factory=list)
    calibration: dict[str, dict[str, Any]] = field(default_factory=dict)
    ready_queue: list[Action] = field(default_factory=list)
    patterns: list[dict[str, Any]] = field(default_factory=list)
    wisdom: list[dict[str, Any]] | None = None
    breakers: list[dict[str, Any]] = field(default_factory=list)
    #: What matters for the task (conflicts, failures, relevant decisions), when there is one.
    briefing: Briefing | None = None


def agent_profile(rows: list[Row]) -> dict[str, Any]:
    """CSTP's ``agentProfile`` over ``rows`` (the caller's own decisions): accuracy, Brier
    and tendency once three decisions are scored; the strongest and weakest categories by
    success share (partials count 0) among those with three reviewed decisions, when there are
    two such categories to compare."""
    profile: dict[str, Any] = {
        "totalDecisions": len(rows),
        "reviewed": sum(1 for r in rows if r.reviewed),
    }
    overall = score(rows)
    if overall is not None:
        profile["overallAccuracy"] = overall["accuracy"]
        profile["brierScore"] = overall["brierScore"]
        profile["tendency"] = overall["interpretation"]
    groups: dict[str, list[Row]] = {}
    for r in rows:
        if r.reviewed and r.category is not None:
            groups.setdefault(r.category, []).append(r)
    share = {
        name: rounded(sum(1 for r in g if r.outcome == "success") / len(g), 3)
        for name, g in groups.items()
        if len(g) >= 3
    }
    if len(share) >= 2:
        profile["strongestCategory"] = min(share, key=lambda c: (-share[c], c))
        profile["weakestCategory"] = min(share, key=lambda c: (share[c], c))
    if rows:
        profile["activeSince"] = format_ts(rows[0].created)[:10]
    return profile


def confirmed_patterns(rows: list[Row]) -> list[dict[str, Any]]:
    """Patterns followed by at least two decisions, most used first (ties by text)."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        if r.pattern:
            groups.setdefault(r.pattern, []).append(r)
    ranked = sorted(
        (kv for kv in groups.items() if len(kv[1]) >= 2), key=lambda kv: (-len(kv[1]), kv[0])
    )
    return [
        {
            "pattern": pattern,
            "count": len(group),
            "categories": sorted({r.category for r in group if r.category is not None}),
            "exampleIds": [r.id for r in group[:5]],
        }
        for pattern, group in ranked
    ]


def session_context(
    app: Decigraph,
    task: str | None,
    include: Collection[Section],
    limit: int,
    decisions_limit: int = 10,
    ready_limit: int = 5,
    *,
    agent: str | None = None,
    floor: float | None = None,
) -> SessionPack:
    """The context pack: decigraph's sections (``relevant``, ``contradictions``, ``salient``,
    ``blocked``, ``ready``, ``guardrails``) and CSTP's (``decisions``, ``calibration``,
    ``ready``, ``patterns``, ``wisdom``), each only when included; the profile (of ``agent``'s
    own decisions) and the open circuit breakers always. Without a task there are no relevant
    decisions; with one, the relevant decisions are the task's briefing (at least ``floor``
    relevant, default ``Settings.relevance_floor``; at most ``decisions_limit``)."""
    pack = SessionPack(task, sections=[s for s in _ORDER if s in include])
    G = app.store.graph
    if task and "decisions" in include:
        vector = app.index.embed([task])[0]
        threshold = app.settings.relevance_floor if floor is None else floor
        pack.briefing = brief(app, task, vector, floor=threshold, limit=decisions_limit)
        pack.relevant_decisions = [
            (node, round(1.0 - item.relevance, 6))
            for item in pack.briefing.items()
            if (node := get_node(app, item.id)) is not None
        ]
    if task and "relevant" in include:
        answer = recall(app.index, task, limit)
        pack.intent = answer.intent.value
        with app.store.lock:
            pack.relevant = [
                Mention(h.id, str(G.nodes[h.id]["text"]), h.score) for h in answer.hits if h.id in G
            ]
    elif "relevant" in include:
        pack.relevant = []
    with app.store.lock:
        rows = scan(app)
        pack.profile = agent_profile([r for r in rows if agent is None or r.agent == agent])
        if "calibration" in include:
            pack.calibration = by_category(rows)
        if "patterns" in include:
            pack.patterns = confirmed_patterns(rows)
        if "contradictions" in include:
            found = app.store.risk.contradictions(G, app.store.salience(), limit=limit)
            pack.contradictions = [(c.a, c.b, c.salience_at_stake) for c in found]
        if "salient" in include:
            # Decisions something relies on (salience 0 is nothing to point at), most first.
            top = get_high_salience(G, app.store.salience(), limit, active_only=True)
            pack.salient = [
                Mention(i, str(G.nodes[i]["text"]), s)
                for i, s in top
                if s > 0 and G.nodes[i].get("kind", "decision") == "decision"
            ]
        if "blocked" in include:
            pack.blocked = [
                (c.node_id, [b.node_id for b in c.blockers])
                for c in every_blocked_chain(app)[:limit]
            ]
    if "ready" in include:
        pack.ready = ready_actions(app, ALL_ACTION_TYPES, limit)
        pack.ready_queue = ready_actions(app, ("review_outcome", "stale_pending"), ready_limit)
    if "guardrails" in include:
        pack.guardrails = list(app.rules)
    if "wisdom" in include:
        pack.wisdom = wisdom(app)
    pack.breakers = open_breakers(app)
    return pack


#: Sections in the order a pack shows them: the order ``Section`` declares them.
_ORDER: tuple[Section, ...] = typing.get_args(Section)
