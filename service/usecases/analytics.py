"""Calibration analytics, as CSTP computes them: ``getCalibration``, ``checkDrift`` and the
per-category figures the session context and the ready queue use.

The population is the decisions in the graph (memory items are not decisions; forgotten
decisions are gone from the graph). "Reviewed" means ``status: reviewed`` with an outcome; an
outcome reads as a number (success 1, partial 0.5, failure and abandoned 0). Dates are the
decisions' ``created_at`` (UTC) and "today" is the store's clock, so a replayed store gives the
same answers.

CSTP stores a confidence of 0.5 when none is given; decigraph keeps "no confidence" as
``None``. A decision without a confidence has nothing to calibrate: it counts in
``totalDecisions`` but in no confidence-based figure (Brier, gap, buckets, confidence
statistics), and the reviewed ones left out that way are reported as ``unscoredDecisions``.

Results are the wire shapes CSTP documents (camelCase dicts); the transport adds the
snake_case spellings its clients read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, AliasChoices, ConfigDict, Field
from pydantic.alias_generators import to_camel

from graph.enums import Category, NodeKind, ReviewStatus, Stakes
from graph.lifecycle import is_active
from graph.model import ShortText
from graph.timeutil import format_ts, parse_ts, to_utc

from .compaction import OUTCOME_VALUE
from .context import Decigraph
from .inputs import Input


def _check_bound(value: str) -> str:
    try:
        parse_ts(value)
    except (ValueError, OverflowError):
        raise ValueError(f"not an ISO-8601 date or datetime: {value[:40]!r}") from None
    return value


#: A date (``2026-01-31``) or a datetime, kept as sent: a bare date as an upper bound means
#: the whole day (CSTP appends ``T23:59:59``).
DateBound = Annotated[str, Field(max_length=40), AfterValidator(_check_bound)]
#: The fewest reviewed decisions any figure is computed from (CSTP's floor).
MIN_SCORED = 3
#: CSTP's fixed windows (days back from today).
WINDOWS = {"30d": 30, "60d": 60, "90d": 90}


@dataclass(frozen=True)
class Row:
    """One decision as the analytics read it (a snapshot taken under the store lock)."""

    id: str
    text: str
    category: str | None
    stakes: str | None
    confidence: float | None
    status: str
    outcome: str | None
    created: datetime
    agent: str | None
    project: str | None
    feature: str | None
    pr: str | None
    pattern: str | None
    review_by: datetime | None
    reasons: tuple[tuple[str, float], ...]
    active: bool
    #: The version read, so a write based on this snapshot fails if the decision changed since.
    version: int = 1

    @property
    def reviewed(self) -> bool:
        return self.status == ReviewStatus.REVIEWED.value and self.outcome in OUTCOME_VALUE

    @property
    def value(self) -> float:
        """The outcome as a number (only for reviewed rows)."""
        return OUTCOME_VALUE[str(self.outcome)]

    @property
    def scored(self) -> bool:
        """Reviewed and with a confidence: what calibration can score."""
        return self.reviewed and self.confidence is not None


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def scan(app: Decigraph) -> list[Row]:
    """Every decision in the graph, oldest first (ties by id); computed once per log position
    (a shared list: do not mutate it)."""
    return app.at_seq("analytics.scan", lambda: _scan(app))


def _scan(app: Decigraph) -> list[Row]:
    G = app.store.graph
    rows = []
    with app.store.lock:
        for node_id, attrs in G.nodes(data=True):
            if attrs.get("kind", NodeKind.DECISION.value) != NodeKind.DECISION.value:
                continue
            confidence = attrs.get("confidence")
            due = attrs.get("review_by")
            reasons = tuple(
                (str(r.get("type")), float(r.get("strength", 0.8)))
                for r in attrs.get("reasons", ())
            )
            rows.append(
                Row(
                    id=node_id,
                    text=str(attrs.get("text", "")),
                    category=_opt_str(attrs.get("category")),
                    stakes=_opt_str(attrs.get("stakes")),
                    confidence=None if confidence is None else float(confidence),
                    status=str(attrs.get("status", ReviewStatus.PENDING.value)),
                    outcome=_opt_str(attrs.get("outcome")),
                    created=parse_ts(str(attrs["created_at"])),
                    agent=_opt_str(attrs.get("recorded_by")),
                    project=_opt_str(attrs.get("project")),
                    feature=_opt_str(attrs.get("feature")),
                    pr=_opt_str(attrs.get("pr")),
                    pattern=_opt_str(attrs.get("pattern")),
                    review_by=None if due is None else parse_ts(str(due)),
                    reasons=reasons,
                    active=is_active(G, node_id),
                    version=int(attrs.get("version", 1)),
                )
            )
    rows.sort(key=lambda r: (r.created, r.id))
    return rows


def day_start(moment: datetime) -> datetime:
    return datetime.combine(to_utc(moment).date(), time.min, tzinfo=UTC)


def day_end(moment: datetime) -> datetime:
    return datetime.combine(to_utc(moment).date(), time.max, tzinfo=UTC)


def lower_bound(text: str | None) -> datetime | None:
    return None if text is None else parse_ts(text)


def upper_bound(text: str | None) -> datetime | None:
    """CSTP: an upper bound without a time (``2026-01-31``) includes that whole day."""
    if text is None:
        return None
    moment = parse_ts(text)
    return day_end(moment) if "T" not in text.upper() else moment


def today(app: Decigraph) -> datetime:
    return to_utc(app.store.now())


def rounded(value: float, places: int) -> float:
    return round(value + 0.0, places)  # + 0.0: never a -0.0 on the wire


# -- figures ---------------------------------------------------------------------------------


def interpretation(gap: float) -> str:
    """CSTP's reading of accuracy minus mean confidence."""
    if abs(gap) < 0.05:
        return "well_calibrated"
    if gap < -0.10:
        return "overconfident"
    if gap < 0:
        return "slightly_overconfident"
    if gap > 0.10:
        return "underconfident"
    return "slightly_underconfident"


def score(rows: Sequence[Row], total: int | None = None) -> dict[str, Any] | None:
    """CSTP's calibration object (§3.5) over the scored rows, ``None`` below three of them.

    ``total`` is what ``totalDecisions`` says (every matching decision); by default the
    number of scored rows, as in ``calibrationByCategory``.
    """
    scored = [r for r in rows if r.scored]
    if len(scored) < MIN_SCORED:
        return None
    n = len(scored)
    confidences = [float(r.confidence or 0.0) for r in scored]
    brier = sum((c - r.value) ** 2 for c, r in zip(confidences, scored, strict=True)) / n
    accuracy = sum(r.value for r in scored) / n
    gap = rounded(accuracy - sum(confidences) / n, 3)
    return {
        "brierScore": rounded(brier, 3),
        "accuracy": rounded(accuracy, 3),
        "totalDecisions": n if total is None else total,
        "reviewedDecisions": n,
        "calibrationGap": gap,
        "interpretation": interpretation(gap),
    }


#: (name, low, high, expected success rate), in CSTP's order.
BUCKETS: tuple[tuple[str, float, float, float], ...] = (
    ("0.9-1.0", 0.9, 1.01, 0.95),
    ("0.7-0.9", 0.7, 0.9, 0.80),
    ("0.5-0.7", 0.5, 0.7, 0.60),
    ("0.0-0.5", 0.0, 0.5, 0.25),
)
#: The fine-grained counts of ``confidenceStats`` (the first also counts values below 0.5).
FINE_BUCKETS: tuple[tuple[str, float], ...] = (
    ("0.5-0.6", 0.6),
    ("0.6-0.7", 0.7),
    ("0.7-0.8", 0.8),
    ("0.8-0.9", 0.9),
    ("0.9-1.0", math.inf),
)


def buckets(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """CSTP's confidence buckets holding at least three scored decisions."""
    out = []
    for name, low, high, expected in BUCKETS:
        inside = [r for r in rows if r.scored and low <= float(r.confidence or 0.0) < high]
        if len(inside) < MIN_SCORED:
            continue
        rate = rounded(sum(r.value for r in inside) / len(inside), 2)
        gap = rounded(rate - expected, 2)
        verdict = (
            "well_calibrated"
            if abs(gap) < 0.10
            else "overconfident"
            if gap < 0
            else ("underconfident")
        )
        out.append(
            {
                "bucket": name,
                "decisions": len(inside),
                "successRate": rate,
                "expectedRate": expected,
                "gap": gap,
                "interpretation": verdict,
            }
        )
    return out


def confidence_stats(rows: Sequence[Row]) -> dict[str, Any] | None:
    """Mean, spread and fine buckets of every stated confidence (reviewed or not)."""
    values = [float(r.confidence) for r in rows if r.confidence is not None]
    if not values:
        return None
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    counts = dict.fromkeys((name for name, _ in FINE_BUCKETS), 0)
    for v in values:
        counts[next(name for name, high in FINE_BUCKETS if v < high)] += 1
    return {
        "mean": rounded(mean, 3),
        "stdDev": rounded(std, 3),
        "min": rounded(min(values), 2),
        "max": rounded(max(values), 2),
        "count": len(values),
        "bucketCounts": counts,
    }


def recommend(kind: str, message: str, severity: str) -> dict[str, str]:
    return {"type": kind, "message": message, "severity": severity}


def recommendations(
    overall: Mapping[str, Any] | None,
    found: Sequence[Mapping[str, Any]],
    stats: Mapping[str, Any] | None,
    reviewed: int,
    needed: int,
) -> list[dict[str, str]]:
    """CSTP's calibration advice, in its order (see the reference, §4.3.1)."""
    out = []
    if overall is None:
        out.append(
            recommend(
                "insufficient_data",
                f"Only {reviewed} reviewed decisions with a confidence; "
                f"at least {needed} are needed for calibration.",
                "info",
            )
        )
    else:
        gap, verdict = float(overall["calibrationGap"]), str(overall["interpretation"])
        accuracy = float(overall["accuracy"])
        if verdict in ("overconfident", "slightly_overconfident", "underconfident"):
            way = "lowering" if gap < 0 else "raising"
            out.append(
                recommend(
                    "confidence_adjustment",
                    f"Decisions succeed {accuracy:.0%} of the time at a mean confidence "
                    f"{abs(gap):.0%} {'higher' if gap < 0 else 'lower'}: consider {way} "
                    f"confidence by about {abs(gap):.2f}.",
                    "warning" if verdict == "overconfident" else "info",
                )
            )
        elif verdict == "well_calibrated":
            out.append(recommend("strength", "Confidence matches outcomes well.", "info"))
        brier = float(overall["brierScore"])
        if brier < 0.10:
            out.append(recommend("brier_score", f"Brier score {brier:.3f}: excellent.", "info"))
        elif brier > 0.25:
            message = f"Brier score {brier:.3f} is worse than always answering 0.5."
            out.append(recommend("brier_score", message, "warning"))
    good = [b["bucket"] for b in found if b["interpretation"] == "well_calibrated"]
    if good and len(good) < len(found):
        out.append(
            recommend("strength", f"Well calibrated at {', '.join(good)} confidence.", "info")
        )
    for b in found:
        if b["interpretation"] == "overconfident" and float(b["gap"]) < -0.15:
            message = (
                f"At {b['bucket']} confidence only {float(b['successRate']):.0%} succeed "
                f"(expected {float(b['expectedRate']):.0%})."
            )
            out.append(recommend("bucket_warning", message, "warning"))
    if stats is not None and int(stats["count"]) >= 10:
        mean, counts = float(stats["mean"]), stats["bucketCounts"]
        if float(stats["stdDev"]) < 0.05 and max(counts.values()) > 0.7 * int(stats["count"]):
            message = "Confidence barely varies: say how sure you are of each decision."
            out.append(recommend("low_variance", message, "info"))
        if mean > 0.85 and float(stats["min"]) > 0.75:
            message = f"Confidence is always high (mean {mean:.2f}): keep it for sure things."
            out.append(recommend("overconfident_habit", message, "warning"))
        if mean < 0.65 and float(stats["max"]) < 0.75:
            message = f"Confidence is always low (mean {mean:.2f}): trust your strong calls."
            out.append(recommend("underconfident_habit", message, "info"))
    return out


# -- getCalibration --------------------------------------------------------------------------


class CalibrationFilters(Input):
    """Which decisions to calibrate (CSTP's ``filters``, camelCase or snake_case);
    ``dateAfter``/``dateBefore`` are accepted for ``since``/``until`` as ``queryDecisions``
    spells them (CSTP parses those there and ignores them; here they apply)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    agent: ShortText | None = None
    category: Category | None = None
    stakes: Stakes | None = None
    project: ShortText | None = None
    feature: ShortText | None = None
    since: DateBound | None = Field(
        default=None, validation_alias=AliasChoices("since", "dateAfter", "date_after")
    )
    until: DateBound | None = Field(
        default=None, validation_alias=AliasChoices("until", "dateBefore", "date_before")
    )
    #: 0 is harmless: three scored decisions are always needed, as in CSTP.
    min_decisions: int = Field(default=5, ge=0, le=1_000_000)


class CalibrationQuery(Input):
    filters: CalibrationFilters = Field(default_factory=CalibrationFilters)
    #: ``30d``, ``60d`` or ``90d`` (a date range ending today); anything else is echoed only.
    window: ShortText | None = None
    #: Parsed and ignored, as CSTP does (the per-category figures are in ``by_category``).
    group_by: ShortText | None = None


def _admits(f: CalibrationFilters, since: datetime | None, until: datetime | None, r: Row) -> bool:
    return (
        (f.agent is None or r.agent == f.agent)
        and (f.category is None or r.category == f.category)
        and (f.stakes is None or r.stakes == f.stakes)
        and (f.project is None or r.project == f.project)
        and (f.feature is None or r.feature == f.feature)
        and (since is None or r.created >= since)
        and (until is None or r.created <= until)
    )


def by_category(rows: Iterable[Row]) -> dict[str, dict[str, Any]]:
    """Category -> calibration object, for categories with at least three scored decisions
    (``totalDecisions`` is the category's scored count, as CSTP's session context says)."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        if r.category is not None and r.scored:
            groups.setdefault(r.category, []).append(r)
    out = {}
    for name in sorted(groups):
        scored = score(groups[name])
        if scored is not None:
            out[name] = scored
    return out


def calibration(app: Decigraph, q: CalibrationQuery) -> dict[str, Any]:
    """CSTP's ``getCalibration`` result (§4.3.1), plus ``byCategory`` and
    ``unscoredDecisions``; ``overall`` is ``None`` below ``max(minDecisions, 3)`` scored
    decisions (CSTP's documented shape)."""
    f = q.filters
    since, until = lower_bound(f.since), upper_bound(f.until)
    now = today(app)
    period: dict[str, Any] = {}
    if q.window is not None:
        period["window"] = q.window
        days = WINDOWS.get(q.window)
        if days is not None:  # CSTP: a known window overrides since/until
            since, until = day_start(now - timedelta(days=days)), day_end(now)
            period["periodStart"] = format_ts(since)[:10]
            period["periodEnd"] = format_ts(until)[:10]
    rows = [r for r in scan(app) if _admits(f, since, until, r)]
    scored = [r for r in rows if r.scored]
    needed = max(f.min_decisions, MIN_SCORED)
    overall = score(scored, total=len(rows)) if len(scored) >= needed else None
    if overall is not None:
        overall.update(period)
    found = buckets(scored)
    stats = confidence_stats(rows)
    result: dict[str, Any] = {
        "overall": overall,
        "byConfidenceBucket": found,
        "recommendations": recommendations(overall, found, stats, len(scored), needed),
        "queryTime": format_ts(now),
        "byCategory": [{"category": k, **v} for k, v in by_category(rows).items()],
        "unscoredDecisions": sum(1 for r in rows if r.reviewed and r.confidence is None),
    }
    if overall is None:
        result["insufficientData"] = {
            "totalDecisions": len(rows),
            "reviewedDecisions": len(scored),
            "minDecisions": needed,
            **period,
        }
    if stats is not None:
        result["confidenceStats"] = stats
    return result
