"""Every row of the client table (:mod:`tests.contract.clients`) against a real server.

One ``decigraph serve`` (real model, real ChromaDB, a real socket) is seeded as a team would
use it: a billing project's decisions with reasons, bridges, reviews (two critical failures
trip the ``stakes:critical`` breaker), a dependency and evidence. Each row's request, shaped as
its client sends it, must be answered without an error, and every field that client reads must
be there, with the type or value the row names.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.contract.clients import CSTP_METHODS, ROWS, Row
from tests.support.rpc import Rpc, serving

pytestmark = pytest.mark.e2e

TOKEN = "contract-token-0123456789"

RULES = """
guardrails:
  - id: payments-need-two-reasons
    description: Payments changes need at least two reasons
    scope: {project: [billing]}
    conditions: [{field: category, op: eq, value: security}]
    requirements: [{field: reasons, op: min_count, value: 2}]
    action: warn
    message: give two reasons for a payments change
  - id: critical-needs-reasons
    description: Critical decisions need a reason
    conditions: [{field: stakes, op: eq, value: critical}]
    requirements: [{field: reasons, op: min_count, value: 1}]
    action: block
    message: critical-stakes decisions need at least one reason
"""

#: (statement, category, stakes, confidence, reasons, extra fields, outcome or None)
SEED: list[tuple[str, str, str, float, list[tuple[str, str]], dict[str, Any], str | None]] = [
    (
        "Use PostgreSQL 16 as the primary datastore for the billing service",
        "architecture",
        "high",
        0.9,
        [
            ("analysis", "Invoices need serializable transactions"),
            ("empirical", "The ledger prototype ran 4k writes/s on PostgreSQL"),
        ],
        {
            "pattern": "boring-technology",
            "tags": ["database", "billing"],
            "bridge": {
                "structure": "A relational database with serializable transactions",
                "function": "Keep every invoice and payment consistent",
            },
        },
        "success",
    ),
    (
        "Store monetary amounts as integer cents, never as floating point",
        "architecture",
        "high",
        0.95,
        [
            ("analysis", "Floats lose cents when totals are summed"),
            ("authority", "The finance team's accounting standard requires exact amounts"),
        ],
        {
            "pattern": "boring-technology",
            "tags": ["money"],
            "bridge": {
                "structure": "Integer columns in cents",
                "function": "Avoid rounding errors in invoice totals",
            },
        },
        "success",
    ),
    (
        "Send payment reminders through the existing transactional email queue",
        "integration",
        "medium",
        0.7,
        [("pattern", "Every customer notification already goes through that queue")],
        {"tags": ["email"]},
        "partial",
    ),
    (
        "Require two reviewers for every change to the payments module",
        "process",
        "high",
        0.8,
        [("authority", "Audit finding 2026-03"), ("constraint", "SOX change control")],
        {"tags": ["review"]},
        "success",
    ),
    (
        "Cache currency exchange rates in Redis for fifteen minutes",
        "architecture",
        "medium",
        0.6,
        [("empirical", "The rates API allows 1,000 calls a day")],
        {"tags": ["cache"]},
        "failure",
    ),
    (
        "Pin the PDF rendering library to 4.2 until the font bug is fixed",
        "tooling",
        "low",
        0.75,
        [("empirical", "4.3 drops glyphs in Japanese invoices")],
        {"tags": ["pdf"]},
        "success",
    ),
    (
        "Rotate the Stripe API keys every 90 days",
        "security",
        "critical",
        0.85,
        [("authority", "PCI DSS requirement 3.6.4")],
        {"tags": ["secrets"]},
        "failure",
    ),
    (
        "Give support staff read-only access to invoices",
        "security",
        "critical",
        0.7,
        [("analysis", "Support needs to see invoices to answer tickets")],
        {"tags": ["access"]},
        "failure",
    ),
    (
        "Adopt trunk-based development for the billing repository",
        "process",
        "medium",
        0.65,
        [("analogy", "It cut the platform team's merge conflicts by half")],
        {"tags": ["git"]},
        None,
    ),
]


def seed(rpc: Rpc) -> dict[str, Any]:
    ids = []
    for text, category, stakes, confidence, reasons, extra, _ in SEED:
        params = {
            "decision": text,
            "category": category,
            "stakes": stakes,
            "confidence": confidence,
            "context": "Billing platform rework, Q3",
            "reasons": [{"type": t, "text": r} for t, r in reasons],
            "project_context": {"project": "billing"},
            **extra,
        }
        ids.append(rpc.ok("cstp.recordDecision", params)["id"])
    for node_id, (*_, outcome) in zip(ids, SEED, strict=True):
        if outcome is not None:
            rpc.ok(
                "cstp.reviewDecision",
                {"id": node_id, "outcome": outcome, "lessons": "Checked at the quarterly review"},
            )
    rpc.ok("cstp.linkDecisions", {"sourceId": ids[2], "targetId": ids[0], "edgeType": "depends_on"})
    ingested = rpc.ok(
        "cstp.ingestEvidence",
        {
            "source": "github",
            "events": [
                {
                    "event_type": "pr_review_approved",
                    "payload": {"pr_number": 411, "actor_is_human": True},
                }
            ],
        },
    )
    now = datetime.now(UTC)
    return {
        "$ID": ids[0],
        "$OTHER": ids[5],
        "$PENDING": ids[8],
        "$SCOPE": "stakes:critical",
        "$SEQ": ingested["first_seq"],
        "$TODAY": (now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S"),
        "$WEEK_AGO": (now - timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%S"),
    }


def fill(value: Any, values: dict[str, Any]) -> Any:
    if isinstance(value, str) and value in values:
        return values[value]
    if isinstance(value, dict):
        return {k: fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, values) for v in value]
    return value


TYPES: dict[str, tuple[type, ...]] = {
    "number": (int, float),
    "string": (str,),
    "bool": (bool,),
    "list": (list,),
    "object": (dict,),
}


def check(answer: Any, spec: str) -> str | None:
    """Why ``answer`` does not hold the field ``spec`` names (``None`` when it does)."""
    optional = spec.endswith("?")
    spec = spec.rstrip("?")
    expected: str | None = None
    kind: str | None = None
    if "=" in spec:
        spec, expected = spec.split("=", 1)
    elif ":" in spec:
        spec, kind = spec.rsplit(":", 1)
    return _walk(answer, spec.split("."), spec, optional, expected, kind)


def _walk(
    value: Any,
    parts: list[str],
    spec: str,
    optional: bool,
    expected: str | None,
    kind: str | None,
) -> str | None:
    head, rest = parts[0], parts[1:]
    listed = head.endswith("[]") or head.endswith("[]?")
    may_be_empty = head.endswith("[]?")
    key = head.removesuffix("?").removesuffix("[]")
    if not isinstance(value, dict):
        return f"{spec}: {value!r} is not an object"
    names = key.split("|")
    present = [n for n in names if value.get(n) is not None]
    if not present:
        return None if optional and not rest else f"{spec}: no {key!r} in {sorted(value)}"
    item = value[present[0]]
    if listed:
        if not isinstance(item, list):
            return f"{spec}: {key} is not a list"
        if not item and not may_be_empty:
            return f"{spec}: {key} is empty"
        for element in item:
            problem = _walk(element, rest, spec, optional, expected, kind) if rest else None
            if problem:
                return problem
        return None
    if rest:
        return _walk(item, rest, spec, optional, expected, kind)
    if expected is not None and json.dumps(item) != expected:
        return f"{spec}: {item!r} != {expected}"
    if kind is not None:
        types = TYPES[kind]
        if not isinstance(item, types) or (kind == "number" and isinstance(item, bool)):
            return f"{spec}: {item!r} is not a {kind}"
    return None


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Rpc, dict[str, Any]]]:
    data = tmp_path_factory.mktemp("contract") / "data"
    (data / "guardrails").mkdir(parents=True)
    (data / "guardrails" / "billing.yaml").write_text(RULES)
    with serving(data, TOKEN) as rpc:
        yield rpc, seed(rpc)


def test_every_cstp_method_has_a_row_and_is_served(live: tuple[Rpc, dict[str, Any]]) -> None:
    rpc, _ = live
    assert {row.method for row in ROWS} >= set(CSTP_METHODS)
    listed = rpc.call("cstp.noSuchMethod", {})["error"]["data"]["available"]
    assert set(CSTP_METHODS) <= set(listed), sorted(set(CSTP_METHODS) - set(listed))


@pytest.mark.parametrize(
    "row",
    ROWS,
    ids=[f"{r.client}-{r.method.removeprefix('cstp.')}-{n}" for n, r in enumerate(ROWS)],
)
def test_client_shapes(live: tuple[Rpc, dict[str, Any]], row: Row) -> None:
    rpc, values = live
    answer = rpc.call(row.method, fill(row.params, values))
    assert "error" not in answer, (row.note, answer)
    result = answer["result"]
    problems = [p for spec in row.reads if (p := check(result, spec)) is not None]
    assert not problems, (row.method, problems, result)


@pytest.mark.parametrize(
    ("answer", "spec", "ok"),
    [
        ({"a": [{"b": 1}]}, "a[].b:number", True),
        ({"a": []}, "a[].b", False),
        ({"a": []}, "a[]?.b", True),
        ({"a": {"c": "x"}}, "a.b|c:string", True),
        ({"a": 1}, "a:string", False),
        ({"a": True}, "a:number", False),
        ({}, "a?", True),
        ({"a": "x"}, 'a="x"', True),
        ({"a": "y"}, 'a="x"', False),
    ],
)
def test_the_field_checker_can_fail(answer: Any, spec: str, ok: bool) -> None:
    assert (check(answer, spec) is None) is ok
