"""Circuit breakers (CSTP's): their state, the manual reset, and the check every gated
action passes.

The state of a breaker is derived from the log (:mod:`graph.algorithms.breakers`): every
review of a decision in its scope, whichever way it came (``reviewDecision``, the MCP tool,
``attributeOutcomes``, an import), and every ``resetCircuit`` (a ``circuit`` ledger event). CSTP
counts only JSON-RPC reviews; decigraph has one review event whatever the transport, and a
breaker that ignored some reviews would disagree with the log it is meant to summarise.

:func:`gate_breakers` runs inside :func:`~.gate.judge`, so ``checkGuardrails``, ``preAction``
and every gated write (record, an update of the statement, category or stakes, a
reactivation, an import without ``--skip-guardrails``) see the same breakers: an OPEN breaker
blocks recording too (CSTP only checks it in the guardrail calls), and an override records
through it like through any block rule. The scope is matched against the action's category,
stakes (``medium`` when absent, as CSTP) and tags, and ``agent`` against the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graph.algorithms.breakers import (
    HALF_OPEN,
    OPEN,
    BreakerStatus,
    OutcomeEvent,
    Subject,
    node_outcomes,
    reset_events,
    scope_matches,
    settle,
    status_at,
)
from graph.errors import ValidationError
from graph.events import Event, Operation
from graph.state import ledger
from graph.timeutil import format_ts

from .breaker_model import BreakerRuntime, Probe
from .context import Decigraph
from .rules import Finding, Verdict

#: Operations that can change a review or what a reviewed decision matches (its category,
#: stakes, tags, its existence): the outcomes are read again from the graph after one.
_OUTCOME_OPS = frozenset({Operation.REVIEW, Operation.UPDATE, Operation.FORGET, Operation.IMPORT})


@dataclass(frozen=True)
class BreakerFinding(Finding):
    """A blocking finding of a breaker, with CSTP's enrichment (§3.2)."""

    state: str = OPEN
    failure_rate: float = 0.0
    reset_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(type="circuit_breaker", state=self.state, failureRate=self.failure_rate)
        if self.reset_at is not None:
            out["resetAt"] = self.reset_at
        return out


@dataclass(frozen=True)
class CircuitReset:
    scope: str
    previous_state: str
    new_state: str

    @property
    def message(self) -> str:
        return f"Circuit breaker {self.scope} reset: {self.previous_state} -> {self.new_state}"


def _outcomes(app: Decigraph, runtime: BreakerRuntime) -> list[OutcomeEvent]:
    """Every review as an outcome, in time order; only the nodes an event touched since the
    last call are read again (hold ``app.store.lock``)."""
    if not runtime.listening:

        def hear(event: Event) -> None:
            if event.op is Operation.IMPORT:
                runtime.by_node, runtime.outcomes = None, None
            elif event.op in _OUTCOME_OPS:
                runtime.dirty.add(str(event.payload.get("id")))
                runtime.outcomes = None

        # Under the store lock, before the reads below: no event falls in between.
        app.store.listeners.append(hear)
        runtime.listening = True
    G = app.store.graph
    if runtime.by_node is None:
        runtime.by_node = {}
        for node_id, attrs in G.nodes.items():
            if found := node_outcomes(node_id, attrs):
                runtime.by_node[node_id] = found
        runtime.dirty.clear()
    for node_id in runtime.dirty:
        found = node_outcomes(node_id, G.nodes[node_id]) if node_id in G else []
        if found:
            runtime.by_node[node_id] = found
        else:
            runtime.by_node.pop(node_id, None)
    runtime.dirty.clear()
    if runtime.outcomes is None:
        runtime.outcomes = sorted(
            (e for events in runtime.by_node.values() for e in events),
            key=lambda e: (e.at, e.decision_id),
        )
        runtime.version += 1
    return runtime.outcomes


def statuses(app: Decigraph) -> list[BreakerStatus]:
    """Every configured breaker's state now, sorted by scope.

    Each breaker's replay is kept until a review (or a reset) changes its input, so a check
    between reviews costs only the move to ``now``."""
    runtime = app.breakers
    with app.store.lock:
        now = app.store.now()
        outcomes = _outcomes(app, runtime)
        resets = reset_events(ledger(app.store.graph, Operation.CIRCUIT))
        key = (runtime.version, resets[-1].seq if resets else 0)
        found = []
        for config in runtime.configs:
            cached = runtime.settled.get(config.scope)
            if cached is not None and cached[0] == key and cached[1].config == config:
                settled = cached[1]
            else:
                settled = settle(config, outcomes, resets, now)
                if settled.complete:  # nothing later than now left out: valid from now on
                    runtime.settled[config.scope] = (key, settled)
            found.append(status_at(settled, now))
    return sorted(found, key=lambda s: s.scope)


def breaker_status(app: Decigraph, scope: str) -> BreakerStatus:
    """One breaker's state now; an unknown scope is a :class:`ValidationError` on ``scope``."""
    for status in statuses(app):
        if status.scope == scope:
            return status
    raise ValidationError("scope", f"No circuit breaker found for scope: {scope}")


def reset_circuit(app: Decigraph, scope: str, probe_first: bool, actor: str) -> CircuitReset:
    """Reset an OPEN breaker: CLOSED, or HALF_OPEN (its next matching check the probe) with
    ``probe_first``. One ``circuit`` ledger event; any other state is refused on ``scope``."""
    with app.store.writing():
        status = breaker_status(app, scope)
        if status.state != OPEN:
            raise ValidationError(
                "scope", f"Can only reset OPEN breakers, current state: {status.state}"
            )
        new_state = HALF_OPEN if probe_first else "closed"
        payload = {
            "kind": "reset",
            "scope": scope,
            "probeFirst": probe_first,
            "previousState": status.state,
            "newState": new_state,
        }
        app.store.append_ledger(Operation.CIRCUIT, payload, actor)
    return CircuitReset(scope, status.state, new_state)


def gate_breakers(
    app: Decigraph, fields: Mapping[str, Any], agent: str | None, verdict: Verdict
) -> None:
    """Add a blocking finding to ``verdict`` for every breaker in the action's scope that is
    OPEN, or HALF_OPEN with its probe taken by another action.

    A HALF_OPEN breaker's probe goes to the first action it would let through (one that
    nothing else blocks), by agent and statement; the same agent asking again about the same
    statement, or recording it, is the same probe. Breakers are not counted in ``evaluated``
    (CSTP)."""
    subject = Subject.of(fields, agent)
    text = str(fields.get("description") or fields.get("text") or "")
    runtime = app.breakers
    with app.store.lock:
        try:
            matching = [s for s in statuses(app) if scope_matches(s.scope, subject)]
        except Exception as exc:  # fail closed, as every guardrail does
            message = f"circuit breakers could not be evaluated: {exc}"
            verdict.add(Finding("circuit_breaker", "Circuit breakers", message, "block"))
            return
        with runtime.lock:
            for status in matching:
                finding = _finding(status, runtime, agent or "", text, verdict)
                if finding is not None:
                    verdict.add(finding)


def _finding(
    status: BreakerStatus, runtime: BreakerRuntime, agent: str, text: str, verdict: Verdict
) -> BreakerFinding | None:
    if status.state == HALF_OPEN and status.half_open_since is not None:
        probe = runtime.probes.get(status.scope)
        if probe is None or probe.period != status.half_open_since:
            if not verdict.allowed:
                return None  # blocked anyway: the probe waits for an action it would admit
            runtime.probes[status.scope] = Probe(status.half_open_since, agent, text)
            return None
        if (probe.agent, probe.text) == (agent, text):
            return None
    elif status.state != OPEN:
        return None
    scope = status.scope
    reopens = status.reopens_at()
    if status.state == OPEN:
        message = (
            f"Circuit breaker {scope} is open: {status.failure_count} failure(s) of "
            f"{status.config.failure_threshold}; retry after the cooldown"
        )
    else:
        message = f"Circuit breaker {scope} is half-open and its probe is in flight"
    return BreakerFinding(
        f"circuit_breaker:{scope}",
        f"Circuit breaker ({scope})",
        message,
        "block",
        state=status.state,
        failure_rate=round(status.failure_rate, 4),
        reset_at=None if reopens is None else format_ts(reopens),
    )


def probe_in_flight(app: Decigraph, status: BreakerStatus) -> bool:
    """Whether a HALF_OPEN breaker's probe has been taken in this period (this process)."""
    with app.breakers.lock:
        probe = app.breakers.probes.get(status.scope)
    return (
        status.state == HALF_OPEN and probe is not None and probe.period == status.half_open_since
    )


def breaker_row(status: BreakerStatus) -> dict[str, Any]:
    """A breaker as ``listBreakers`` answers (snake_case, CSTP)."""
    config = status.config
    return {
        "scope": status.scope,
        "state": status.state,
        "failure_count": status.failure_count,
        "failure_threshold": config.failure_threshold,
        "window_ms": config.window_ms,
        "cooldown_ms": config.cooldown_ms,
        "cooldown_remaining_ms": status.cooldown_remaining_ms(),
        "from_config": True,
    }


def open_breakers(app: Decigraph) -> list[dict[str, Any]]:
    """The breakers not CLOSED, as ``getSessionContext``'s ``circuitBreakers`` (snake_case):
    ``{scope, state, failure_count, failure_threshold, cooldown_remaining_ms}``."""
    keys = ("scope", "state", "failure_count", "failure_threshold", "cooldown_remaining_ms")
    return [
        {k: row[k] for k in keys}
        for row in map(breaker_row, statuses(app))
        if row["state"] != "closed"
    ]
