"""Guardrails checked *before* a decision is recorded: YAML rules and the graph constraint.

Rule files (CSTP style) hold a list of rules::

    - id: high-stakes-need-reasons
      description: High-stakes decisions need at least two reasons
      scope: {category: [architecture]}          # optional: the rule applies only here
      conditions:                                # all must hold for the rule to apply
        - {field: stakes, op: in, value: [high, critical]}
      requirements:                              # all must hold, or the rule is violated
        - {field: reasons, op: min_count, value: 2}
      action: block                              # or warn
      message: "{stakes}-stakes decisions need two reasons"

Files are validated when loaded; an error names the file, the rule and the field. The graph
constraint blocks a decision that contradicts an active decision whose salience exceeds
a threshold. A guardrail that fails while evaluating blocks, with the failure in its message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field

from graph.errors import DecigraphError
from retrieval.contradiction.tiers import Conflict

Operator = Literal[
    "eq",
    "ne",
    "in",
    "not_in",
    "gt",
    "gte",
    "lt",
    "lte",
    "contains",
    "matches",
    "exists",
    "min_count",
    "min_length",
]


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str = Field(min_length=1)
    op: Operator = "eq"
    value: Any = None


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
    description: str = ""
    scope: dict[str, list[str]] = Field(default_factory=dict)
    conditions: list[Check] = Field(default_factory=list)
    requirements: list[Check] = Field(default_factory=list)
    action: Literal["block", "warn"] = "warn"
    message: str = ""


class GuardrailConfigError(DecigraphError):
    """A rule file that cannot be used; the message names the file, rule and field."""


@dataclass(frozen=True)
class Finding:
    guardrail_id: str
    name: str
    message: str
    severity: Literal["block", "warn"]
    suggestion: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "guardrailId": self.guardrail_id,
            "name": self.name,
            "message": self.message,
            "severity": self.severity,
        }
        if self.suggestion:
            out["suggestion"] = self.suggestion
        return out


@dataclass
class Verdict:
    violations: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    evaluated: int = 0
    #: The contradiction judge's raised pairs (block and review tiers), strongest first.
    conflicts: list[Conflict] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return not self.violations

    def add(self, finding: Finding) -> None:
        (self.violations if finding.severity == "block" else self.warnings).append(finding)

    def findings(self) -> list[Finding]:
        """Violations, then warnings."""
        return [*self.violations, *self.warnings]


class GuardrailBlockedError(DecigraphError):
    """A write that guardrails block, asked for without an override; nothing was written."""

    def __init__(self, verdict: Verdict) -> None:
        messages = "; ".join(v.message for v in verdict.violations)
        super().__init__(f"blocked by guardrails: {messages}")
        self.verdict = verdict


def rule_files(paths: Sequence[Path]) -> list[Path]:
    """Every ``*.yaml``/``*.yml`` file of ``paths`` (files, or directories read in name order):
    where rules and circuit breakers are declared."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")))
        elif path.exists():
            files.append(path)
    return files


def item_error(
    file: Path, what: str, exc: pydantic.ValidationError, whole: str = "item"
) -> GuardrailConfigError:
    """A declaration in ``file`` that does not validate, its first bad field named
    (``"rules.yaml: rule 2 field action: ..."``; ``whole`` when the item itself is wrong)."""
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"]) or whole
    return GuardrailConfigError(f"{file}: {what} field {where}: {first['msg']}")


def load_rules(paths: Sequence[Path]) -> list[Rule]:
    """Rules from every ``*.yaml``/``*.yml`` file in ``paths`` (files or directories), by id."""
    rules: dict[str, Rule] = {}
    for file in rule_files(paths):
        try:
            raw = yaml.safe_load(file.read_text(encoding="utf-8")) or []
        except yaml.YAMLError as exc:
            raise GuardrailConfigError(f"{file}: not valid YAML: {_yaml_problem(exc)}") from None
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise GuardrailConfigError(f"{file}: cannot be read: {reason}") from None
        if isinstance(raw, dict):
            raw = raw.get("guardrails", [])
        if not isinstance(raw, list):
            raise GuardrailConfigError(f"{file}: expected a list of rules")
        for number, item in enumerate(raw):
            try:
                rule = Rule.model_validate(item)
            except pydantic.ValidationError as exc:
                raise item_error(file, f"rule {number}", exc, "rule") from None
            if rule.id in rules:
                raise GuardrailConfigError(f"{file}: rule id {rule.id!r} is defined twice")
            rules[rule.id] = rule
    return sorted(rules.values(), key=lambda r: r.id)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error on one line: where (line, column) and what."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + " ".join(str(problem).split())


def _value(action: Mapping[str, Any], path: str) -> Any:
    current: Any = action
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


def _holds(check: Check, action: Mapping[str, Any]) -> bool:
    actual = _value(action, check.field)
    op, expected = check.op, check.value
    if op == "exists":
        return (actual is not None) == (expected is not False)
    if actual is None:
        return op in ("ne", "not_in")
    tests: dict[str, Callable[[], bool]] = {
        "eq": lambda: actual == expected,
        "ne": lambda: actual != expected,
        "in": lambda: actual in expected,
        "not_in": lambda: actual not in expected,
        "gt": lambda: actual > expected,
        "gte": lambda: actual >= expected,
        "lt": lambda: actual < expected,
        "lte": lambda: actual <= expected,
        "contains": lambda: expected in actual,
        "matches": lambda: re.search(str(expected), str(actual)) is not None,
        "min_count": lambda: len(actual) >= int(expected),
        "min_length": lambda: len(str(actual)) >= int(expected),
    }
    return bool(tests[op]())


def _render(template: str, action: Mapping[str, Any]) -> str:
    return re.sub(
        r"\{([A-Za-z_][A-Za-z0-9_.]*)\}", lambda m: str(_value(action, m.group(1))), template
    )


def evaluate_rules(rules: Sequence[Rule], action: Mapping[str, Any], verdict: Verdict) -> None:
    """Apply every rule to ``action`` (a decision's fields), adding findings to ``verdict``."""
    for rule in rules:
        verdict.evaluated += 1
        try:
            in_scope = all(str(_value(action, k)) in v for k, v in rule.scope.items())
            if not in_scope or not all(_holds(c, action) for c in rule.conditions):
                continue
            failed = [c for c in rule.requirements if not _holds(c, action)]
            if failed or not rule.requirements:
                message = _render(rule.message or rule.description or rule.id, action)
                verdict.add(Finding(rule.id, rule.description or rule.id, message, rule.action))
        except Exception as exc:  # fail closed: a broken rule blocks and says why
            message = f"guardrail {rule.id} could not be evaluated: {exc}"
            verdict.add(Finding(rule.id, rule.description or rule.id, message, "block"))
