"""Scoring of scripted agent sessions: which decisions an answer named, against what the
session's writer said a careful colleague would want the agent told.

An answer *names* a decision when the decision's id appears anywhere in the answer's text
(JSON or markdown alike), so every server version is scored the same way, whatever its shape.
A conflict is *raised* when an id appears inside the answer's conflict part (the keys of
:data:`CONFLICT_KEYS`, at any depth) or the answer refuses the action (``allowed: false``).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Keys whose values are an answer's conflicts and refusals (every version's spelling).
CONFLICT_KEYS = frozenset(
    {"conflicts", "blockReasons", "violations", "guardrailResults", "contradicts", "blocked"}
)
_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{8}(?![0-9a-f])")


def ids_in(text: str, known: Iterable[str]) -> set[str]:
    """The known ids that appear in ``text``."""
    wanted = set(known)
    return {m for m in _ID.findall(text) if m in wanted}


def conflict_text(answer: Any) -> str:
    """The text of every part of ``answer`` under a conflict key, at any depth."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key in CONFLICT_KEYS and value:
                    parts.append(json.dumps(value))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(answer)
    return "\n".join(parts)


@dataclass
class ProbeScore:
    """One probe's figures (counts, so sessions and sets add up)."""

    session: str
    step: int
    kind: str
    bytes: int
    must: int = 0
    must_found: int = 0
    named: int = 0
    named_ok: int = 0
    named_bad: int = 0
    conflict_expected: bool = False
    conflict_raised: bool = False
    failures: int = 0
    failures_found: int = 0
    missed: list[str] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)


def score_probe(
    session: str,
    step: int,
    kind: str,
    text: str,
    expect: Mapping[str, list[str]],
    ids: Mapping[str, str],
) -> ProbeScore:
    """Score one answer. ``ids`` maps the session's keys to the ids the server gave them."""
    key_of = {v: k for k, v in ids.items()}
    named = {key_of[i] for i in ids_in(text, key_of)}
    must = set(expect.get("must_appear", []))
    ok = must | set(expect.get("may_appear", []))
    failures = set(expect.get("failures", []))
    s = ProbeScore(session, step, kind, len(text.encode()))
    s.must, s.must_found = len(must), len(must & named)
    s.named, s.named_ok = len(named), len(named & ok)
    s.named_bad = len(named & set(expect.get("must_not_appear", [])))
    s.failures, s.failures_found = len(failures), len(failures & named)
    s.missed = sorted(must - named)
    s.noise = sorted(named - ok)
    if kind == "pre_action":
        try:
            answer = json.loads(text)
        except ValueError:
            answer = {}
        raised = {key_of[i] for i in ids_in(conflict_text(answer), key_of)}
        refused = isinstance(answer, Mapping) and answer.get("allowed") is False
        expected = set(expect.get("conflicts", []))
        s.conflict_expected = bool(expected)
        s.conflict_raised = bool(raised & expected) if expected else bool(raised or refused)
    return s


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def summarise(scores: list[ProbeScore]) -> dict[str, Any]:
    """Micro-averaged figures over ``scores`` (all probes of a session, or of a set)."""
    pre = [s for s in scores if s.kind == "pre_action"]
    ctx = [s for s in scores if s.kind == "session_context"]
    with_conflict = [s for s in pre if s.conflict_expected]
    without = [s for s in pre if not s.conflict_expected]

    def sizes(group: list[ProbeScore]) -> dict[str, Any]:
        values = sorted(s.bytes for s in group)
        if not values:
            return {"median": None, "p95": None, "n": 0}
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        return {"median": round(statistics.median(values)), "p95": p95, "n": len(values)}

    return {
        "probes": len(scores),
        "mustAppearRecall": _ratio(sum(s.must_found for s in scores), sum(s.must for s in scores)),
        "precision": _ratio(sum(s.named_ok for s in scores), sum(s.named for s in scores)),
        # The share of named decisions not on the writer's "must not appear" list (a lenient
        # precision: decisions the writer neither required nor allowed count as fine).
        "precisionMustNot": _ratio(
            sum(s.named - s.named_bad for s in scores), sum(s.named for s in scores)
        ),
        "conflictsRaised": _ratio(
            sum(s.conflict_raised for s in with_conflict), len(with_conflict)
        ),
        "conflictProbes": len(with_conflict),
        "falseConflicts": _ratio(sum(s.conflict_raised for s in without), len(without)),
        "noConflictProbes": len(without),
        "failuresRecalled": _ratio(
            sum(s.failures_found for s in scores), sum(s.failures for s in scores)
        ),
        "failures": sum(s.failures for s in scores),
        "preActionBytes": sizes(pre),
        "sessionContextBytes": sizes(ctx),
    }
