"""JSONL import lines: each one object, the params of ``recordDecision`` (it has ``decision``)
or of ``remember`` (it has ``text``), validated by the same params models the methods use."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson
import pydantic

from service.methods.decisions import RecordParams
from service.methods.memory import RememberParams
from service.usecases.bulk import ImportReport, Item


class LineError(Exception):
    pass


def parse_line(line: str) -> Item:
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise LineError(f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise LineError("must be a JSON object")
    try:
        if "decision" in raw:
            return RecordParams.model_validate(raw)
        if "text" in raw:
            return RememberParams.model_validate(raw)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LineError(f"{where}: {first['msg']}") from None
    raise LineError("needs `decision` (a decision) or `text` (a memory item)")


def parse_lines(lines: Iterable[str]) -> tuple[ImportReport, list[tuple[int, Item]]]:
    """Every non-blank line validated: the report (lines read, errors) and the good items."""
    report = ImportReport()
    items: list[tuple[int, Item]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        report.read += 1
        try:
            items.append((number, parse_line(line)))
        except LineError as exc:
            report.errors.append({"line": number, "error": str(exc)})
    return report, items


def stderr_progress(report: ImportReport) -> None:
    print(
        f"\rimported {report.created}, skipped {report.skipped}, errors {len(report.errors)}"
        f" ({report.read} lines read)",
        end="",
        file=sys.stderr,
        flush=True,
    )


def read_lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as handle:
        yield from handle
