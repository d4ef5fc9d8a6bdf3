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
    try:  # validated as JSON, strictly, like a method's params (service.rpc.protocol)
        if "decision" in raw:
            return RecordParams.model_validate_json(line, strict=True)
        if "text" in raw:
            return RememberParams.model_validate_json(line, strict=True)
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
            report.note(number, "invalid", str(exc))
    return report, items


def stderr_progress(report: ImportReport) -> None:
    print(
        f"\rimported {report.recorded}, not written {report.accounted - report.recorded}"
        f" ({report.read} lines read)",
        end="",
        file=sys.stderr,
        flush=True,
    )


SHOWN = 50


def summary(report: ImportReport) -> str:
    """The human report: a count per outcome, then each line not recorded and why."""
    counts = report.counts
    head = (
        f"read {report.read} lines: {counts['recorded']} recorded, {counts['updated']} updated, "
        f"{counts['duplicate_id']} duplicate id, {counts['identical']} identical, "
        f"{counts['refused']} refused, {counts['invalid']} bad"
    )
    if counts["not_reached"]:
        head += f", {counts['not_reached']} not reached"
    if report.aborted:
        head += f" (aborted: {counts['recorded'] or 'nothing'} written)"
    failed = ("refused", "invalid")  # first what went wrong, then what was already stored
    shown = sorted(
        (e for e in report.lines if e["outcome"] != "recorded"),
        key=lambda e: (e["outcome"] not in failed, int(e["line"])),
    )
    out = [head]
    for entry in shown[:SHOWN]:
        reason = entry.get("reason")
        out.append(
            f"  line {entry['line']}: {entry['outcome']}" + (f": {reason}" if reason else "")
        )
    if len(shown) > SHOWN:
        out.append(f"  ... and {len(shown) - SHOWN} more not recorded (--json lists every line)")
    return "\n".join(out)


def read_lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as handle:
        yield from handle
