"""``decigraph import`` and ``decigraph recall`` against a real data directory (real model)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from graph.store import DecisionStore, StoreOptions
from tests.integration.test_cli import cli

LINES = [
    {
        "decision": "Use PostgreSQL for the billing ledger",
        "category": "architecture",
        "externalId": "d1",
    },
    {"decision": "Cache sessions in Redis", "tags": ["cache"]},
    {"text": "The ledger migration finished on Tuesday", "source": "ops", "externalId": "m1"},
    {
        "text": "Checkout latency doubled after the Redis upgrade",
        "source": "ops",
        "occurredAt": "2025-03-01T10:00:00Z",
    },
]


def write_jsonl(path: Path, rows: list[object], bad: str | None = None) -> Path:
    text = "\n".join(orjson.dumps(r).decode() for r in rows)
    if bad is not None:
        text += "\n" + bad
    path.write_text(text + "\n")
    return path


def test_import_is_idempotent_and_reports_bad_lines(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    source = write_jsonl(tmp_path / "in.jsonl", LINES, bad='{"decision": ""}')
    first = cli("import", str(source), "--data-dir", data, "--json")
    assert first.returncode == 1, first.stderr  # one bad line, reported
    report = json.loads(first.stdout)
    assert (report["recorded"], report["invalid"]) == (4, 1)
    assert report["errors"][0]["line"] == 5
    assert "decision" in report["errors"][0]["error"]
    again = json.loads(cli("import", str(source), "--data-dir", data, "--json").stdout)
    assert (again["recorded"], again["duplicateId"], again["identical"]) == (0, 2, 2)
    with DecisionStore.open(Path(data), StoreOptions(read_only=True)) as store:
        assert store.graph.number_of_nodes() == 4
        assert store.find_external("d1") is not None
    found = cli("recall", "why did checkout get slower?", "--data-dir", data, "--json")
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["intent"] == "why"
    assert answer["results"][0]["text"].startswith("Checkout latency doubled")
    verified = cli("verify", "--data-dir", data, "--indexes", "--json")
    assert verified.returncode == 0, verified.stdout


def test_abort_writes_nothing_when_any_line_is_bad(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = write_jsonl(tmp_path / "in.jsonl", LINES, bad="{not json")
    result = cli("import", str(source), "--data-dir", str(data), "--on-error", "abort", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["aborted"] is True
    assert (report["recorded"], report["notReached"], report["invalid"]) == (0, 4, 1)
    with DecisionStore.open(data, StoreOptions(read_only=True)) as store:
        assert store.seq == 0


def test_import_is_gated_unless_skipped_and_the_log_says_so(tmp_path: Path) -> None:
    rules = tmp_path / "data" / "guardrails"
    rules.mkdir(parents=True)
    (rules / "rules.yaml").write_text(
        "- id: no-mongodb\n"
        "  conditions: [{field: decision, op: matches, value: '(?i)mongodb'}]\n"
        "  action: block\n"
        "  message: MongoDB is not allowed\n"
    )
    rows = [
        {"decision": "Use PostgreSQL for the billing ledger"},
        {"decision": "Keep the product catalogue in MongoDB"},
        {"decision": "Keep the audit trail in MongoDB", "override": {"reason": "legacy, ADR-12"}},
    ]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    data = str(tmp_path / "data")
    gated = cli("import", str(source), "--data-dir", data, "--json")
    assert gated.returncode == 1  # a refused line is reported, never dropped silently
    report = json.loads(gated.stdout)
    assert (report["recorded"], report["refused"]) == (2, 1)
    assert report["errors"] == [
        {"line": 2, "error": "blocked by guardrails: MongoDB is not allowed"}
    ]
    log = (tmp_path / "data" / "events.jsonl").read_text()
    assert "legacy, ADR-12" in log  # the override is kept like recordDecision's
    skipped = cli("import", str(source), "--data-dir", data, "--json", "--skip-guardrails")
    again = json.loads(skipped.stdout)
    assert (again["recorded"], again["identical"]) == (1, 2)  # the refused line, ungated now
    events = [json.loads(line) for line in (tmp_path / "data" / "events.jsonl").open()]
    assert events[-1]["payload"]["note"]["guardrailsSkipped"]["reason"]


def test_lines_sharing_a_statement_are_all_recorded(tmp_path: Path) -> None:
    """Realistic agent logs: many lines share a statement and differ in context, date, author."""
    from tests.unit.test_bulk_import import STATEMENTS, realistic_lines

    lines, expected = realistic_lines()
    source = tmp_path / "agents.jsonl"
    source.write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    result = cli("import", str(source), "--data-dir", str(data), "--json")
    assert result.returncode == 1, result.stderr  # the two invalid lines
    report = json.loads(result.stdout)
    counts = {k: report[k] for k in ("recorded", "updated", "duplicateId", "identical")}
    assert counts == {
        "recorded": expected["recorded"],
        "updated": expected["updated"],
        "duplicateId": expected["duplicate_id"],
        "identical": expected["identical"],
    }
    assert (report["refused"], report["invalid"], report["notReached"]) == (0, 2, 0)
    assert len(report["lines"]) == report["read"] == len(lines)
    with DecisionStore.open(data, StoreOptions(read_only=True)) as store:
        texts = [a["text"] for _, a in store.graph.nodes(data=True) if a["kind"] == "decision"]
        assert texts.count(STATEMENTS[3]) == 20 + 2
    human = cli("import", str(source), "--data-dir", str(data))
    assert "0 recorded" in human.stdout
    assert "identical: the same record is stored as" in human.stdout
