"""Control mapping for the evidence chain: YAML rule files that map evidence records to the
controls of a framework (SR 11-7, NIST AI RMF, CSTP's attested controls), as CSTP's
``mapControls`` does.

A rule file declares its ``framework`` and ``evidence_class``; its rules match only records of
that class, so self-reported (attested) evidence never earns observed credit. A rule matches a
record when ``match.event_type`` is the record's and every condition holds on its payload:
``{field, equals | gt | lt | truthy | in}``, a bare ``{field}`` meaning "present and not null".
A rule marked ``insufficient_evidence`` reports a gap (``INSUFFICIENT_EVIDENCE``, with its
``reason``) instead of a mapping. Coverage is counted per class and never combined.

The shipped rules are in ``graph/controls/*.yaml``; files are read in name order and rules in
file order, and records in chain order, so every answer is reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml

from .errors import ValidationError
from .evidence import ATTESTED, OBSERVED

SHIPPED_RULES = Path(__file__).parent / "controls"
GAP = "INSUFFICIENT_EVIDENCE"
#: A rule file is a few kilobytes; a bound keeps a stray file from being parsed at all.
MAX_RULE_FILE = 1_000_000
_OPERATORS = ("equals", "gt", "lt", "truthy", "in")


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class Condition(_Strict):
    """One test on a payload field; at most one operator (none: the field is not null)."""

    field: str = pydantic.Field(min_length=1)
    equals: Any = None
    gt: float | None = None
    lt: float | None = None
    truthy: bool | None = None
    in_: list[Any] | None = pydantic.Field(default=None, alias="in")

    @pydantic.model_validator(mode="after")
    def _one_operator(self) -> Condition:
        given = [name for name in _OPERATORS if _attr(name) in self.model_fields_set]
        if len(given) > 1:
            raise ValueError(f"a condition takes one operator, not {', '.join(given)}")
        if given and given[0] != "equals" and getattr(self, _attr(given[0])) is None:
            raise ValueError(f"{given[0]!r} needs a value")
        return self

    def holds(self, payload: Mapping[str, Any]) -> bool:
        value = payload.get(self.field)
        given = self.model_fields_set
        if "equals" in given:  # `equals: null` is a test too: the field is absent or null
            return bool(value == self.equals)
        # Numbers only for gt/lt: CSTP compares whatever it finds and fails on a string; a
        # payload that says "3" approvals is not evidence of three approvals.
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if self.gt is not None:
            return number is not None and number > self.gt
        if self.lt is not None:
            return number is not None and number < self.lt
        if self.truthy is not None:
            return bool(value) == self.truthy
        if self.in_ is not None:
            return value in self.in_
        return value is not None


def _attr(name: str) -> str:
    return "in_" if name == "in" else name


class Match(_Strict):
    event_type: str = pydantic.Field(min_length=1)
    conditions: list[Condition] = pydantic.Field(default_factory=list)


class Rule(_Strict):
    """One control mapping (or, with ``insufficient_evidence``, one known gap)."""

    id: str = pydantic.Field(min_length=1)
    function_id: str = pydantic.Field(min_length=1)
    control_name: str = pydantic.Field(min_length=1)
    stage: str | None = None
    description: str = ""
    match: Match
    insufficient_evidence: bool = False
    reason: str = ""
    stretch: bool = False
    confidence: str | None = None
    # Set from the file header, not the rule.
    framework: str = ""
    evidence_class: Literal["observed", "attested"] = "observed"

    def matches(self, record: Mapping[str, Any]) -> bool:
        if record.get("evidence_class") != self.evidence_class:
            return False
        if record.get("event_type") != self.match.event_type:
            return False
        payload = record.get("payload")
        payload = payload if isinstance(payload, Mapping) else {}
        return all(condition.holds(payload) for condition in self.match.conditions)


class RuleFile(_Strict):
    framework: str = pydantic.Field(min_length=1)
    evidence_class: Literal["observed", "attested"] = "observed"
    description: str = ""
    rules: list[Rule] = pydantic.Field(default_factory=list)


def load_rules(directory: Path = SHIPPED_RULES, field_name: str = "mappings_dir") -> list[Rule]:
    """Every rule of the ``*.yaml`` files in ``directory`` (name order), each knowing its
    framework and class. A malformed file is refused naming ``field_name`` and the file."""
    if not directory.is_dir():
        raise ValidationError(field_name, f"{directory.name!r} is not a directory")
    rules: list[Rule] = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            if path.stat().st_size > MAX_RULE_FILE:
                raise ValueError(f"larger than {MAX_RULE_FILE} bytes")
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            parsed = RuleFile.model_validate(data if data is not None else {})
        except (OSError, ValueError, yaml.YAMLError) as exc:  # pydantic's error is a ValueError
            detail = _first_problem(exc)
            raise ValidationError(field_name, f"{path.name}: {detail}") from None
        header = {"framework": parsed.framework, "evidence_class": parsed.evidence_class}
        rules.extend(rule.model_copy(update=header) for rule in parsed.rules)
    return rules


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, pydantic.ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# -- applying ---------------------------------------------------------------------------------
@dataclass
class Coverage:
    total_events: int = 0
    mapped_events: int = 0
    unmapped_events: int = 0
    coverage_pct: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_events": self.total_events,
            "mapped_events": self.mapped_events,
            "unmapped_events": self.unmapped_events,
            "coverage_pct": self.coverage_pct,
        }


@dataclass
class MappingResult:
    """Mappings, gaps and unmapped records, with coverage per class (never blended)."""

    observed: Coverage = field(default_factory=Coverage)
    attested: Coverage = field(default_factory=Coverage)
    mappings: list[dict[str, Any]] = field(default_factory=list)
    insufficient_evidence: list[dict[str, Any]] = field(default_factory=list)
    unmapped: list[dict[str, Any]] = field(default_factory=list)
    attested_only_controls: list[str] = field(default_factory=list)

    def coverage(self) -> dict[str, Any]:
        return {"observed": self.observed.to_dict(), "attested": self.attested.to_dict()}

    def to_dict(self) -> dict[str, Any]:
        """``mapControls``' answer (CSTP's keys)."""
        return {
            "coverage": self.coverage(),
            "mappings": self.mappings,
            "insufficient_evidence": self.insufficient_evidence,
            "insufficient_evidence_count": len(self.insufficient_evidence),
            "unmapped": self.unmapped,
            "attested_only_controls": self.attested_only_controls,
        }


def _pr_number(record: Mapping[str, Any]) -> Any:
    payload = record.get("payload")
    return payload.get("pr_number") if isinstance(payload, Mapping) else None


def _entry(record: Mapping[str, Any], rule: Rule) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "seq": record.get("seq"),
        "event_type": record.get("event_type"),
        "pr_number": _pr_number(record),
        "rule_id": rule.id,
        "framework": rule.framework,
        "stage": rule.stage,
        "function_id": rule.function_id,
        "control_name": rule.control_name,
        "ts": record.get("ts"),
        "evidence_class": record.get("evidence_class"),
    }
    if rule.stretch:
        entry["stretch"] = True
    if rule.confidence:
        entry["confidence"] = rule.confidence
    if rule.insufficient_evidence:
        entry["type"] = GAP
        entry["reason"] = rule.reason.strip()
    else:
        entry["type"] = "mapping"
        entry["description"] = rule.description.strip()
    return entry


def _coverage(total: int, mapped: int) -> Coverage:
    pct = round(mapped / total * 100, 1) if total else 0.0
    return Coverage(total, mapped, total - mapped, pct)


def apply_rules(records: Sequence[Mapping[str, Any]], rules: Sequence[Rule]) -> MappingResult:
    """Apply every rule to every record (chain order, then rule order).

    A record is mapped when any rule matched it, gap rules included. A control is
    attested-only when attested mappings name it and no observed mapping does; its mappings
    carry ``attested_only: true`` so a bundle shows them apart.
    """
    result = MappingResult()
    mapped = {OBSERVED: 0, ATTESTED: 0}
    totals = {OBSERVED: 0, ATTESTED: 0}
    for record in records:
        evidence_class = record.get("evidence_class")
        if evidence_class not in totals:
            continue  # only a hand-edited log has another class; verification reports it
        totals[evidence_class] += 1
        hits = [rule for rule in rules if rule.matches(record)]
        for rule in hits:
            gaps = rule.insufficient_evidence
            (result.insufficient_evidence if gaps else result.mappings).append(_entry(record, rule))
        if hits:
            mapped[evidence_class] += 1
        else:
            result.unmapped.append(
                {
                    "seq": record.get("seq"),
                    "event_type": record.get("event_type"),
                    "pr_number": _pr_number(record),
                    "ts": record.get("ts"),
                    "evidence_class": evidence_class,
                }
            )
    result.observed = _coverage(totals[OBSERVED], mapped[OBSERVED])
    result.attested = _coverage(totals[ATTESTED], mapped[ATTESTED])
    by_class: dict[str, set[str]] = {OBSERVED: set(), ATTESTED: set()}
    for entry in result.mappings:
        by_class[entry["evidence_class"]].add(entry["function_id"])
    attested_only = by_class[ATTESTED] - by_class[OBSERVED]
    result.attested_only_controls = sorted(attested_only)
    for entry in result.mappings:
        if entry["function_id"] in attested_only:
            entry["attested_only"] = True
    return result
