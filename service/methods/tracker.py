"""CSTP's deliberation tracker on the wire: ``recordThought``, ``debugTracker``, and the
observer that tracks the reads an agent makes before it decides.

The observer runs after a method answered successfully (:attr:`Registry.observers`), so a
refused call tracks nothing. Reads are tracked under the caller's ``rpc:<agent>`` session, as
CSTP's JSON-RPC does, or, for a client that keeps a session (an MCP session, a ``decigraph
mcp`` process: :attr:`CallContext.session`), under that session's key: a ``log_decision`` in an
MCP session takes that session's reads only.

``debugTracker`` shows the caller's own sessions and history only (CSTP: every agent's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graph.model import ShortText
from service import usecases
from service.rpc.protocol import CallContext, CallObserver, Registry
from service.usecases import tracker
from service.usecases.tracker import Thought, ThoughtRecorded, TrackerView

from .params import Params


class RecordThoughtParams(Params, Thought):
    pass


class DebugTrackerParams(Params):
    key: ShortText | None = None
    include_consumed: bool = False


def thought_view(made: ThoughtRecorded) -> dict[str, Any]:
    """CSTP's snake_case answer for each mode."""
    if made.mode == "post-decision":
        return {
            "success": True,
            "mode": made.mode,
            "decision_id": made.decision_id,
            "step_number": made.step_number,
        }
    return {
        "success": True,
        "mode": made.mode,
        "tracker_key": made.tracker_key,
        "agent_id": made.agent_id,
    }


def tracker_view(view: TrackerView) -> dict[str, Any]:
    """CSTP's ``debugTracker`` answer (camelCase; ``consumed`` only when asked and not empty)."""
    detail = {}
    for session in view.sessions:
        inputs = view.fresh[session.key]
        detail[session.key] = {
            "key": session.key,
            "inputCount": len(inputs),
            "inputs": [
                {
                    "id": i.id,
                    "type": i.type,
                    "text": i.text,
                    "source": i.source,
                    "ageSeconds": round(i.age(view.now), 1),
                }
                for i in inputs
            ],
        }
    answer: dict[str, Any] = {
        "sessions": [s.key for s in view.sessions],
        "sessionCount": len(view.sessions),
        "detail": detail,
    }
    if view.history:
        answer["consumed"] = [r.to_dict(view.now) for r in view.history]
    return answer


def _rows(value: Any) -> list[Mapping[str, Any]]:
    return [r for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def make_observer(app: usecases.Decigraph) -> CallObserver:
    """The :data:`~service.rpc.protocol.CallObserver` that feeds the tracker."""

    def observer(name: str, params: Any, result: Mapping[str, Any], ctx: CallContext) -> None:
        agent, session = ctx.agent, ctx.session
        if name == "cstp.queryDecisions":
            query = _text(getattr(params, "query", None))
            if query.strip():  # a listing (no query) is browsing, not deliberating
                mode = _text(result.get("retrievalMode")) or "semantic"
                rows = _rows(result.get("decisions"))
                tracker.track_query(app, agent, query, rows, mode, session)
        elif name == "cstp.checkGuardrails":
            action = _text(getattr(getattr(params, "action", None), "text", None))
            violations = len(_rows(result.get("violations")))
            tracker.track_guardrail(app, agent, action, violations, session)
        elif name == "cstp.getDecision":
            decision = result.get("decision")
            if result.get("found") and isinstance(decision, Mapping):
                title = _text(decision.get("decision")) or _text(decision.get("summary"))
                tracker.track_lookup(app, agent, _text(decision.get("id")), title, session)
        elif name == "cstp.getReasonStats":
            diversity = result.get("diversity")
            spread = diversity.get("avgTypesPerDecision") if isinstance(diversity, Mapping) else 0
            total = result.get("totalDecisions")
            tracker.track_stats(
                app,
                agent,
                len(_rows(result.get("byReasonType"))),
                total if isinstance(total, int) else 0,
                float(spread) if isinstance(spread, int | float) else 0.0,
                session,
            )
        elif name == "cstp.preAction":
            _pre_action(app, params, result, agent, session)
        elif name == "cstp.recordDecision" and isinstance(result.get("id"), str):
            # written: only now is what attach_deliberation attached consumed
            tracker.settle_recorded(
                app,
                result["id"],
                agent=agent,
                agent_id=getattr(params, "agent_id", None),
                decision_id=getattr(params, "decision_id", None),
                session=session,
            )

    return observer


def _pre_action(
    app: usecases.Decigraph,
    params: Any,
    result: Mapping[str, Any],
    agent: str,
    session: str | None,
) -> None:
    """CSTP tracks preAction's search (labelled hybrid) and its guardrail check; an
    auto-recorded decision then takes the caller's session, as recordDecision would."""
    description = _text(getattr(getattr(params, "action", None), "text", None))
    rows = []
    for row in _rows(result.get("relevantDecisions")):
        distance = row.get("distance")
        if not isinstance(distance, int | float):  # decigraph answers a similarity score
            score = row.get("score")
            distance = max(0.0, 1.0 - float(score)) if isinstance(score, int | float) else 1.0
        rows.append({**row, "distance": distance})
    tracker.track_query(app, agent, description, rows, "hybrid", session)
    blocked = len(result.get("blockReasons") or [])
    if result.get("allowed") is False:
        blocked = max(blocked, 1)
    tracker.track_guardrail(app, agent, description, blocked, session)
    recorded = result.get("decisionId")
    if isinstance(recorded, str):
        tracker.deliberate_recorded(app, recorded, agent, session)


def register_tracker(registry: Registry, app: usecases.Decigraph) -> None:
    """``cstp.recordThought`` and ``cstp.debugTracker``, and the observer tracking reads."""

    def record_thought(p: RecordThoughtParams, ctx: CallContext) -> Mapping[str, Any]:
        return thought_view(tracker.record_thought(app, p, ctx.agent, ctx.session))

    def debug_tracker(p: DebugTrackerParams, ctx: CallContext) -> Mapping[str, Any]:
        view = tracker.debug_view(app, ctx.agent, p.key, p.include_consumed)
        return tracker_view(view)

    registry.add("cstp.recordThought", RecordThoughtParams, record_thought, writes=True)
    registry.add("cstp.debugTracker", DebugTrackerParams, debug_tracker)
    registry.observers.append(make_observer(app))
