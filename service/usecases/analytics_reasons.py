"""The rest of CSTP's analytics: ``checkDrift`` (recent against historical calibration),
``getReasonStats`` (which kinds of reasons lead to good outcomes) and ``attributeOutcomes``
(pending decisions whose PR has been stable long enough are marked a success).

They read the same decision snapshot as :mod:`.analytics` (decisions only, dates from
``created_at``, "today" from the store clock). Unlike CSTP, no figure divides by zero: a
``minReviewed`` of 0 or a type without reviewed uses gives a rate of 0.0 with
``reviewedUses: 0`` beside it, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from graph.enums import Category, Outcome, ReasonType, ReviewStatus, Stakes
from graph.errors import DecigraphError
from graph.model import ShortText
from graph.timeutil import format_ts

from .analytics import (
    DateBound,
    Row,
    day_end,
    day_start,
    recommend,
    rounded,
    scan,
    score,
    today,
)
from .context import Decigraph
from .inputs import Input, ReviewDecision
from .writes import review_decision

# -- checkDrift ------------------------------------------------------------------------------


class DriftQuery(Input):
    """CSTP's ``checkDrift`` params: relative thresholds and the fewest reviewed decisions in
    *each* period."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    threshold_brier: float = Field(default=0.20, ge=0.0, le=1_000.0)
    threshold_accuracy: float = Field(default=0.15, ge=0.0, le=1_000.0)
    category: Category | None = None
    project: ShortText | None = None
    min_decisions: int = Field(default=5, ge=0, le=1_000_000)


RECENT_DAYS = 30


def _period(rows: Sequence[Row], window: str) -> dict[str, Any] | None:
    scored = score(rows)
    if scored is None:
        return None
    return {
        "window": window,
        "brierScore": scored["brierScore"],
        "accuracy": scored["accuracy"],
        "decisions": scored["reviewedDecisions"],
    }


def check_drift(app: Decigraph, q: DriftQuery) -> dict[str, Any]:
    """CSTP's ``checkDrift`` result (§4.3.2) over the store's decisions, as of its clock."""
    return drift_report(scan(app), today(app), q)


def drift_report(rows: Sequence[Row], now: datetime, q: DriftQuery) -> dict[str, Any]:
    """The last 30 days of ``rows`` against everything up to 30 days before ``now`` (a decision
    made on the boundary day is in both, as in CSTP). Pure: the ready queue runs it per
    category over one snapshot."""
    boundary = now - timedelta(days=RECENT_DAYS)
    start, recent_end, old_end = day_start(boundary), day_end(now), day_end(boundary)
    scored = [
        r
        for r in rows
        if r.scored
        and (q.category is None or r.category == q.category)
        and (q.project is None or r.project == q.project)
    ]
    recent_rows = [r for r in scored if start <= r.created <= recent_end]
    old_rows = [r for r in scored if r.created <= old_end]
    needed = max(q.min_decisions, 3)
    recent = _period(recent_rows, "30d") if len(recent_rows) >= needed else None
    historical = _period(old_rows, "90d+") if len(old_rows) >= needed else None
    result: dict[str, Any] = {"driftDetected": False, "recent": None, "historical": None}
    if recent is None or historical is None:
        message = (
            f"Not enough reviewed decisions to compare: {len(recent_rows)} in the last "
            f"{RECENT_DAYS} days and {len(old_rows)} before; {needed} needed in each."
        )
        result.update(alerts=[], recommendations=[recommend("insufficient_data", message, "info")])
        return result
    label = (q.category or "All").capitalize()
    alerts = []
    h_brier, r_brier = float(historical["brierScore"]), float(recent["brierScore"])
    if h_brier > 0.001 and r_brier - h_brier >= 0.03:
        change = (r_brier - h_brier) / h_brier
        if change > q.threshold_brier:
            alerts.append(
                {
                    "type": "brier_degradation",
                    "category": q.category,
                    "recentValue": r_brier,
                    "historicalValue": h_brier,
                    "changePct": rounded(change * 100, 1),
                    "severity": "error" if change > 0.5 else "warning",
                    "message": f"{label} decisions: Brier score degraded {change:.0%} "
                    f"({h_brier:.3f} → {r_brier:.3f})",
                }
            )
    h_acc, r_acc = float(historical["accuracy"]), float(recent["accuracy"])
    if h_acc > 0.001 and h_acc - r_acc >= 0.05:
        change = (h_acc - r_acc) / h_acc
        if change > q.threshold_accuracy:
            alerts.append(
                {
                    "type": "accuracy_drop",
                    "category": q.category,
                    "recentValue": r_acc,
                    "historicalValue": h_acc,
                    "changePct": rounded(-change * 100, 1),
                    "severity": "error" if change > 0.25 else "warning",
                    "message": f"{label} decisions: Accuracy dropped {change:.0%} "
                    f"({h_acc:.0%} → {r_acc:.0%})",
                }
            )
    advice = {
        "brier_degradation": recommend(
            "recalibrate",
            "Recent confidence no longer matches outcomes: recalibrate against the last "
            f"{RECENT_DAYS} days.",
            "info",
        ),
        "accuracy_drop": recommend(
            "review_process",
            "Recent decisions succeed less often: review how they are being made.",
            "info",
        ),
    }
    result.update(
        driftDetected=bool(alerts),
        recent=recent,
        historical=historical,
        alerts=alerts,
        recommendations=[advice[str(a["type"])] for a in alerts],
    )
    return result


# -- getReasonStats --------------------------------------------------------------------------


class ReasonFilters(Input):
    """CSTP's ``getReasonStats`` filters; dates compare as ``YYYY-MM-DD`` prefixes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    category: Category | None = None
    stakes: Stakes | None = None
    project: ShortText | None = None
    since: DateBound | None = None
    until: DateBound | None = None


class ReasonStatsQuery(Input):
    filters: ReasonFilters = Field(default_factory=ReasonFilters)
    min_reviewed: int = Field(default=3, ge=0, le=1_000_000)


def _rate(rows: Sequence[Row]) -> float:
    """Success share (partials count half) of reviewed rows; 0.0 for none (never a crash)."""
    reviewed = [r for r in rows if r.reviewed]
    return sum(r.value for r in reviewed) / len(reviewed) if reviewed else 0.0


def _brier(rows: Sequence[Row]) -> float | None:
    scored = [r for r in rows if r.scored]
    if not scored:
        return None
    return sum((float(r.confidence or 0.0) - r.value) ** 2 for r in scored) / len(scored)


def _mean_confidence(rows: Sequence[Row]) -> float | None:
    values = [float(r.confidence) for r in rows if r.confidence is not None]
    return rounded(sum(values) / len(values), 3) if values else None


def _type_entry(kind: str, rows: Sequence[Row], min_reviewed: int) -> dict[str, Any]:
    reviewed = [r for r in rows if r.reviewed]
    strengths = [s for r in rows for t, s in r.reasons if t == kind]
    entry: dict[str, Any] = {
        "reasonType": kind,
        "totalUses": len(rows),
        "reviewedUses": len(reviewed),
        "successCount": sum(1 for r in reviewed if r.outcome == Outcome.SUCCESS.value),
        "partialCount": sum(1 for r in reviewed if r.outcome == Outcome.PARTIAL.value),
        # Abandoned counts as a failure, as its outcome value (0) says.
        "failureCount": sum(1 for r in reviewed if r.value == 0.0),
        "successRate": rounded(_rate(rows), 3),
        "avgConfidence": _mean_confidence(rows),
        "avgStrength": rounded(sum(strengths) / len(strengths), 3) if strengths else None,
    }
    brier = _brier(reviewed)
    if len(reviewed) >= min_reviewed and reviewed and brier is not None:
        entry["brierScore"] = rounded(brier, 4)
    return entry


def _bucket(distinct: int, rows: Sequence[Row]) -> dict[str, Any]:
    reviewed = [r for r in rows if r.reviewed]
    bucket: dict[str, Any] = {
        "distinctReasonTypes": distinct,
        "totalDecisions": len(rows),
        "reviewedDecisions": len(reviewed),
        "successRate": rounded(_rate(rows), 3) if reviewed else None,
        "avgConfidence": _mean_confidence(rows),
    }
    brier = _brier(reviewed)
    if brier is not None:
        bucket["brierScore"] = rounded(brier, 4)
    return bucket


def _reason_advice(
    types: Sequence[dict[str, Any]],
    rows: Sequence[Row],
    avg_types: float,
    min_reviewed: int,
) -> list[dict[str, str]]:
    out = []
    qualified = [t for t in types if t["reviewedUses"] >= max(min_reviewed, 1)]
    if len(qualified) >= 2:
        best, worst = qualified[0], qualified[-1]  # already by success rate, descending
        if best["successRate"] - worst["successRate"] > 0.15:
            message = (
                f"'{best['reasonType']}' reasons succeed {best['successRate']:.0%} of the time, "
                f"'{worst['reasonType']}' only {worst['successRate']:.0%}."
            )
            out.append(recommend("best_reason_type", message, "info"))
    for t in qualified:
        confidence = t["avgConfidence"]
        if confidence is not None and confidence > 0.8 and t["successRate"] < 0.6:
            message = (
                f"Decisions resting on '{t['reasonType']}' average confidence {confidence:.2f} "
                f"but succeed only {t['successRate']:.0%}."
            )
            out.append(recommend("overconfident_type", message, "warning"))
    if rows and avg_types < 1.5:
        message = (
            f"Decisions use {avg_types:.1f} kinds of reason on average: "
            "support them from more than one angle."
        )
        out.append(recommend("low_diversity", message, "warning"))
    single = [r for r in rows if len({t for t, _ in r.reasons}) == 1]
    multi = [r for r in rows if len({t for t, _ in r.reasons}) > 1]
    if sum(r.reviewed for r in single) >= 2 and sum(r.reviewed for r in multi) >= 2:
        one, many = _rate(single), _rate(multi)
        if abs(many - one) > 0.1:
            kind = "diversity_benefit" if many > one else "diversity_no_benefit"
            message = (
                f"Decisions with several kinds of reason succeed {many:.0%} of the time, "
                f"with a single kind {one:.0%}."
            )
            out.append(recommend(kind, message, "info"))
    used = {t["reasonType"] for t in types}
    unused = [t.value for t in ReasonType if t.value not in used]
    if rows and unused:
        out.append(recommend("unused_types", f"Never used: {', '.join(unused)}.", "info"))
    return out


def reason_stats(app: Decigraph, q: ReasonStatsQuery) -> dict[str, Any]:
    """CSTP's ``getReasonStats`` result (§4.3.3) over the decisions that have reasons.

    Each reason type counts once per decision; ``avgStrength`` averages every reason of the
    type (strength 0.8 when none was given). Types with at least ``minReviewed`` reviewed uses
    come first, then by success rate (descending), then by name. ``successRate`` is 0.0 for a
    type without reviewed uses (``reviewedUses`` says so) rather than CSTP's division error.
    """
    f = q.filters
    since = None if f.since is None else f.since[:10]
    until = None if f.until is None else f.until[:10]
    rows = [
        r
        for r in scan(app)
        if r.reasons
        and (f.category is None or r.category == f.category)
        and (f.stakes is None or r.stakes == f.stakes)
        and (f.project is None or r.project == f.project)
        and (since is None or format_ts(r.created)[:10] >= since)
        and (until is None or format_ts(r.created)[:10] <= until)
    ]
    by_type: dict[str, list[Row]] = {}
    for r in rows:
        for kind in sorted({t for t, _ in r.reasons}):
            by_type.setdefault(kind, []).append(r)
    types = sorted(
        (_type_entry(kind, used, q.min_reviewed) for kind, used in by_type.items()),
        key=lambda t: (t["reviewedUses"] < q.min_reviewed, -t["successRate"], t["reasonType"]),
    )
    by_distinct: dict[int, list[Row]] = {}
    for r in rows:
        by_distinct.setdefault(len({t for t, _ in r.reasons}), []).append(r)
    avg_types = sum(len({t for t, _ in r.reasons}) for r in rows) / len(rows) if rows else 0.0
    avg_reasons = sum(len(r.reasons) for r in rows) / len(rows) if rows else 0.0
    return {
        "byReasonType": types,
        "diversity": {
            "avgTypesPerDecision": rounded(avg_types, 2),
            "avgReasonsPerDecision": rounded(avg_reasons, 2),
            "diversityBuckets": [_bucket(n, by_distinct[n]) for n in sorted(by_distinct)],
        },
        "recommendations": _reason_advice(types, rows, avg_types, q.min_reviewed),
        "totalDecisions": len(rows),
        "reviewedDecisions": sum(1 for r in rows if r.reviewed),
        "queryTime": format_ts(today(app)),
    }


# -- attributeOutcomes -----------------------------------------------------------------------


class AttributeOutcomes(Input):
    """CSTP's ``attributeOutcomes``: pending decisions of ``project`` with a PR at least
    ``stability_days`` old are reviewed as a success."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    project: ShortText = Field(min_length=1)
    since: DateBound | None = None
    stability_days: int = Field(default=14, ge=0, le=36_500)
    dry_run: bool = False


@dataclass(frozen=True)
class Attribution:
    id: str
    reason: str
    updated: bool
    error: str | None = None


def attribute_outcomes(app: Decigraph, cmd: AttributeOutcomes, actor: str) -> dict[str, Any]:
    """CSTP's ``attributeOutcomes`` result (§4.3.4). Each stable decision is reviewed through
    :func:`review_decision` (an event in the log, by ``actor``, notes
    ``"PR #<n> stable for <d> days"``); with ``dry_run`` nothing is written and ``updated``
    is true, as in CSTP. A review refused meanwhile (say the decision was reviewed by someone
    else a moment before) gives ``updated: false`` and its ``error``, not a failed call.

    ``path`` is always ``None``: decigraph keeps no YAML files; ``id`` names the decision.
    """
    now = today(app)
    since = None if cmd.since is None else cmd.since[:10]
    pending = [
        r
        for r in scan(app)
        if r.status == ReviewStatus.PENDING.value
        and r.active  # a superseded or rejected decision has no outcome to attribute
        and r.project == cmd.project
        and (since is None or format_ts(r.created)[:10] >= since)
    ]
    skipped, done = 0, []
    for r in pending:
        if not r.pr:
            skipped += 1
            continue
        age = (now - r.created).days
        if age < cmd.stability_days:
            continue
        reason = f"PR #{r.pr.lstrip('#')} stable for {age} days"
        if cmd.dry_run:
            done.append(Attribution(r.id, reason, True))
            continue
        try:
            # Reviewed only as read: a decision changed meanwhile is reported, not reviewed twice.
            review = ReviewDecision(
                id=r.id, outcome=Outcome.SUCCESS, notes=reason, expected_version=r.version
            )
            review_decision(app, review, actor)
        except DecigraphError as exc:
            done.append(Attribution(r.id, reason, False, str(exc)))
        else:
            done.append(Attribution(r.id, reason, True))
    decisions = []
    for a in done:
        entry: dict[str, Any] = {
            "id": a.id,
            "outcome": Outcome.SUCCESS.value,
            "reason": a.reason,
            "path": None,
            "updated": a.updated,
        }
        if a.error is not None:
            entry["error"] = a.error
        decisions.append(entry)
    return {
        "processed": len(pending),
        "attributed": {"stable": len(done), "skipped": skipped},
        "decisions": decisions,
        "queryTime": format_ts(now),
    }
