"""Bulk import keeps distinct decisions: only an id (externalId or id) or an identical whole
record makes a line a duplicate; every line gets one outcome, counted and reported."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from service.cli.jsonl import parse_lines, summary
from service.methods.decisions import RecordParams
from service.usecases import Decigraph, import_items
from service.usecases.bulk import ImportReport, line_key, stored_key
from service.usecases.rules import load_rules
from tests.support.fakes import fake_app

STATEMENTS = [
    "Use PostgreSQL as the primary datastore",
    "Deploy every service with Terraform",
    "Publish payment events on Kafka",
    "Cache sessions in Redis",
    "Write new services in Go",
    "Require two reviewers on every pull request",
    "Rotate API keys every 90 days",
    "Ship the mobile app weekly",
    "Run the nightly batch on Kubernetes CronJobs",
    "Keep audit logs for seven years",
    "Use feature flags for every launch",
    "Page the on-call engineer for SEV1 only",
]
TEAMS = ["payments", "search", "platform", "mobile", "growth"]


def realistic_lines(seed: int = 5) -> tuple[list[str], Counter[str]]:
    """JSONL lines as agents log them, many sharing a statement; and the outcomes expected."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    expected: Counter[str] = Counter()
    for statement in STATEMENTS:  # 12 statements x 20 decisions that differ in what they say
        for n in range(20):
            row: dict[str, Any] = {
                "decision": statement,
                "context": f"Agent agent-{n % 5} on 2025-03-{n + 1:02d}, {TEAMS[n % 5]} team",
                "tags": [TEAMS[n % 5]] + (["migration"] if n % 2 else []),
                "confidence": round(0.5 + (n % 5) / 10, 1),
            }
            if n % 7 == 0:
                row["reviewIn"] = "2w" if n % 14 else "30d"
            rows.append(row)
            expected["recorded"] += 1
    for row in rng.sample(rows, 30):  # the same record again (no ids): identical
        rows.append(dict(row))
        expected["identical"] += 1
    with_ids = [
        {"decision": STATEMENTS[n % 12], "context": f"ADR-{n}", "externalId": f"adr-{n}"}
        for n in range(20)
    ]
    rows += with_ids
    expected["recorded"] += 20
    for n in range(10):  # re-sent under a known externalId: 5 as they were, 5 changed
        again = dict(with_ids[n])
        if n % 2:
            again["context"] = f"ADR-{n}, revised"
        rows.append(again)
        expected["duplicate_id"] += 1
    memory = [
        {
            "text": f"{TEAMS[n % 5]} standup: {STATEMENTS[n]}",
            "source": "chat",
            "externalId": f"m{n}",
        }
        for n in range(10)
    ]
    rows += memory
    expected["recorded"] += 10
    for n in range(10):  # memory re-sent: identical (a duplicate id) or with new text (updated)
        again = dict(memory[n])
        if n % 2:
            again["text"] += " (corrected)"
            expected["updated"] += 1
        else:
            expected["duplicate_id"] += 1
        rows.append(again)
    lines = [orjson.dumps(row).decode() for row in rows]
    lines += ['{"decision": ""}', "{not json"]
    expected["invalid"] += 2
    return lines, expected


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def run(app: Decigraph, lines: list[str], **options: Any) -> ImportReport:
    report, items = parse_lines(lines)
    return import_items(app, items, "import", report, **options)


def test_a_shared_statement_is_no_duplicate(app: Decigraph) -> None:
    lines, expected = realistic_lines()
    report = run(app, lines, skip_guardrails="test")
    assert {k: v for k, v in report.counts.items() if v} == dict(expected)
    assert report.accounted == report.read == len(lines)  # every line has one outcome
    numbers = sorted(int(e["line"]) for e in report.to_dict()["lines"])
    assert numbers == list(range(1, len(lines) + 1))
    decisions = [a for _, a in app.store.graph.nodes(data=True) if a["kind"] == "decision"]
    assert len(decisions) == 12 * 20 + 20
    assert Counter(a["text"] for a in decisions)[STATEMENTS[0]] == 20 + 2  # + ADR-0, ADR-12
    changed = [e for e in report.lines if e["outcome"] == "duplicate_id" and e.get("differs")]
    assert len(changed) == 5
    assert all("updateDecision" in e["reason"] for e in changed)
    updated = [e for e in report.lines if e["outcome"] == "updated"]
    assert all(e["fields"] == ["text"] for e in updated)
    text = summary(report)
    assert text.startswith(f"read {len(lines)} lines: {expected['recorded']} recorded")
    assert f"line {len(lines)}: invalid: not JSON" in text


def test_a_reimport_records_nothing_and_says_why(app: Decigraph) -> None:
    lines, _ = realistic_lines()
    decisions = [line for line in lines if '"decision"' in line and '""' not in line]
    run(app, decisions, skip_guardrails="test")
    seq = app.store.seq
    again = run(app, decisions, skip_guardrails="test")
    assert again.recorded == 0
    assert again.counts["identical"] == 12 * 20 + 30
    assert again.counts["duplicate_id"] == 30
    assert app.store.seq == seq


def test_the_stored_record_is_the_line_record(app: Decigraph) -> None:
    line = realistic_lines()[0][7]  # with a review window, reasons-free, tags and confidence
    report = run(app, [line], skip_guardrails="test")
    node = app.store.get(report.lines[0]["id"])
    assert stored_key(node) == line_key(RecordParams.model_validate(orjson.loads(line)))


def test_refused_and_unreached_lines_are_reported(app: Decigraph, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "- id: no-mongodb\n"
        "  conditions: [{field: decision, op: matches, value: '(?i)mongodb'}]\n"
        "  action: block\n"
        "  message: MongoDB is not allowed\n"
    )
    app.rules = load_rules([rules])
    lines = [
        '{"decision": "Use PostgreSQL for the ledger"}',
        '{"decision": "Keep the catalogue in MongoDB"}',
        '{"decision": "Cache sessions in Redis"}',
        '{"decision": "Queue jobs in RabbitMQ"}',
    ]
    skipped = run(app, lines)
    assert (skipped.recorded, skipped.counts["refused"]) == (3, 1)
    assert skipped.errors == [{"line": 2, "error": "blocked by guardrails: MongoDB is not allowed"}]
    later = [
        '{"decision": "Store blobs in MongoDB"}',
        '{"decision": "Use S3"}',
        '{"decision": "Use SQS"}',
    ]
    aborted = run(app, later, on_error="abort")
    assert aborted.aborted
    assert [(e["line"], e["outcome"]) for e in aborted.to_dict()["lines"]] == [
        (1, "refused"),
        (2, "not_reached"),
        (3, "not_reached"),
    ]
