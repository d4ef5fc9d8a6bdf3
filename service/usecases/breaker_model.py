"""Circuit-breaker configuration (YAML, beside the guardrail rules) and the in-memory runtime.

Breakers are declared as CSTP declares them, under a ``circuit_breakers:`` key of any YAML
file the guardrail rules are read from (``<data-dir>/guardrails`` and ``--guardrails-path``),
typically a ``circuit_breakers.yaml`` of its own::

    circuit_breakers:
      - {scope: "stakes:high", failure_threshold: 3, window_ms: 86400000, cooldown_ms: 3600000}
      - {scope: "category:security", failure_threshold: 2}

(the rule loader reads only a mapping's ``guardrails:`` key, so such a file adds no rule). No
file declaring the key: CSTP's shipped breakers (:data:`DEFAULT_BREAKERS`); a file declaring
an empty list turns breakers off. Unlike CSTP, a breaker is validated when loaded (a scope
that could never match, a zero threshold, a duplicate scope stop start-up, naming the file).

The state itself is derived from the log (:mod:`graph.algorithms.breakers`); the runtime only
caches what the log gives (recomputed when the log has moved) and keeps the half-open probes,
which are not logged: a restart re-arms a half-open breaker's probe.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field

from graph.algorithms.breakers import SCOPE_PATTERN, BreakerConfig, OutcomeEvent, Settled

from .rules import GuardrailConfigError, item_error, rule_files

#: CSTP's shipped ``guardrails/circuit_breakers.yaml``.
DEFAULT_BREAKERS: tuple[BreakerConfig, ...] = (
    BreakerConfig(
        "stakes:critical", failure_threshold=2, window_ms=86_400_000, cooldown_ms=7_200_000
    ),
    BreakerConfig("stakes:high", failure_threshold=3, window_ms=86_400_000, cooldown_ms=3_600_000),
)
#: A day's milliseconds times 10 years: the longest window or cooldown accepted.
MAX_MS = 86_400_000 * 3_650


class BreakerEntry(BaseModel):
    """One ``circuit_breakers`` item as written in YAML (CSTP's keys and defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    scope: str = Field(pattern=SCOPE_PATTERN.pattern)
    failure_threshold: int = Field(default=5, ge=1, le=1_000_000)
    window_ms: int = Field(default=3_600_000, ge=1, le=MAX_MS)
    cooldown_ms: int = Field(default=1_800_000, ge=0, le=MAX_MS)
    notify: bool = True

    def config(self) -> BreakerConfig:
        return BreakerConfig(**self.model_dump())


def load_breakers(paths: Sequence[Path]) -> tuple[BreakerConfig, ...]:
    """The breakers declared in the rule files of ``paths`` (sorted by scope), or the
    defaults when no file declares ``circuit_breakers``."""
    declared = False
    found: dict[str, BreakerConfig] = {}
    for file in rule_files(paths):
        try:
            raw = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (yaml.YAMLError, OSError, UnicodeDecodeError):
            continue  # the rule loader has already refused this file, naming the problem
        if not isinstance(raw, dict) or "circuit_breakers" not in raw:
            continue
        declared = True
        items = raw["circuit_breakers"] or []
        if not isinstance(items, list):
            raise GuardrailConfigError(f"{file}: circuit_breakers must be a list")
        for number, item in enumerate(items):
            try:
                entry = BreakerEntry.model_validate(item)
            except pydantic.ValidationError as exc:
                raise item_error(file, f"circuit breaker {number}", exc) from None
            if entry.scope in found:
                raise GuardrailConfigError(
                    f"{file}: circuit breaker scope {entry.scope!r} is defined twice"
                )
            found[entry.scope] = entry.config()
    if not declared:
        return DEFAULT_BREAKERS
    return tuple(sorted(found.values(), key=lambda c: c.scope))


@dataclass(frozen=True)
class Probe:
    """The half-open probe a check took: which period, by whom, for which statement.

    The same agent checking, then recording, the same statement is one probe (decigraph
    gates the record too), so asking first and recording later still agree."""

    period: datetime
    agent: str
    text: str


@dataclass
class BreakerRuntime:
    """The configured breakers, the half-open probes, and caches of what the log gives.

    ``by_node`` holds each reviewed decision's outcomes (``None``: to be read from the graph
    again; ``dirty``: the nodes reviewed, updated or forgotten since), ``outcomes`` all of
    them in time order and ``version`` counts its rebuilds; ``settled`` is each breaker's
    replay as of an outcomes version and the last reset's seq. ``listening`` once the store
    tells this runtime about its events. Guard them with the store's lock."""

    configs: tuple[BreakerConfig, ...] = DEFAULT_BREAKERS
    probes: dict[str, Probe] = field(default_factory=dict)
    by_node: dict[str, list[OutcomeEvent]] | None = None
    dirty: set[str] = field(default_factory=set)
    outcomes: list[OutcomeEvent] | None = None
    version: int = 0
    settled: dict[str, tuple[tuple[int, int], Settled]] = field(default_factory=dict)
    listening: bool = False
    #: Guards ``probes`` (taken inside the store's lock, never the other way round).
    lock: threading.Lock = field(default_factory=threading.Lock)

    def config(self, scope: str) -> BreakerConfig | None:
        return next((c for c in self.configs if c.scope == scope), None)
