"""Memory compaction methods (CSTP's): ``compact``, ``getCompacted``, ``setPreserve`` and
``getWisdom``, on decigraph's salience (:mod:`service.usecases.compaction` has the rule).

Only ``setPreserve`` writes (one logged ``update`` event); the others read. Results keep CSTP's
camelCase keys; decigraph adds ``structural`` and ``salienceThreshold`` to ``compact``'s answer
and ``structural: true`` to a decision kept whole because others rely on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graph.timeutil import format_ts
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases import compaction
from service.usecases.compaction import (
    OUTCOME_VALUE,
    CompactedQuery,
    CompactQuery,
    Leveled,
    SetPreserve,
    WisdomQuery,
)

from .params import Params, wire

#: ``oneLine``: CSTP cuts a digest's text at 80 characters (77 and an ellipsis).
ONE_LINE = 80
SUMMARY_KEYS = ("outcome", "confidence", "pattern", "stakes")
FULL_KEYS = ("context", "reasons", "tags", "bridge")


class CompactParams(Params, CompactQuery):
    pass


class CompactedParams(Params, CompactedQuery):
    pass


class PreserveParams(Params, SetPreserve):
    # CSTP reads decisionId first; error messages name the field so.
    model_config = wire(id=("decisionId", "decision_id", "id"))


class WisdomParams(Params, WisdomQuery):
    pass


def _one_line(text: str) -> str:
    return text if len(text) <= ONE_LINE else text[: ONE_LINE - 3] + "..."


def compacted_view(item: Leveled, label: str | None = None) -> dict[str, Any]:
    """A decision shaped by its level, as CSTP's ``CompactedDecision`` (§4.6.2).

    Every level has ``id, level, decision, category, date`` (``YYYY-MM-DD``) and
    ``preserved: true`` when preserved; a digest adds ``oneLine``; a summary adds ``outcome``,
    ``confidence``, ``actualConfidence``, ``pattern`` and ``stakes`` when known; full adds
    ``context``, ``reasons``, ``tags``, ``bridge`` and ``deliberation``. A wisdom-level decision
    (only returned when asked for by level) comes in the full shape, labelled ``full``.
    """
    attrs = item.attrs
    level = label or ("full" if item.level == "wisdom" else item.level)
    text = str(attrs.get("text") or "Untitled")
    view: dict[str, Any] = {
        "id": item.id,
        "level": level,
        "decision": text,
        "category": attrs.get("category"),
        "date": format_ts(item.date)[:10] if item.date else None,
    }
    if attrs.get("preserve"):
        view["preserved"] = True
    if item.why == "structural":
        view["structural"] = True
    if level == "digest":
        view["oneLine"] = _one_line(text)
        return view
    if level not in ("summary", "full"):
        return view
    for key in SUMMARY_KEYS:
        if attrs.get(key) is not None:
            view[key] = attrs[key]
    outcome = str(attrs.get("outcome"))
    if outcome in OUTCOME_VALUE:
        view["actualConfidence"] = OUTCOME_VALUE[outcome]
    if level == "full":
        for key in FULL_KEYS:
            if attrs.get(key):  # an empty list of reasons or tags is "not known"
                view[key] = attrs[key]
        deliberation = (attrs.get("extras") or {}).get("deliberation")
        if deliberation is not None:
            view["deliberation"] = deliberation
    return view


def register_compaction(registry: Registry, app: usecases.Decigraph) -> None:
    """Register ``cstp.compact``, ``cstp.getCompacted``, ``cstp.setPreserve`` and
    ``cstp.getWisdom`` (CSTP's registration order)."""

    def compact(p: CompactParams, ctx: CallContext) -> Mapping[str, Any]:
        report = compaction.compact(app, p)
        return {
            "compacted": report.compacted,
            "preserved": report.preserved,
            "levels": report.levels,
            "dryRun": report.dry_run,
            "structural": report.structural,
            "salienceThreshold": report.threshold,
        }

    def get_compacted(p: CompactedParams, ctx: CallContext) -> Mapping[str, Any]:
        page = compaction.compacted(app, p)
        label = "full" if page.forced == "wisdom" else None
        decisions = [compacted_view(item, label) for item in page.decisions]
        result: dict[str, Any] = {
            "decisions": decisions,
            "total": len(decisions),
            "levels": page.levels,
        }
        if page.ignored_level is not None:
            result["warnings"] = [
                f"level: {page.ignored_level!r} is not one of full, summary, digest, wisdom; "
                "ignored (no level filter)"
            ]
        return result

    def set_preserve(p: PreserveParams, ctx: CallContext) -> Mapping[str, Any]:
        made = compaction.set_preserve(app, p, ctx.agent)
        if not made.found:
            return {
                "success": False,
                "decisionId": made.id,
                "preserve": made.preserve,
                "error": f"Decision not found: {made.id}",
            }
        return {
            "success": True,
            "decisionId": made.id,
            "preserve": made.preserve,
            "changed": made.changed,
            "version": made.version,
        }

    def get_wisdom(p: WisdomParams, ctx: CallContext) -> Mapping[str, Any]:
        entries = compaction.wisdom(app, p.category, p.min_decisions)
        return {
            "wisdom": entries,
            "totalDecisions": sum(int(e["decisions"]) for e in entries),
            "categoriesAnalyzed": len(entries),
        }

    registry.add("cstp.compact", CompactParams, compact)
    registry.add("cstp.getCompacted", CompactedParams, get_compacted)
    registry.add("cstp.setPreserve", PreserveParams, set_preserve, writes=True)
    registry.add("cstp.getWisdom", WisdomParams, get_wisdom)
