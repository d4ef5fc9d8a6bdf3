"""CSTP's deliberation tracker as use cases: what an agent reads before deciding is tracked
(:mod:`graph.deliberation` holds the sessions) and becomes the ``deliberation`` and
``related_to`` of the next decision it records.

- reads: :func:`track_query`, :func:`track_guardrail`, :func:`track_lookup`,
  :func:`track_stats` (the JSON-RPC methods' observer calls them after a successful answer);
- :func:`record_thought`: a reasoning step, before a decision (tracked) or after it (appended
  to the recorded decision's deliberation: one logged ``update``);
- :func:`attach_deliberation` before a ``recordDecision`` write, :func:`settle_recorded`
  after it succeeded; :func:`deliberate_recorded` for a decision already written (preAction's
  auto-record);
- :func:`debug_view`: the caller's sessions and history (``debugTracker``).

Differences from CSTP, on purpose:

- Sessions belong to the authenticated agent that created them (see :mod:`graph.deliberation`).
- A client that keeps a session of its own (an MCP session, a ``decigraph mcp`` process) tracks
  under that session's key instead of ``rpc:<agent>`` (:func:`fallback_key`): a decision
  recorded in one session takes only that session's reads, never those an earlier session or
  another transport made as the same agent.
- The tracked inputs are consumed only **after** the decision was written: a refused record
  (guardrail block, invalid field) leaves the agent's deliberation for its next attempt, where
  CSTP consumes before validating and loses it.
- ``related_to`` is kept on the decision (``extras``) as CSTP returns it; no ``relates_to``
  graph edge is made from it: decigraph derives its own semantic edges when it records.
- Time is the store's clock (timestamps agree with the log's), not a separate wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from graph.deliberation import (
    HistoryRecord,
    Related,
    Session,
    TrackedInput,
    TrackerLimits,
    consume_keys,
    fits,
    next_step,
    related_from,
    thought_key,
    with_deliberation,
)
from graph.enums import NodeKind
from graph.errors import NodeNotFoundError, ValidationError
from graph.model import MAX_EXTRAS_JSON, MAX_TEXT, ShortText
from graph.timeutil import format_ts

from .context import Decigraph
from .inputs import Input, RecordDecision


def limits(app: Decigraph) -> TrackerLimits:
    """The TTLs and history size the settings give (caps are the domain's defaults)."""
    s = app.settings
    return TrackerLimits(
        input_ttl=s.tracker_input_ttl,
        session_ttl=s.tracker_session_ttl,
        history_size=s.tracker_history_size,
    )


def fallback_key(agent: str, session: str | None = None) -> str:
    """The session key of a caller that names no scope: its client's own session when it
    keeps one (``mcp:<8 hex>``), else CSTP's JSON-RPC key ``rpc:<agent>``."""
    return session if session else f"rpc:{agent}"


def _clip(text: str) -> str:
    return text[:50]


# -- reads ---------------------------------------------------------------------------------------
def track_query(
    app: Decigraph,
    agent: str,
    query: str,
    rows: Sequence[Mapping[str, Any]],
    mode: str,
    session: str | None = None,
) -> None:
    """A search: "Queried '<query>': N results (<mode>)", remembering the top 5 results."""
    text = f"Queried '{_clip(query)}': {len(rows)} results ({mode})"
    _track(app, agent, session, "query", text, related_from(rows))


def track_guardrail(
    app: Decigraph, agent: str, description: str, violations: int, session: str | None = None
) -> None:
    """A guardrail check: "Checked '<description>': allowed" or "... blocked (K violations)"."""
    verdict = f"blocked ({violations} violations)" if violations else "allowed"
    _track(app, agent, session, "guardrail", f"Checked '{_clip(description)}': {verdict}")


def track_lookup(
    app: Decigraph, agent: str, node_id: str, title: str, session: str | None = None
) -> None:
    """A decision read: "Retrieved decision <id>: <title>"."""
    _track(app, agent, session, "lookup", f"Retrieved decision {node_id}: {_clip(title)}")


def track_stats(
    app: Decigraph,
    agent: str,
    types: int,
    decisions: int,
    diversity: float,
    session: str | None = None,
) -> None:
    """Reason statistics: "Reviewed reason stats: T types, D decisions, diversity=x.xx"."""
    text = f"Reviewed reason stats: {types} types, {decisions} decisions, diversity={diversity:.2f}"
    _track(app, agent, session, "stats", text)


def _track(
    app: Decigraph,
    agent: str,
    session: str | None,
    kind: Literal["query", "guardrail", "lookup", "stats"],
    text: str,
    results: Sequence[Related] = (),
) -> None:
    key = fallback_key(agent, session)
    app.tracker.track(agent, key, kind, text, app.store.now(), limits(app), results)


# -- thoughts ------------------------------------------------------------------------------------
class Thought(Input):
    """A reasoning step: before a decision (scoped by ``agent_id`` / ``decision_id``, else the
    caller's own session) or, given only ``id``, appended to that recorded decision."""

    text: str = Field(min_length=1, max_length=MAX_TEXT)
    agent_id: ShortText | None = None
    decision_id: ShortText | None = None
    id: ShortText | None = None


@dataclass(frozen=True)
class ThoughtRecorded:
    mode: Literal["pre-decision", "post-decision"]
    #: pre-decision: the session it went to and the agent it is scoped to.
    tracker_key: str | None = None
    agent_id: str | None = None
    #: post-decision: the decision and the number of the appended step.
    decision_id: str | None = None
    step_number: int | None = None


def record_thought(
    app: Decigraph, thought: Thought, agent: str, session: str | None = None
) -> ThoughtRecorded:
    """CSTP's three modes: ``id`` alone appends to that decision; ``agent_id`` and/or
    ``decision_id`` track under the scoped key (``id`` is then ignored); nothing but the text
    tracks under the caller's own session (:func:`fallback_key`)."""
    scoped = bool(thought.agent_id or thought.decision_id)
    if thought.id and not scoped:
        node_id, step = _append_step(app, thought.id, thought.text, agent)
        return ThoughtRecorded("post-decision", decision_id=node_id, step_number=step)
    key = thought_key(thought.agent_id, thought.decision_id, fallback_key(agent, session))
    app.tracker.track(agent, key, "reasoning", thought.text, app.store.now(), limits(app))
    return ThoughtRecorded("pre-decision", tracker_key=key, agent_id=thought.agent_id or agent)


def _append_step(app: Decigraph, node_id: str, text: str, agent: str) -> tuple[str, int]:
    """Append ``{step, thought, type: reasoning, timestamp, conclusion: false}`` to the decision's
    deliberation: one logged update, read and written under the store lock so concurrent
    thoughts each get their own step number."""
    with app.store.writing():
        if node_id not in app.store.graph:
            raise NodeNotFoundError(node_id)
        node = app.store.get(node_id)
        if node.kind != NodeKind.DECISION:
            raise NodeNotFoundError(node_id)
        extras = dict(node.extras or {})
        deliberation = extras.get("deliberation")
        deliberation = dict(deliberation) if isinstance(deliberation, dict) else {"inputs": []}
        raw_steps = deliberation.get("steps")
        steps = list(raw_steps) if isinstance(raw_steps, list) else []
        number = next_step(s for s in steps if isinstance(s, dict))
        steps.append(
            {
                "step": number,
                "thought": text,
                "type": "reasoning",
                "timestamp": format_ts(app.store.now()),
                "conclusion": False,
            }
        )
        deliberation["steps"] = steps
        extras["deliberation"] = deliberation
        if not fits(extras):
            detail = f"the decision's deliberation would exceed {MAX_EXTRAS_JSON} bytes as JSON"
            raise ValidationError("text", detail)
        app.store.update(node_id, {"extras": extras}, agent)
    return node_id, number


# -- recording -----------------------------------------------------------------------------------
def attach_deliberation(
    app: Decigraph,
    cmd: RecordDecision,
    *,
    agent: str,
    agent_id: str | None = None,
    decision_id: str | None = None,
    session: str | None = None,
) -> RecordDecision:
    """``cmd`` with the caller's tracked inputs merged into its ``deliberation`` (after the
    request's own steps), ``related_to`` from the tracked queries and ``deliberation_auto``.

    The sessions tried are CSTP's, in its order: ``agent:A:decision:D``, ``decision:D``,
    ``agent:A``, then the caller's own session (``rpc:<agent>``, or its client's session key).
    Nothing is consumed here: :func:`settle_recorded` does it once the decision was written.
    """
    keys = consume_keys(agent_id, decision_id, fallback_key(agent, session))
    tracked = app.tracker.peek(agent, keys, app.store.now(), limits(app))
    if not tracked:
        return cmd
    extras, attached = with_deliberation(cmd.extras, tracked)
    if not attached:
        return cmd
    return cmd.model_copy(update={"extras": extras})


def settle_recorded(
    app: Decigraph,
    node_id: str,
    *,
    agent: str,
    agent_id: str | None = None,
    decision_id: str | None = None,
    session: str | None = None,
) -> list[HistoryRecord]:
    """Consume the tracked inputs the recorded decision ``node_id`` took (the ids in its
    deliberation); inputs tracked meanwhile stay for the next decision."""
    with app.store.lock:
        node = app.store.get(node_id) if node_id in app.store.graph else None
    extras = (node.extras or {}) if node is not None else {}
    if not extras.get("deliberation_auto"):
        return []
    deliberation = extras.get("deliberation")
    inputs = deliberation.get("inputs") if isinstance(deliberation, dict) else None
    taken = [i["id"] for i in inputs or [] if isinstance(i, dict) and isinstance(i.get("id"), str)]
    keys = consume_keys(agent_id, decision_id, fallback_key(agent, session))
    return app.tracker.consume(
        agent,
        keys,
        taken,
        app.store.now(),
        limits(app),
        agent_id=agent_id or agent,
        decision_id=node_id,
    )


def deliberate_recorded(
    app: Decigraph, node_id: str, agent: str, session: str | None = None
) -> bool:
    """Attach the caller's own session's inputs to a decision already recorded without them
    (preAction's auto-record), as one logged update, and consume them. False when there was
    nothing to attach (or it would not fit)."""
    keys = [fallback_key(agent, session)]
    tracked = app.tracker.peek(agent, keys, app.store.now(), limits(app))
    if not tracked:
        return False
    with app.store.writing():
        if node_id not in app.store.graph:
            return False
        node = app.store.get(node_id)
        if (node.extras or {}).get("deliberation_auto"):  # attached when written: settle only
            return bool(settle_recorded(app, node_id, agent=agent, session=session))
        extras, attached = with_deliberation(node.extras, tracked)
        if not attached:
            return False
        app.store.update(node_id, {"extras": extras}, agent)
    app.tracker.consume(
        agent,
        keys,
        [t.id for t in attached],
        app.store.now(),
        limits(app),
        agent_id=agent,
        decision_id=node_id,
    )
    return True


# -- debugging -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrackerView:
    """The caller's live sessions (inputs younger than the input TTL) and, when asked, its
    history (newest first, at most 20), at one clock reading ``now``."""

    now: datetime
    sessions: list[Session]
    fresh: dict[str, list[TrackedInput]]
    history: list[HistoryRecord] | None


def debug_view(
    app: Decigraph, agent: str, key: str | None = None, include_consumed: bool = False
) -> TrackerView:
    now = app.store.now()
    bounds = limits(app)
    sessions = app.tracker.sessions(agent, now, bounds)
    if key is not None:
        sessions = [s for s in sessions if s.key == key]
    fresh = {s.key: s.fresh(now, bounds) for s in sessions}
    history = app.tracker.history(agent)[:20] if include_consumed else None
    return TrackerView(now, sessions, fresh, history)
