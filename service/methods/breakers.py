"""Circuit-breaker methods (CSTP's): ``listBreakers``, ``getCircuitState`` and
``resetCircuit``, on breakers derived from the log (:mod:`service.usecases.breakers`).

Shapes are CSTP's: ``listBreakers`` entries in snake_case; ``getCircuitState`` in camelCase
with ``openedAt`` as the epoch seconds rendered as a string; ``resetCircuit`` answers camelCase
and also the snake_case ``previous_state`` / ``new_state`` CSTP's dashboard reads.
decigraph adds ``failures`` (the decisions whose failed reviews are counted, oldest first),
``probeInFlight``, ``fromConfig`` and ``halfOpenSince`` to ``getCircuitState`` (the MCP tool
answers them in snake_case, as CSTP's tool does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from graph.algorithms.breakers import HALF_OPEN, OPEN
from graph.timeutil import format_ts
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases import breakers

from .params import Params


class ListBreakersParams(Params):
    pass


class CircuitStateParams(Params):
    scope: str = Field(min_length=1, max_length=300)


class ResetCircuitParams(Params):
    scope: str = Field(min_length=1, max_length=300)
    probe_first: bool = False


def circuit_state_view(app: usecases.Decigraph, status: Any) -> dict[str, Any]:
    """A breaker as ``getCircuitState`` answers (CSTP's camelCase, plus decigraph's
    ``failures``, ``probeInFlight``, ``fromConfig`` and ``halfOpenSince``)."""
    config = status.config
    view: dict[str, Any] = {
        "scope": status.scope,
        "state": status.state,
        "failureCount": status.failure_count,
        "failureThreshold": config.failure_threshold,
        "windowMs": config.window_ms,
        "cooldownMs": config.cooldown_ms,
    }
    if status.state in (OPEN, HALF_OPEN) and status.opened_at is not None:
        view["openedAt"] = str(status.opened_at.timestamp())
    remaining = status.cooldown_remaining_ms()
    if remaining is not None:
        view["cooldownRemainingMs"] = remaining
    if status.half_open_since is not None and status.state == HALF_OPEN:
        view["halfOpenSince"] = format_ts(status.half_open_since)
    view["probeInFlight"] = breakers.probe_in_flight(app, status)
    view["fromConfig"] = True  # MCP's get_circuit_state reports it (snake_case)
    view["failures"] = [
        {"decisionId": decision_id, "at": format_ts(at)} for at, decision_id in status.failures
    ]
    return view


def register_breakers(registry: Registry, app: usecases.Decigraph) -> None:
    """Register ``listBreakers``, ``getCircuitState`` and ``resetCircuit`` (a write)."""

    def list_breakers(p: ListBreakersParams, ctx: CallContext) -> Mapping[str, Any]:
        return {"breakers": [breakers.breaker_row(s) for s in breakers.statuses(app)]}

    def circuit_state(p: CircuitStateParams, ctx: CallContext) -> Mapping[str, Any]:
        return circuit_state_view(app, breakers.breaker_status(app, p.scope))

    def reset(p: ResetCircuitParams, ctx: CallContext) -> Mapping[str, Any]:
        done = breakers.reset_circuit(app, p.scope, p.probe_first, ctx.agent)
        return {
            "scope": done.scope,
            "previousState": done.previous_state,
            "newState": done.new_state,
            "message": done.message,
            # CSTP's dashboard reads these (CSTP itself never sent them: its flash showed "?").
            "previous_state": done.previous_state,
            "new_state": done.new_state,
        }

    registry.add("cstp.listBreakers", ListBreakersParams, list_breakers)
    registry.add("cstp.getCircuitState", CircuitStateParams, circuit_state)
    registry.add("cstp.resetCircuit", ResetCircuitParams, reset, writes=True)
