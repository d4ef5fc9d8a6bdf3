"""``decigraph import``: JSONL in, one atomic write per line, embeddings in batches.

Each line is one object: the params of ``recordDecision`` (it has ``decision``) or of
``remember`` (it has ``text``). Lines are idempotent: an item whose external id, or (without
one) whose content, is already stored is skipped. A bad line is reported with its number and
either skipped or, with ``abort``, stops the import: every line is parsed and validated before
anything is written, so a malformed line aborts with nothing written, and each line is written
whole or not at all.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
import pydantic

from graph.drafts import DecisionDraft, MemoryDraft
from graph.errors import DecigraphError
from retrieval.text import compose_embedding_text
from retrieval.writes import record, remember

from .application import Decigraph
from .methods import RecordParams, RememberParams

BATCH = 64


@dataclass
class ImportReport:
    read: int = 0
    created: int = 0
    skipped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    aborted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "created": self.created,
            "skipped": self.skipped,
            "errors": self.errors,
            "aborted": self.aborted,
        }


class LineError(Exception):
    pass


def _parse(line: str) -> RecordParams | RememberParams:
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


def _decision_exists(app: Decigraph, p: RecordParams, texts: set[tuple[str, str | None]]) -> bool:
    if p.external_id is not None:
        return app.store.find_external(p.external_id) is not None
    return (p.decision, p.project) in texts


def import_lines(
    app: Decigraph,
    lines: Iterable[str],
    actor: str,
    on_error: Literal["skip", "abort"] = "skip",
    progress: Callable[[ImportReport], None] | None = None,
) -> ImportReport:
    report = ImportReport()
    G = app.store.graph
    texts = {
        (str(a["text"]), a.get("project"))
        for _, a in G.nodes(data=True)
        if a.get("kind", "decision") == "decision"
    }
    pending: list[tuple[int, RecordParams | RememberParams]] = []

    def flush() -> None:
        items = [p for _, p in pending]
        # Exactly the text the write path embeds (a decision's statement with its context and
        # pattern), so no line is embedded a second time, one at a time, inside record().
        texts_to_embed = [
            compose_embedding_text(p.decision, p.context, p.pattern)
            if isinstance(p, RecordParams)
            else p.text
            for p in items
        ]
        vectors = app.index.embed(texts_to_embed) if texts_to_embed else []
        for (number, params), vector in zip(pending, vectors, strict=True):
            try:
                if isinstance(params, RecordParams):
                    if _decision_exists(app, params, texts):
                        report.skipped += 1
                        continue
                    fields = params.model_dump(
                        exclude={"decision", "confirm", "contradicts", "override"},
                        exclude_none=True,
                    )
                    draft = DecisionDraft(text=params.decision, **fields)
                    record(app.index, draft, actor, app.auto_edges, vector=vector)
                    texts.add((params.decision, params.project))
                    report.created += 1
                else:
                    result = remember(
                        app.index,
                        MemoryDraft(**params.model_dump(exclude_none=True)),
                        actor,
                        app.auto_edges,
                        vector,
                    )
                    report.created += result.created
                    report.skipped += not result.created
            except (DecigraphError, pydantic.ValidationError) as exc:
                report.errors.append({"line": number, "error": str(exc)})
                if on_error == "abort":
                    report.aborted = True
                    return
        pending.clear()

    # Parse everything first: with "abort", a bad line anywhere means nothing is written.
    parsed: list[tuple[int, RecordParams | RememberParams]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        report.read += 1
        try:
            parsed.append((number, _parse(line)))
        except LineError as exc:
            report.errors.append({"line": number, "error": str(exc)})
    if report.errors and on_error == "abort":
        report.aborted = True
        return report
    for start in range(0, len(parsed), BATCH):
        pending.extend(parsed[start : start + BATCH])
        flush()
        if report.aborted:
            break
        if progress is not None:
            progress(report)
    app.index.flush()
    return report


def stderr_progress(report: ImportReport) -> None:
    print(
        f"\rimported {report.created}, skipped {report.skipped}, errors {len(report.errors)}"
        f" ({report.read} lines read)",
        end="",
        file=sys.stderr,
        flush=True,
    )


def read_lines(path: Path) -> Iterable[str]:
    with path.open(encoding="utf-8") as handle:
        yield from handle
