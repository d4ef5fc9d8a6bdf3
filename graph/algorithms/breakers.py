"""Circuit breakers (CSTP's) as a pure function of the log and the clock.

A breaker watches the outcomes of the decisions in its scope (``global``, ``category:<v>``,
``stakes:<v>``, ``agent:<v>`` for the decision's ``recorded_by``, ``tag:<v>``). CSTP keeps a
mutable state per breaker; decigraph derives it instead: every review of a matching decision
(in review-time order) and every manual reset (a ledger event) is replayed through CSTP's
state machine, so the state survives restarts, replays identically in ``decigraph verify`` and
never drifts from the log:

- CLOSED + failure: counted (failures older than the window dropped); at the threshold OPEN.
- CLOSED + success: the failures are cleared.
- OPEN + failure: counted, nothing else; OPEN + success: nothing.
- OPEN, once the cooldown has elapsed: HALF_OPEN. CSTP moves lazily, on the next read; a
  replay cannot know when reads happened, so here the move happens at ``opened_at +
  cooldown`` exactly (as if a read had come at that instant).
- HALF_OPEN + success: CLOSED (failures cleared); HALF_OPEN + failure: OPEN again, from then.
- A reset (only of an OPEN breaker): CLOSED (failures cleared) or, with ``probe_first``,
  HALF_OPEN keeping the failures and ``opened_at``.

``failure`` and ``abandoned`` are failures, ``success`` and ``partial`` successes (CSTP).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from graph.timeutil import parse_ts

State = Literal["closed", "open", "half_open"]
CLOSED: State = "closed"
OPEN: State = "open"
HALF_OPEN: State = "half_open"

FAILED_OUTCOMES = frozenset({"failure", "abandoned"})
#: ``global`` or ``<kind>:<value>`` (CSTP's syntax; anything else would never match).
SCOPE_PATTERN = re.compile(r"^(global|(category|stakes|agent|tag):\S.{0,199})$")
#: CSTP's default stakes (an action or decision without stakes is ``medium``).
DEFAULT_STAKES = "medium"


@dataclass(frozen=True)
class BreakerConfig:
    """One configured breaker (CSTP's defaults: 5 failures in 1 h trip it for 30 min)."""

    scope: str
    failure_threshold: int = 5
    window_ms: int = 3_600_000
    cooldown_ms: int = 1_800_000
    notify: bool = True


@dataclass(frozen=True)
class Subject:
    """What scopes are matched against: a decision, or an action about to be taken."""

    category: str | None = None
    stakes: str | None = None
    agent: str | None = None
    tags: tuple[str, ...] = ()

    @classmethod
    def of(cls, fields: Mapping[str, Any], agent: str | None) -> Subject:
        """The subject of a decision's (or action's) JSON fields, acted on by ``agent``."""
        category, stakes, tags = fields.get("category"), fields.get("stakes"), fields.get("tags")
        return cls(
            category=None if category is None else str(category),
            stakes=DEFAULT_STAKES if stakes is None else str(stakes),
            agent=agent,
            tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        )


def scope_matches(scope: str, subject: Subject) -> bool:
    """Whether ``scope`` covers ``subject`` (CSTP's matching; an unknown kind never matches)."""
    if scope == "global":
        return True
    kind, _, value = scope.partition(":")
    if kind == "category":
        return subject.category == value
    if kind == "stakes":
        return subject.stakes == value
    if kind == "agent":
        return subject.agent == value
    if kind == "tag":
        return value in subject.tags
    return False


@dataclass(frozen=True)
class OutcomeEvent:
    """One review: when, whether it failed, of which decision (and what that decision is)."""

    at: datetime
    failed: bool
    decision_id: str
    subject: Subject


@dataclass(frozen=True)
class ResetEvent:
    """A manual ``resetCircuit``: its ledger seq orders resets logged at the same instant."""

    at: datetime
    seq: int
    scope: str
    probe_first: bool


@dataclass(frozen=True)
class BreakerStatus:
    """A breaker's state at ``at``.

    ``failures`` are ``(time, decision id)`` of the failures counted (within the window of
    ``at``); ``half_open_since`` identifies the current half-open period (the probe of an
    earlier period does not count in a later one).
    """

    config: BreakerConfig
    at: datetime
    state: State = CLOSED
    failures: tuple[tuple[datetime, str], ...] = ()
    opened_at: datetime | None = None
    half_open_since: datetime | None = None

    @property
    def scope(self) -> str:
        return self.config.scope

    @property
    def failure_count(self) -> int:
        return len(self.failures)

    @property
    def failure_rate(self) -> float:
        """CSTP's ``failureRate``: the failures as a fraction of the threshold."""
        return self.failure_count / self.config.failure_threshold

    def reopens_at(self) -> datetime | None:
        """When an OPEN breaker turns HALF_OPEN (``None`` unless OPEN)."""
        if self.state != OPEN or self.opened_at is None:
            return None
        return self.opened_at + timedelta(milliseconds=self.config.cooldown_ms)

    def cooldown_remaining_ms(self) -> int | None:
        """Milliseconds of cooldown left while OPEN, else ``None`` (CSTP)."""
        until = self.reopens_at()
        if until is None:
            return None
        return max(0, int((until - self.at).total_seconds() * 1000))


@dataclass
class _Machine:
    config: BreakerConfig
    state: State = CLOSED
    failures: list[tuple[datetime, str]] = field(default_factory=list)
    opened_at: datetime | None = None
    half_open_since: datetime | None = None

    def advance(self, now: datetime) -> None:
        """The lazy OPEN -> HALF_OPEN move, at the instant the cooldown ends."""
        if self.state == OPEN and self.opened_at is not None:
            until = self.opened_at + timedelta(milliseconds=self.config.cooldown_ms)
            if now >= until:
                self.state, self.half_open_since = HALF_OPEN, until

    def evict(self, now: datetime) -> None:
        since = now - timedelta(milliseconds=self.config.window_ms)
        self.failures = [f for f in self.failures if f[0] > since]

    def outcome(self, event: OutcomeEvent) -> None:
        if event.failed:
            self.failures.append((event.at, event.decision_id))
            if self.state == CLOSED:
                self.evict(event.at)
                if len(self.failures) >= self.config.failure_threshold:
                    self.state, self.opened_at = OPEN, event.at
            elif self.state == HALF_OPEN:
                self.state, self.opened_at, self.half_open_since = OPEN, event.at, None
        elif self.state == CLOSED:
            self.failures.clear()
        elif self.state == HALF_OPEN:
            self.state, self.opened_at, self.half_open_since = CLOSED, None, None
            self.failures.clear()

    def reset(self, event: ResetEvent) -> None:
        if self.state != OPEN:  # the use case only logs resets of OPEN breakers
            return
        if event.probe_first:
            self.state, self.half_open_since = HALF_OPEN, event.at
        else:
            self.state, self.opened_at = CLOSED, None
            self.failures.clear()


@dataclass(frozen=True)
class Settled:
    """A breaker's machine after replaying its events up to some instant (before the lazy
    move and the window eviction of a later ``now``); ``complete`` when no event was left out
    for being later than that instant, so it can be reused for any later ``now``."""

    config: BreakerConfig
    state: State
    failures: tuple[tuple[datetime, str], ...]
    opened_at: datetime | None
    half_open_since: datetime | None
    complete: bool


def settle(
    config: BreakerConfig,
    outcomes: Sequence[OutcomeEvent],
    resets: Sequence[ResetEvent],
    until: datetime,
) -> Settled:
    """Replay ``config``'s outcomes and resets up to ``until`` (any input order). Outcomes go
    before resets logged at the same instant; ties between outcomes by decision id."""
    timeline: list[tuple[datetime, int, str, OutcomeEvent | ResetEvent]] = []
    complete = True
    for o in outcomes:
        if scope_matches(config.scope, o.subject):
            timeline.append((o.at, 0, o.decision_id, o))
    for r in resets:
        if r.scope == config.scope:
            timeline.append((r.at, 1, f"{r.seq:020d}", r))
    timeline.sort(key=lambda item: item[:3])
    machine = _Machine(config)
    for at, _, _, event in timeline:
        if at > until:
            complete = False
            break
        machine.advance(at)
        if isinstance(event, OutcomeEvent):
            machine.outcome(event)
        else:
            machine.reset(event)
    return Settled(
        config,
        machine.state,
        tuple(machine.failures),
        machine.opened_at,
        machine.half_open_since,
        complete,
    )


def status_at(settled: Settled, now: datetime) -> BreakerStatus:
    """The state at ``now`` (at or after the last event settled): the lazy OPEN -> HALF_OPEN
    move if the cooldown has ended, and only the failures within the window."""
    machine = _Machine(
        settled.config,
        settled.state,
        list(settled.failures),
        settled.opened_at,
        settled.half_open_since,
    )
    machine.advance(now)
    machine.evict(now)
    return BreakerStatus(
        settled.config,
        now,
        machine.state,
        tuple(machine.failures),
        machine.opened_at,
        machine.half_open_since,
    )


def replay(
    config: BreakerConfig,
    outcomes: Sequence[OutcomeEvent],
    resets: Sequence[ResetEvent],
    now: datetime,
) -> BreakerStatus:
    """``config``'s state at ``now`` from every outcome and reset (events after ``now`` are
    ignored)."""
    return status_at(settle(config, outcomes, resets, now), now)


def node_outcomes(node_id: str, attrs: Mapping[str, Any]) -> list[OutcomeEvent]:
    """Every review of one node (from its graph attributes) as an outcome; none for a memory
    item or a decision not yet reviewed.

    A review without a time (imported history can lack one) cannot be placed and is skipped.
    The decision is matched as it reads now (its current category, stakes, tags and author).
    """
    if attrs.get("status") != "reviewed" or attrs.get("kind", "decision") != "decision":
        return []
    out: list[OutcomeEvent] = []
    subject: Subject | None = None
    for review in (*(attrs.get("past_reviews") or ()), attrs):
        outcome, at = review.get("outcome"), review.get("reviewed_at")
        if outcome is None or at is None:
            continue
        subject = subject or Subject.of(attrs, str(attrs.get("recorded_by") or ""))
        out.append(OutcomeEvent(_ts(at), str(outcome) in FAILED_OUTCOMES, node_id, subject))
    return out


def _ts(value: Any) -> datetime:
    """A stored timestamp (``...Z``, the C parser: ten times faster than the general one)."""
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return parse_ts(value)


def reset_events(entries: Iterable[Mapping[str, Any]]) -> list[ResetEvent]:
    """The resets among the ledger's circuit entries (``{seq, ts, payload}``), in log order."""
    out = []
    for entry in entries:
        payload = entry.get("payload") or {}
        if payload.get("kind") != "reset" or not isinstance(payload.get("scope"), str):
            continue
        at = parse_ts(str(entry["ts"]))
        out.append(
            ResetEvent(at, int(entry["seq"]), payload["scope"], bool(payload.get("probeFirst")))
        )
    return out
