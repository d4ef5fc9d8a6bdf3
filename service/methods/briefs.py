"""How a briefing (:mod:`service.usecases.briefing`) reads on the wire.

Two forms: inside CSTP's ``preAction`` / ``getSessionContext`` answers (each relevant decision
gains ``why`` and an absolute ``relevance``), and the *brief* an agent reads over MCP: compact
JSON, the conflicts, failures and decisions that matter, one line each, within a character
budget (the least relevant decisions go first, then statements are clipped).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from service.usecases.briefing import Briefing, Item, item_view
from service.usecases.gate import GRAPH_GUARDRAIL
from service.usecases.rules import Verdict

#: What an agent can send to settle a conflict (the MCP tools' argument names).
RESOLVE = (
    "Settle each conflict in the call that records: supersedes [ids] (this replaces them), "
    "compatible_with [ids] (both hold) or override_reason (record anyway)."
)


def compact(value: Any) -> str:
    """JSON without spaces (what an agent pays for)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _section(items: Sequence[Item], width: int) -> list[dict[str, Any]]:
    return [item_view(i, width) for i in items]


def brief_view(
    briefing: Briefing,
    verdict: Verdict | None = None,
    *,
    max_chars: int = 2000,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The agent's form, keyed as CSTP's answer: ``allowed`` (when judged),
    ``relevantDecisions`` (conflicts, then failures, then decisions: id, title, why,
    relevance, a failure's lesson), ``conflicts`` (id, tier, P), ``blocked`` reasons, how to
    ``resolve``, rule ``warnings``, then ``extra`` (CSTP's remaining keys); cut to
    ``max_chars`` of compact JSON (the least relevant decisions go first, then text is
    clipped)."""
    kept = list(briefing.decisions)
    view: dict[str, Any] = {}
    for width in (160, 110, 70):
        kept = list(briefing.decisions)
        view = _assemble(briefing, kept, verdict, width, extra or {})
        while len(compact(view)) > max_chars and kept:
            kept.pop()  # the least relevant decision first
            view = _assemble(briefing, kept, verdict, width, extra or {})
        if len(compact(view)) <= max_chars:
            break
    return view


def _row(item: Item, width: int) -> dict[str, Any]:
    shown = item_view(item, width)
    row: dict[str, Any] = {"id": item.id, "title": shown["text"]}
    row["why"] = f"conflict: {item.why}" if item.role == "conflict" else item.why
    row["relevance"] = item.relevance
    if "lesson" in shown:
        row["lesson"] = shown["lesson"]
    if "because" in shown:
        row["because"] = shown["because"]
    if item.signals:
        row["signals"] = item.signals
    return row


def _assemble(
    briefing: Briefing,
    decisions: list[Item],
    verdict: Verdict | None,
    width: int,
    extra: dict[str, Any],
) -> dict[str, Any]:
    view: dict[str, Any] = {}
    if verdict is not None:
        view["allowed"] = verdict.allowed
    items = [*briefing.conflicts, *briefing.failures, *decisions]
    view["relevantDecisions"] = [_row(i, width) for i in items]
    if briefing.conflicts:
        view["conflicts"] = [
            {"id": i.id, "tier": i.tier, **({"p": i.p} if i.p is not None else {})}
            for i in briefing.conflicts
        ]
    if verdict is not None and verdict.violations:
        view["blocked"] = [v.message[:300] for v in verdict.violations]
    if briefing.conflicts or (verdict is not None and not verdict.allowed):
        view["resolve"] = RESOLVE
    if verdict is not None:
        warnings = [w.message[:200] for w in verdict.warnings if w.guardrail_id != GRAPH_GUARDRAIL]
        if warnings:
            view["warnings"] = warnings
    view.update(extra)
    return view


def markdown_lines(briefing: Briefing, width: int = 160) -> list[tuple[str, list[str]]]:
    """The briefing as Markdown sections: (title, lines)."""

    def line(i: Item) -> str:
        text = item_view(i, width)
        extra = f" Lesson: {text['lesson']}" if "lesson" in text else ""
        extra += f" Because: {text['because']}" if "because" in text else ""
        return f"- `{i.id}` {text['text']} ({i.why}; relevance {i.relevance:.2f}){extra}"

    return [
        ("Conflicts to settle", [line(i) for i in briefing.conflicts]),
        ("Tried before", [line(i) for i in briefing.failures]),
        ("Relevant decisions", [line(i) for i in briefing.decisions]),
    ]
