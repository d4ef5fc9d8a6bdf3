"""Rule guardrails: loading with clear errors, every operator, fail-closed evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from service.usecases.rules import (
    Check,
    GuardrailConfigError,
    Rule,
    Verdict,
    evaluate_rules,
    load_rules,
)


def write(tmp_path: Path, text: str, name: str = "rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- id: a\n  action: explode\n", "rule 0 field action"),
        ("- id: a\n  conditions: [{field: x, op: roughly}]\n", "rule 0 field conditions.0.op"),
        ("- id: 'bad id!'\n", "rule 0 field id"),
        ("- {id: a}\n- {id: a}\n", "defined twice"),
        ("- id: a\n  colour: red\n", "rule 0 field colour"),
        ("key: [unclosed\n", "not valid YAML"),
        ("just a string\n", "expected a list"),
    ],
)
def test_bad_rule_files_are_refused_with_the_place(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(GuardrailConfigError, match=expected) as info:
        load_rules([path])
    assert str(path) in str(info.value)


def test_rules_load_from_files_and_directories(tmp_path: Path) -> None:
    folder = tmp_path / "guardrails"
    folder.mkdir()
    write(folder, "- {id: b, action: block}\n", "one.yaml")
    write(folder, "guardrails:\n  - {id: a}\n", "two.yml")
    write(folder, "ignored", "notes.txt")
    assert [r.id for r in load_rules([folder, tmp_path / "missing.yaml"])] == ["a", "b"]


ACTION = {
    "stakes": "high",
    "confidence": 0.4,
    "tags": ["db", "ops"],
    "description": "Drop table",
    "reasons": [{"type": "analysis"}],
    "context": {"env": "prod"},
}


@pytest.mark.parametrize(
    ("op", "field", "value", "holds"),
    [
        ("eq", "stakes", "high", True),
        ("ne", "stakes", "high", False),
        ("in", "stakes", ["high", "critical"], True),
        ("not_in", "stakes", ["low"], True),
        ("gt", "confidence", 0.3, True),
        ("gte", "confidence", 0.4, True),
        ("lt", "confidence", 0.4, False),
        ("lte", "confidence", 0.4, True),
        ("contains", "tags", "db", True),
        ("matches", "description", "^Drop", True),
        ("exists", "category", True, False),
        ("exists", "category", False, True),
        ("min_count", "reasons", 2, False),
        ("min_length", "description", 5, True),
        ("eq", "context.env", "prod", True),
        ("eq", "missing.path", "x", False),
    ],
)
def test_operators(op: str, field: str, value: Any, holds: bool) -> None:
    rule = Rule(id="r", requirements=[Check(field=field, op=op, value=value)], action="block")  # type: ignore[arg-type]
    verdict = Verdict()
    evaluate_rules([rule], ACTION, verdict)
    assert verdict.allowed is holds


def test_scope_conditions_and_messages() -> None:
    rules = [
        Rule(id="scoped", scope={"stakes": ["low"]}, action="block"),
        Rule(
            id="cond",
            conditions=[Check(field="stakes", value="high")],
            requirements=[Check(field="confidence", op="gte", value=0.7)],
            action="warn",
            message="{stakes} stakes at {confidence} confidence",
        ),
    ]
    verdict = Verdict()
    evaluate_rules(rules, ACTION, verdict)
    assert verdict.allowed
    assert [w.message for w in verdict.warnings] == ["high stakes at 0.4 confidence"]
    assert verdict.evaluated == 2


def test_a_rule_that_errors_blocks_with_the_error() -> None:
    broken = Rule(
        id="broken", requirements=[Check(field="stakes", op="gt", value=3)], action="warn"
    )
    verdict = Verdict()
    evaluate_rules([broken], ACTION, verdict)  # "high" > 3 raises TypeError
    assert not verdict.allowed
    assert "could not be evaluated" in verdict.violations[0].message
