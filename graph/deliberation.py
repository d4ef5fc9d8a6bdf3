"""CSTP's deliberation tracker: the reads an agent makes before deciding, kept in memory and
turned into the ``deliberation`` and ``related_to`` of its next recorded decision.

Pure domain logic (no store, no transport): every method takes the time it runs at (``now``,
a reading of the store's clock, so timestamps agree with the event log and tests are
reproducible) and the :class:`TrackerLimits` to apply. Ages and TTLs are differences of those
readings; a clock stepping backwards makes an age 0, never negative.

Sessions are **per authenticated agent** (the ``owner``): the key a client names (``rpc:<me>``,
``agent:<A>``, ``decision:<D>``, ``agent:<A>:decision:<D>``) is looked up among the sessions
its own bearer token created, so one agent can neither read nor consume another's breadcrumbs
(CSTP keeps one global key space).

Memory is bounded: at most :attr:`TrackerLimits.max_inputs` inputs per session (the oldest
dropped), :attr:`TrackerLimits.max_sessions_per_agent` sessions per agent and
:attr:`TrackerLimits.max_sessions` in all (the least recently used one is expired to make
room), and a history of at most :attr:`TrackerLimits.history_size` records per agent
(:data:`MAX_HISTORY` in all).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import orjson

from .model import MAX_EXTRAS_JSON
from .timeutil import format_ts

InputType = Literal["query", "guardrail", "lookup", "stats", "reasoning"]
Status = Literal["consumed", "expired"]

#: Input id prefixes, sources and the type of the deliberation step each input becomes (CSTP).
PREFIX: Mapping[InputType, str] = {
    "query": "q-",
    "guardrail": "g-",
    "lookup": "l-",
    "stats": "s-",
    "reasoning": "r-",
}
SOURCE: Mapping[InputType, str] = {
    "query": "cstp:queryDecisions",
    "guardrail": "cstp:checkGuardrails",
    "lookup": "cstp:getDecision",
    "stats": "cstp:getReasonStats",
    "reasoning": "cstp:recordThought",
}
STEP_TYPE: Mapping[InputType, str] = {
    "query": "analysis",
    "lookup": "analysis",
    "guardrail": "constraint",
    "stats": "empirical",
    "reasoning": "reasoning",
}
#: History records kept for all agents together (each agent keeps its own ``history_size``).
MAX_HISTORY = 1_000
#: A remembered query result's summary is cut to this many characters: a decision statement
#: may be 10,000 characters and ``related_to`` lives in the decision's 64 KiB of extras.
MAX_SUMMARY = 200
#: ``related_to`` keeps the closest this many decisions.
MAX_RELATED = 20


@dataclass(frozen=True)
class TrackerLimits:
    """TTLs (seconds) and caps; the defaults are CSTP's (300 s, 1800 s, 50 records)."""

    input_ttl: float = 300.0
    session_ttl: float = 1800.0
    history_size: int = 50
    max_inputs: int = 100
    max_sessions_per_agent: int = 100
    max_sessions: int = 10_000


@dataclass(frozen=True)
class Related:
    """A decision a tracked query found: ``distance`` is 0 for the same meaning."""

    id: str
    summary: str
    distance: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "summary": self.summary, "distance": self.distance}


@dataclass(frozen=True)
class TrackedInput:
    id: str
    type: InputType
    text: str
    source: str
    at: datetime
    results: tuple[Related, ...] = ()

    def age(self, now: datetime) -> float:
        return max(0.0, (now - self.at).total_seconds())


@dataclass
class Session:
    key: str
    owner: str
    touched: datetime
    inputs: list[TrackedInput] = field(default_factory=list)

    def fresh(self, now: datetime, limits: TrackerLimits) -> list[TrackedInput]:
        """Inputs younger than the input TTL, oldest first."""
        return [i for i in self.inputs if i.age(now) < limits.input_ttl]


@dataclass(frozen=True)
class HistoryRecord:
    """A session that was consumed by a recorded decision or expired unused."""

    key: str
    at: datetime
    inputs: tuple[TrackedInput, ...]
    agent_id: str | None
    decision_id: str | None
    status: Status

    def to_dict(self, now: datetime) -> dict[str, Any]:
        """As CSTP's ``debugTracker`` lists it (``consumedAt``: whole seconds ago)."""
        return {
            "key": self.key,
            "consumedAt": int(max(0.0, (now - self.at).total_seconds())),
            "inputCount": len(self.inputs),
            "agentId": self.agent_id,
            "decisionId": self.decision_id,
            "status": self.status,
            "inputsSummary": [
                {"id": i.id, "type": i.type, "text": i.text[:80]} for i in self.inputs
            ],
        }


def thought_key(agent_id: str | None, decision_id: str | None, fallback: str) -> str:
    """The session a pre-decision thought goes to (CSTP's scoped keys, else ``fallback``)."""
    if agent_id and decision_id:
        return f"agent:{agent_id}:decision:{decision_id}"
    if agent_id:
        return f"agent:{agent_id}"
    if decision_id:
        return f"decision:{decision_id}"
    return fallback


def consume_keys(agent_id: str | None, decision_id: str | None, fallback: str) -> list[str]:
    """The sessions a recorded decision takes, in CSTP's order, without duplicates."""
    keys = []
    if agent_id and decision_id:
        keys.append(f"agent:{agent_id}:decision:{decision_id}")
    if decision_id:
        keys.append(f"decision:{decision_id}")
    if agent_id:
        keys.append(f"agent:{agent_id}")
    keys.append(fallback)
    return list(dict.fromkeys(keys))


def key_agent(key: str) -> str | None:
    """The agent a key names (``agent:A...`` or ``rpc:A``), for an expired session's record."""
    for prefix in ("agent:", "rpc:"):
        if key.startswith(prefix):
            return key[len(prefix) :].split(":decision:", 1)[0]
    return None


def related_from(results: Iterable[Mapping[str, Any]], limit: int = 5) -> tuple[Related, ...]:
    """The first ``limit`` query results as :class:`Related` (rows lacking an id are skipped)."""
    kept = []
    for row in results:
        node_id, distance = row.get("id"), row.get("distance")
        if not isinstance(node_id, str) or not isinstance(distance, int | float):
            continue
        summary = row.get("summary") or row.get("title") or ""
        kept.append(Related(node_id, str(summary)[:MAX_SUMMARY], round(float(distance), 4)))
        if len(kept) == limit:
            break
    return tuple(kept)


class DeliberationTracker:
    """The in-memory sessions, thread-safe (one lock, held only for dictionary work)."""

    def __init__(self, ids: Callable[[], str] | None = None) -> None:
        self._lock = threading.Lock()
        #: (owner, key) -> session, least recently touched first.
        self._sessions: OrderedDict[tuple[str, str], Session] = OrderedDict()
        self._history: deque[tuple[str, HistoryRecord]] = deque(maxlen=MAX_HISTORY)
        self._ids = ids or (lambda: uuid.uuid4().hex[:8])

    def track(
        self,
        owner: str,
        key: str,
        kind: InputType,
        text: str,
        now: datetime,
        limits: TrackerLimits,
        results: Sequence[Related] = (),
    ) -> TrackedInput:
        """Add one input to ``owner``'s session ``key`` (created when missing)."""
        tracked = TrackedInput(
            PREFIX[kind] + self._ids(), kind, text, SOURCE[kind], now, tuple(results)
        )
        with self._lock:
            self._sweep(now, limits)
            session = self._sessions.get((owner, key))
            if session is None:
                self._make_room(owner, now, limits)
                session = self._sessions[(owner, key)] = Session(key, owner, now)
            self._sessions.move_to_end((owner, key))
            session.touched = now
            session.inputs.append(tracked)
            del session.inputs[: -limits.max_inputs]
        return tracked

    def peek(
        self, owner: str, keys: Sequence[str], now: datetime, limits: TrackerLimits
    ) -> list[TrackedInput]:
        """The fresh inputs of ``owner``'s sessions ``keys`` (in that order), left in place."""
        with self._lock:
            self._sweep(now, limits)
            found = [self._sessions.get((owner, key)) for key in keys]
            return [i for s in found if s is not None for i in s.fresh(now, limits)]

    def consume(
        self,
        owner: str,
        keys: Sequence[str],
        taken: Iterable[str],
        now: datetime,
        limits: TrackerLimits,
        *,
        agent_id: str | None,
        decision_id: str | None,
    ) -> list[HistoryRecord]:
        """Close what a recorded decision took from ``owner``'s sessions ``keys``: the inputs
        ``taken`` (ids) and every input no newer than the newest of them (those left out for
        size, or expired). Inputs tracked after the decision's deliberation was read are newer
        and stay for the next decision; a session left with no fresh input is closed. One
        ``consumed`` record per session that gave inputs.
        """
        ids = set(taken)
        records = []
        with self._lock:
            found = [self._sessions.get((owner, key)) for key in keys]
            stamps = [i.at for s in found if s is not None for i in s.inputs if i.id in ids]
            if not stamps:  # taken already (a concurrent record of the same session)
                return []
            cutoff = max(stamps)
            for key in keys:
                session = self._sessions.get((owner, key))
                if session is None:
                    continue
                used = tuple(i for i in session.inputs if i.id in ids or i.at <= cutoff)
                session.inputs = [i for i in session.inputs if i not in used]
                if not session.fresh(now, limits):
                    del self._sessions[(owner, key)]
                if used:
                    record = HistoryRecord(key, now, used, agent_id, decision_id, "consumed")
                    self._remember(owner, record, limits)
                    records.append(record)
        return records

    def sessions(self, owner: str, now: datetime, limits: TrackerLimits) -> list[Session]:
        """``owner``'s live sessions (expired ones are first moved to the history), by key."""
        with self._lock:
            self._sweep(now, limits)
            mine = [s for (who, _), s in self._sessions.items() if who == owner]
            return [
                Session(s.key, s.owner, s.touched, list(s.inputs))
                for s in sorted(mine, key=lambda s: s.key)
            ]

    def history(self, owner: str) -> list[HistoryRecord]:
        """``owner``'s consumed and expired sessions, newest first."""
        with self._lock:
            return [r for who, r in reversed(self._history) if who == owner]

    # -- under the lock ----------------------------------------------------------------------
    def _sweep(self, now: datetime, limits: TrackerLimits) -> None:
        """Expire sessions idle longer than the session TTL (least recently touched first)."""
        while self._sessions:
            (owner, key), session = next(iter(self._sessions.items()))
            if (now - session.touched).total_seconds() < limits.session_ttl:
                return
            self._expire(owner, key, now, limits)

    def _make_room(self, owner: str, now: datetime, limits: TrackerLimits) -> None:
        mine = [k for k in self._sessions if k[0] == owner]
        if len(mine) >= limits.max_sessions_per_agent:
            self._expire(*mine[0], now, limits)
        if len(self._sessions) >= limits.max_sessions:
            self._expire(*next(iter(self._sessions)), now, limits)

    def _expire(self, owner: str, key: str, now: datetime, limits: TrackerLimits) -> None:
        session = self._sessions.pop((owner, key))
        record = HistoryRecord(key, now, tuple(session.inputs), key_agent(key), None, "expired")
        self._remember(owner, record, limits)

    def _remember(self, owner: str, record: HistoryRecord, limits: TrackerLimits) -> None:
        self._history.append((owner, record))
        mine = [entry for entry in self._history if entry[0] == owner]
        for entry in mine[: max(0, len(mine) - limits.history_size)]:
            self._history.remove(entry)


# -- turning inputs into a decision's deliberation --------------------------------------------
def related_to(inputs: Iterable[TrackedInput]) -> list[dict[str, Any]]:
    """The decisions the tracked queries found: one entry per id (its smallest distance),
    closest first (ties by id), at most :data:`MAX_RELATED`."""
    best: dict[str, Related] = {}
    for tracked in inputs:
        for hit in tracked.results:
            seen = best.get(hit.id)
            if seen is None or hit.distance < seen.distance:
                best[hit.id] = hit
    ranked = sorted(best.values(), key=lambda r: (r.distance, r.id))
    return [r.to_dict() for r in ranked[:MAX_RELATED]]


def merge_deliberation(
    explicit: Mapping[str, Any] | None, tracked: Sequence[TrackedInput]
) -> dict[str, Any]:
    """``explicit`` (the request's own deliberation, kept as sent) with ``tracked`` appended:
    each input once more as an input and as a step, step numbers continuing after the
    request's. An input whose id the request already lists is not repeated."""
    merged = dict(explicit or {})
    inputs = [i for i in merged.get("inputs") or [] if isinstance(i, dict)]
    steps = [s for s in merged.get("steps") or [] if isinstance(s, dict)]
    listed = {i.get("id") for i in inputs}
    fresh = [t for t in tracked if t.id not in listed]
    number = next_step(steps)
    for offset, t in enumerate(fresh):
        stamp = format_ts(t.at)
        inputs.append({"id": t.id, "text": t.text, "source": t.source, "timestamp": stamp})
        steps.append(
            {
                "step": number + offset,
                "thought": t.text,
                "inputs_used": [t.id],
                "timestamp": stamp,
                "type": STEP_TYPE[t.type],
                "conclusion": False,
            }
        )
    merged["inputs"], merged["steps"] = inputs, steps
    given = "total_duration_ms" in merged or "totalDurationMs" in merged
    if len(fresh) >= 2 and not given:
        span = (max(t.at for t in fresh) - min(t.at for t in fresh)).total_seconds()
        merged["total_duration_ms"] = int(span * 1000)
    return merged


def next_step(steps: Iterable[Mapping[str, Any]]) -> int:
    """The number after the highest numeric ``step`` (1 for none)."""
    numbers = [s.get("step") for s in steps]
    ints = [n for n in numbers if isinstance(n, int) and not isinstance(n, bool)]
    return max(ints, default=0) + 1


def fits(extras: Mapping[str, Any]) -> bool:
    """Whether ``extras`` stays within a decision's :data:`~graph.model.MAX_EXTRAS_JSON`."""
    return len(orjson.dumps(extras)) <= MAX_EXTRAS_JSON


def with_deliberation(
    extras: Mapping[str, Any] | None, tracked: Sequence[TrackedInput]
) -> tuple[dict[str, Any], list[TrackedInput]]:
    """``extras`` with ``tracked`` merged into its deliberation and ``related_to`` (and
    ``deliberation_auto: true``), and the inputs that were attached.

    When the result would exceed the extras' size limit the oldest tracked inputs are left
    out until it fits (the newest reads say most about the decision); nothing is attached when
    even the request's own extras do not fit.
    """
    base = dict(extras or {})
    by_age = sorted(range(len(tracked)), key=lambda n: (tracked[n].at, n))

    def attempt(dropped: int) -> tuple[dict[str, Any], list[TrackedInput]] | None:
        keep = set(by_age[dropped:])
        kept = [t for n, t in enumerate(tracked) if n in keep]
        merged = {
            **base,
            "deliberation": merge_deliberation(base.get("deliberation"), kept),
            "deliberation_auto": True,
        }
        related = related_to(kept)
        if related:
            merged["related_to"] = related
        return (merged, kept) if fits(merged) else None

    # Fewer inputs never grow the JSON: search for the fewest dropped (log n encodings).
    low, high = 0, len(tracked)  # ``high`` inputs dropped is nothing attached
    while low < high:
        middle = (low + high) // 2
        if attempt(middle) is None:
            low = middle + 1
        else:
            high = middle
    best = attempt(low) if low < len(tracked) else None
    return best if best is not None else (base, [])
