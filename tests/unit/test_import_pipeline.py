"""Bulk import embeds the next batch while the current one is written, and that changes nothing:
the same outcomes, the same events, every text embedded once, no worker left behind."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from service.cli.jsonl import parse_lines
from service.usecases import Decigraph, import_items
from service.usecases.bulk import BATCH, ImportReport
from service.usecases.prefetch import PIPELINE_ENV
from service.usecases.rules import load_rules
from tests.support.fakes import fake_app
from tests.unit.test_bulk_import import realistic_lines


def run(app: Decigraph, lines: list[str], **options: Any) -> ImportReport:
    report, items = parse_lines(lines)
    return import_items(app, items, "import", report, **options)


def log_of(app: Decigraph) -> list[tuple[Any, ...]]:
    events = app.store.read_events(1, app.store.seq)
    return [(e.seq, e.ts, e.actor, e.op, e.payload, e.hash) for e in events]


def test_with_or_without_the_pipeline_the_log_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines, expected = realistic_lines()
    outcomes = []
    logs = []
    for mode in ("0", "1"):
        monkeypatch.setenv(PIPELINE_ENV, mode)
        with fake_app(tmp_path / f"data{mode}", 7) as app:
            report = run(app, lines, skip_guardrails="test")
            outcomes.append(report.to_dict())
            logs.append(log_of(app))
    assert outcomes[0] == outcomes[1]
    assert logs[0] == logs[1]
    assert len(logs[1]) == expected["recorded"] + expected["updated"]


def _texts_embedded(app: Decigraph) -> tuple[list[tuple[str, list[str]]], Any]:
    calls: list[tuple[str, list[str]]] = []
    embed = app.index.embed

    def recording(texts: Sequence[str]) -> Any:
        calls.append((threading.current_thread().name, list(texts)))
        return embed(texts)

    return calls, recording


def test_the_next_batch_is_embedded_while_this_one_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PIPELINE_ENV, "1")
    lines = [f'{{"text": "note number {n} about the queue", "source": "chat"}}' for n in range(200)]
    with fake_app(tmp_path / "data", 3) as app:
        first_write = threading.Event()
        app.store.listeners.append(lambda event: first_write.set())
        calls, recording = _texts_embedded(app)

        def embed(texts: Sequence[str]) -> Any:
            # batch 2 and later: only once batch 1 is being written
            if calls and not first_write.wait(timeout=20):
                raise AssertionError("the next batch was not embedded during the writes")
            return recording(texts)

        monkeypatch.setattr(app.index, "embed", embed)
        report = run(app, lines)
    assert report.recorded == 200
    assert all(name.startswith("embed-ahead") for name, _ in calls)
    assert [len(texts) for _, texts in calls] == [BATCH, BATCH, BATCH, 200 - 3 * BATCH]
    flat = Counter(t for _, texts in calls for t in texts)
    assert len(flat) == 200
    assert set(flat.values()) == {1}  # nothing embedded twice


def test_an_abort_with_a_batch_in_flight_reports_every_line_and_leaves_no_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PIPELINE_ENV, "1")
    lines = [f'{{"decision": "Adopt tool number {n} for builds"}}' for n in range(3 * BATCH)]
    lines[5] = '{"decision": "Keep the catalogue in MongoDB"}'  # refused by the rule below
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "- id: no-mongodb\n"
        "  conditions: [{field: decision, op: matches, value: '(?i)mongodb'}]\n"
        "  action: block\n"
        "  message: MongoDB is not allowed\n"
    )
    with fake_app(tmp_path / "data", 4) as app:
        app.rules = load_rules([rules])
        report = run(app, lines, on_error="abort")
        assert app.store.seq == 5
    assert report.aborted
    outcomes = Counter(e["outcome"] for e in report.to_dict()["lines"])
    assert outcomes == Counter({"recorded": 5, "refused": 1, "not_reached": 3 * BATCH - 6})
    assert not [t for t in threading.enumerate() if t.name.startswith("embed-ahead")]


def test_the_gil_switch_interval_is_short_while_a_pipeline_runs_and_restored_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from service.usecases.prefetch import PIPELINE_SWITCH_INTERVAL, short_switches

    before = sys.getswitchinterval()
    seen: list[float] = []
    lines = [f'{{"text": "note {n} about the release train", "source": "chat"}}' for n in range(80)]
    for mode, expected in (("1", PIPELINE_SWITCH_INTERVAL), ("0", before)):
        monkeypatch.setenv(PIPELINE_ENV, mode)
        with fake_app(tmp_path / f"data{mode}", 3) as app:
            embed = app.index.embed

            def watching(texts: Sequence[str], embed: Any = embed) -> Any:
                seen.append(sys.getswitchinterval())
                return embed(texts)

            monkeypatch.setattr(app.index, "embed", watching)
            assert app.settings.import_pipeline is (mode == "1")
            assert run(app, lines).recorded == 80
        assert set(seen) == {expected}
        assert sys.getswitchinterval() == before
        seen.clear()
    # Nested and overlapping uses restore the first one's interval only when the last ends.
    with short_switches():
        with short_switches(0.001):
            assert sys.getswitchinterval() == PIPELINE_SWITCH_INTERVAL
        assert sys.getswitchinterval() == PIPELINE_SWITCH_INTERVAL
    assert sys.getswitchinterval() == before
