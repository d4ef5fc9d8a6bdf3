"""CSTP's memory compaction on decigraph's salience: levels, the preserve flag, and
the wisdom distilled from old reviewed decisions.

Compaction only shapes answers: nothing is deleted or rewritten, the event log keeps every
decision in full. A decision's level is decided by these rules, in this order (the first that
applies wins):

==============  ===========  ==================================================================
why             level        rule
==============  ===========  ==================================================================
``preserved``   ``full``     the decision carries ``preserve`` (``cstp.setPreserve``)
``pending``     ``full``     its status is not ``reviewed``: an open decision is never shrunk
``undated``     ``full``     it has no readable date (``occurred_at``, else ``created_at``)
``structural``  ``full``     its salience reaches the structural threshold
                             (``settings.salience_threshold``, 0.5 by default, the one the graph
                             guardrail protects decisions above): ``salience >= threshold``.
                             A decision others rely on stays whole however old it is (the rule
                             "a structurally important decision is never compacted")
``age``         by age       whole days from its date to the store clock (``store.now()``):
                             < 7 ``full``, < 30 ``summary``, < 90 ``digest``, else ``wisdom``
==============  ===========  ==================================================================

So a decision decigraph compacts is reviewed, unpreserved, and peripheral (salience below the
threshold); everything the guardrail would protect (``salience > threshold``) is kept full.
Memory items (observations, facts, thoughts) are not decisions and are never counted.

Every function reads the graph once under the store lock, with one clock reading and one
salience read (cached by the store until the next event), so the levels within one answer
agree with each other.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from graph.enums import Category, NodeKind, Outcome, ReviewStatus
from graph.errors import ValidationError
from graph.model import Node
from graph.timeutil import parse_ts

from .context import Decigraph
from .inputs import Input, NodeId

__all__ = [
    "LEVELS",
    "CompactQuery",
    "CompactReport",
    "CompactedPage",
    "CompactedQuery",
    "Leveled",
    "Preserved",
    "SetPreserve",
    "WisdomQuery",
    "compact",
    "compacted",
    "compaction_level",
    "compaction_levels",
    "level_for",
    "set_preserve",
    "wisdom",
]

Level = Literal["full", "summary", "digest", "wisdom"]
Why = Literal["preserved", "pending", "undated", "structural", "age"]
LEVELS: tuple[Level, ...] = ("full", "summary", "digest", "wisdom")
#: CSTP's age bounds in whole days: below the first ``full``, below the second ``summary``...
AGE_BOUNDS: tuple[tuple[int, Level], ...] = ((7, "full"), (30, "summary"), (90, "digest"))
#: CSTP's numeric reading of an outcome (calibration, ``actualConfidence``, Brier).
OUTCOME_VALUE: Mapping[str, float] = {
    Outcome.SUCCESS.value: 1.0,
    Outcome.PARTIAL.value: 0.5,
    Outcome.FAILURE.value: 0.0,
    Outcome.ABANDONED.value: 0.0,
}
_PRINCIPLES = 5
_PRINCIPLE_EXAMPLES = 3


# -- inputs ------------------------------------------------------------------------------------
class CompactQuery(Input):
    """Recount the levels (``cstp.compact``); ``dry_run`` is only echoed, as nothing is ever
    rewritten."""

    category: Category | None = None
    dry_run: bool = False


class CompactedQuery(Input):
    """Decisions shaped by level (``cstp.getCompacted``).

    ``level`` is free text because CSTP ignores a level it does not know (no filter) instead of
    refusing it; :func:`compacted` reports that it did so.
    """

    category: Category | None = None
    level: str | None = Field(default=None, max_length=100)
    limit: int = Field(default=50, ge=1, le=500)
    include_preserved: bool = True


class SetPreserve(Input):
    """Set (``preserve``) or remove (``not preserve``) a decision's preserve flag."""

    id: NodeId
    preserve: bool = True


class WisdomQuery(Input):
    """Wisdom per category (``cstp.getWisdom``) from at least ``min_decisions`` decisions."""

    category: Category | None = None
    min_decisions: int = Field(default=5, ge=1, le=100)


# -- results -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Leveled:
    """A decision with its compaction level and why it has it; ``attrs`` is a copy of its
    stored attributes (the JSON form of :class:`~graph.model.Node`)."""

    id: str
    level: Level
    why: Why
    date: datetime | None
    attrs: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CompactReport:
    """``cstp.compact``: how many decisions sit at each level.

    ``structural`` counts the decisions kept full only because of their salience (reviewed,
    unpreserved, at least 7 days old): what salience changes against CSTP's age rule.
    """

    compacted: int
    preserved: int
    structural: int
    levels: dict[str, int]
    dry_run: bool
    threshold: float


@dataclass(frozen=True, slots=True)
class CompactedPage:
    """``cstp.getCompacted``: the decisions returned (newest first, ids breaking ties), the
    level counts before the limit, and the ``level`` given that is not a level (ignored)."""

    decisions: list[Leveled]
    levels: dict[str, int]
    forced: Level | None
    ignored_level: str | None


@dataclass(frozen=True, slots=True)
class Preserved:
    """``cstp.setPreserve``: ``found`` is false for an unknown id (or a memory item);
    ``changed`` is false when the flag already had that value (nothing was written)."""

    id: str
    preserve: bool
    found: bool
    changed: bool
    version: int | None


# -- the rule ----------------------------------------------------------------------------------
def _date(attrs: Mapping[str, Any]) -> datetime | None:
    raw = attrs.get("occurred_at") or attrs.get("created_at")
    if raw is None:
        return None
    try:
        return parse_ts(raw)
    except (TypeError, ValueError, OverflowError):
        return None


def level_for(
    attrs: Mapping[str, Any], salience: float, now: datetime, threshold: float
) -> tuple[Level, Why, datetime | None]:
    """The level of one decision, why, and the date it was aged from (module docstring rules).

    Parameters
    ----------
    attrs : mapping
        The decision's stored attributes.
    salience : float
        Its salience (:meth:`graph.store.DecisionStore.salience`).
    now : datetime
        The reference time (the store clock).
    threshold : float
        The structural salience threshold.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> now = datetime(2026, 6, 1, tzinfo=UTC)
    >>> old = {"status": "reviewed", "created_at": "2026-01-01T00:00:00Z"}
    >>> level_for(old, 0.1, now, 0.5)[:2]
    ('wisdom', 'age')
    >>> level_for(old, 0.5, now, 0.5)[:2]
    ('full', 'structural')
    >>> level_for({**old, "preserve": True}, 0.0, now, 0.5)[:2]
    ('full', 'preserved')
    >>> level_for({**old, "created_at": "2026-05-20T00:00:00Z"}, 0.0, now, 0.5)[:2]
    ('summary', 'age')
    """
    date = _date(attrs)
    if attrs.get("preserve"):
        return "full", "preserved", date
    if attrs.get("status") != ReviewStatus.REVIEWED.value:
        return "full", "pending", date
    if date is None:
        return "full", "undated", None
    if salience >= threshold:
        return "full", "structural", date
    days = (now - date).days
    for bound, level in AGE_BOUNDS:
        if days < bound:
            return level, "age", date
    return "wisdom", "age", date


def _is_decision(attrs: Mapping[str, Any]) -> bool:
    return bool(attrs.get("kind", NodeKind.DECISION.value) == NodeKind.DECISION.value)


def _scan(app: Decigraph, category: str | None = None) -> list[Leveled]:
    """Every decision (of ``category``) with its level, newest first, ids breaking ties."""
    threshold = app.settings.salience_threshold
    with app.store.lock:
        G = app.store.graph
        salience = app.store.salience()
        now = app.store.now()
        found: list[Leveled] = []
        for node_id, attrs in G.nodes(data=True):
            if not _is_decision(attrs):
                continue
            if category is not None and attrs.get("category") != category:
                continue
            level, why, date = level_for(attrs, salience.get(node_id, 0.0), now, threshold)
            found.append(Leveled(node_id, level, why, date, dict(attrs)))
    # Undated decisions sort last; within a date the smaller id first.
    found.sort(key=lambda d: (d.date is None, -(d.date.timestamp()) if d.date else 0.0, d.id))
    return found


def _levels(items: Iterable[Leveled]) -> dict[str, int]:
    counts: dict[str, int] = dict.fromkeys(LEVELS, 0)
    for item in items:
        counts[item.level] += 1
    return counts


def _is_structural(item: Leveled) -> bool:
    return item.why == "structural"


# -- use cases ---------------------------------------------------------------------------------
def compaction_levels(app: Decigraph, node_ids: Iterable[str]) -> dict[str, str]:
    """The level of each of ``node_ids`` that is a stored decision (one clock and one salience
    reading for all; other ids are left out). For answers that annotate many decisions."""
    threshold = app.settings.salience_threshold
    with app.store.lock:
        G = app.store.graph
        salience = app.store.salience()
        now = app.store.now()
        levels: dict[str, str] = {}
        for node_id in node_ids:
            if node_id not in G or not _is_decision(G.nodes[node_id]):
                continue
            score = salience.get(node_id, 0.0)
            levels[node_id] = level_for(G.nodes[node_id], score, now, threshold)[0]
    return levels


def compaction_level(app: Decigraph, node: Node) -> str:
    """The compaction level of one decision as it stands (``reviewDecision``'s
    ``compactionLevel``); a node no longer stored is judged on ``node`` with salience 0."""
    with app.store.lock:
        score = app.store.salience().get(node.id, 0.0)
        now = app.store.now()
    return level_for(node.to_attrs(), score, now, app.settings.salience_threshold)[0]


def compact(app: Decigraph, query: CompactQuery) -> CompactReport:
    """Recount the levels of every decision (of a category); read-only whatever ``dry_run``."""
    found = _scan(app, query.category)
    return CompactReport(
        compacted=len(found),
        preserved=sum(1 for d in found if d.attrs.get("preserve")),
        structural=sum(1 for d in found if _is_structural(d)),
        levels=_levels(found),
        dry_run=query.dry_run,
        threshold=app.settings.salience_threshold,
    )


def compacted(app: Decigraph, query: CompactedQuery) -> CompactedPage:
    """Decisions to show at their level, newest first (CSTP's ``getCompacted``).

    Without ``level``, wisdom-level decisions are left out (``getWisdom`` aggregates them) but
    counted in ``levels``; with one, only decisions at that level are returned and counted.
    ``include_preserved=False`` leaves preserved decisions out of both. ``levels`` is counted
    before ``limit``.
    """
    forced: Level | None = None
    ignored: str | None = None
    if query.level is not None:
        wanted = query.level.lower()
        if wanted in LEVELS:
            forced = next(level for level in LEVELS if level == wanted)
        else:
            ignored = query.level
    found = _scan(app, query.category)
    if not query.include_preserved:
        found = [d for d in found if not d.attrs.get("preserve")]
    if forced is not None:
        found = [d for d in found if d.level == forced]
    counts = _levels(found)
    shown = found if forced is not None else [d for d in found if d.level != "wisdom"]
    return CompactedPage(shown[: query.limit], counts, forced, ignored)


def set_preserve(app: Decigraph, command: SetPreserve, actor: str) -> Preserved:
    """Set or remove a decision's preserve flag: one logged ``update`` when it changes, nothing
    when it already has that value. Removing stores no flag at all (``None``), not ``false``."""
    with app.store.writing():
        G = app.store.graph
        if command.id not in G or not _is_decision(G.nodes[command.id]):
            return Preserved(command.id, command.preserve, found=False, changed=False, version=None)
        attrs = G.nodes[command.id]
        if bool(attrs.get("preserve")) == command.preserve:
            version = int(attrs["version"])
            return Preserved(command.id, command.preserve, True, False, version)
        node = app.store.update(command.id, {"preserve": command.preserve or None}, actor)
        return Preserved(command.id, command.preserve, True, True, node.version)


def _round(value: float, places: int) -> float:
    return round(value + 0.0, places)


def _wisdom_entry(category: str | None, items: Sequence[Leveled]) -> dict[str, Any]:
    """One category's WisdomEntry (CSTP §4.6.4), camelCase; ``items`` are newest first."""
    entry: dict[str, Any] = {"category": category, "decisions": len(items)}
    outcomes = [str(d.attrs["outcome"]) for d in items if d.attrs.get("outcome")]
    if outcomes:
        successes = sum(1 for o in outcomes if o == Outcome.SUCCESS.value)
        entry["successRate"] = _round(successes / len(outcomes), 3)
    patterns: Counter[str] = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    failures: Counter[str] = Counter()
    for d in items:
        pattern = d.attrs.get("pattern")
        if not pattern:
            continue
        patterns[pattern] += 1
        if len(examples[pattern]) < _PRINCIPLE_EXAMPLES:
            examples[pattern].append(d.id)
        if d.attrs.get("outcome") in (Outcome.FAILURE.value, Outcome.PARTIAL.value):
            failures[pattern] += 1
    # Ranked by count, then by text: equal counts never depend on the order of the graph.
    confirmed = sorted(((-n, text) for text, n in patterns.items() if n >= 2))[:_PRINCIPLES]
    if confirmed:
        entry["keyPrinciples"] = [
            {"text": text, "confirmations": -n, "exampleIds": examples[text]}
            for n, text in confirmed
        ]
    if failures:
        entry["commonFailureMode"] = min(failures.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    confidences = [
        float(d.attrs["confidence"]) for d in items if d.attrs.get("confidence") is not None
    ]
    if confidences:
        entry["avgConfidence"] = _round(sum(confidences) / len(confidences), 3)
    scored = [
        (float(d.attrs["confidence"]) - OUTCOME_VALUE[str(d.attrs["outcome"])]) ** 2
        for d in items
        if d.attrs.get("confidence") is not None and d.attrs.get("outcome") in OUTCOME_VALUE
    ]
    if scored:
        entry["brierScore"] = _round(sum(scored) / len(scored), 4)
    return entry


def wisdom(
    app: Decigraph, category: Category | str | None = None, min_decisions: int = 5
) -> list[dict[str, Any]]:
    """WisdomEntry dicts (camelCase, as on the wire) for every category with at least
    ``min_decisions`` wisdom-level decisions: reviewed, 90 days old or more, not preserved and
    below the structural salience threshold.

    Entries come most decisions first, then by category; decisions without a category form
    one entry with ``category: null``, after the named ones of the same size.

    Raises
    ------
    ValidationError
        When ``min_decisions`` is not a positive integer.
    """
    if isinstance(min_decisions, bool) or not isinstance(min_decisions, int) or min_decisions < 1:
        raise ValidationError("min_decisions", f"must be a positive integer, got {min_decisions!r}")
    wanted = None if category is None else str(category)
    groups: dict[str | None, list[Leveled]] = defaultdict(list)
    for item in _scan(app, wanted):
        if item.level == "wisdom":
            raw = item.attrs.get("category")
            groups[None if raw is None else str(raw)].append(item)
    ranked = sorted(
        (key for key, items in groups.items() if len(items) >= min_decisions),
        key=lambda key: (-len(groups[key]), key is None, key or ""),
    )
    return [_wisdom_entry(key, groups[key]) for key in ranked]
