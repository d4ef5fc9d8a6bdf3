"""Analytics methods: ``getCalibration``, ``checkDrift``, ``getReasonStats`` and
``attributeOutcomes`` (CSTP §4.3), each a thin translation to :mod:`service.usecases.analytics`.

Where CSTP's server and its clients disagree, the answer serves both:

- ``getCalibration``'s ``overall`` carries CSTP's camelCase keys and the snake_case ones the
  CLI and the dashboard read (``total_decisions``, ``brier_score``, ``period_start``...);
- filters sent at the top level (CLI ``calibration --project``, the dashboard's ``project``)
  are honoured as filters (CSTP ignores them); ``filters`` wins where both are given;
- the per-category figures the dashboard reads as ``by_category`` are sent (also as
  ``byCategory``);
- ``overall`` stays ``null`` when too few decisions are reviewed, as CSTP documents (the CLI
  and agents test for it); ``insufficientData`` then says how many there are and how many are
  needed. CSTP's own dashboard cannot show a ``null`` overall; that is its bug to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from graph.enums import Category, Stakes
from graph.model import ShortText
from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases.analytics import (
    CalibrationFilters,
    CalibrationQuery,
    DateBound,
    calibration,
)
from service.usecases.analytics_reasons import (
    AttributeOutcomes,
    DriftQuery,
    ReasonFilters,
    ReasonStatsQuery,
    attribute_outcomes,
    check_drift,
    reason_stats,
)

from .params import Params, wire

#: ``queryDecisions`` spells the date filters ``dateAfter``/``dateBefore``: accepted here too.
DATE_ALIASES = wire(
    since=("since", "dateAfter", "date_after"), until=("until", "dateBefore", "date_before")
)

#: camelCase key -> the snake_case key CSTP's CLI and dashboard read beside it.
SNAKE = {
    "totalDecisions": "total_decisions",
    "reviewedDecisions": "reviewed_decisions",
    "brierScore": "brier_score",
    "calibrationGap": "calibration_gap",
    "periodStart": "period_start",
    "periodEnd": "period_end",
}


class CalibrationFilterParams(Params, CalibrationFilters):
    model_config = DATE_ALIASES


class CalibrationParams(Params, CalibrationQuery):
    filters: CalibrationFilterParams = Field(default_factory=CalibrationFilterParams)
    # The filters CSTP's clients send at the top level (CSTP ignores them; honoured here).
    agent: ShortText | None = None
    category: Category | None = None
    stakes: Stakes | None = None
    project: ShortText | None = None
    feature: ShortText | None = None
    since: DateBound | None = None
    until: DateBound | None = None
    min_decisions: int | None = Field(default=None, ge=1, le=100_000)

    model_config = DATE_ALIASES

    def query(self) -> CalibrationQuery:
        """The use case's query: ``filters`` completed by the top-level filters."""
        given = self.filters.model_fields_set
        top = {
            name: getattr(self, name)
            for name in CalibrationFilters.model_fields
            if name in self.model_fields_set
            and name not in given
            and getattr(self, name) is not None
        }
        merged = CalibrationFilters(**{**self.filters.model_dump(), **top})
        return CalibrationQuery(filters=merged, window=self.window, group_by=self.group_by)


class DriftParams(Params, DriftQuery):
    pass


class ReasonFilterParams(Params, ReasonFilters):
    model_config = DATE_ALIASES


class ReasonStatsParams(Params, ReasonStatsQuery):
    filters: ReasonFilterParams = Field(default_factory=ReasonFilterParams)


class AttributeParams(Params, AttributeOutcomes):
    pass


def with_snake_case(figures: Mapping[str, Any]) -> dict[str, Any]:
    """``figures`` with the snake_case spelling of each key CSTP's clients read that way."""
    out = dict(figures)
    for camel, snake in SNAKE.items():
        if camel in figures:
            out[snake] = figures[camel]
    return out


def calibration_view(result: Mapping[str, Any]) -> dict[str, Any]:
    view = dict(result)
    if result["overall"] is not None:
        view["overall"] = with_snake_case(result["overall"])
    if "insufficientData" in result:
        view["insufficientData"] = with_snake_case(result["insufficientData"])
    categories = [with_snake_case(c) for c in result["byCategory"]]
    view["byCategory"] = categories
    view["by_category"] = categories
    return view


def register_analytics(registry: Registry, app: usecases.Decigraph) -> None:
    def get_calibration(p: CalibrationParams, ctx: CallContext) -> Mapping[str, Any]:
        return calibration_view(calibration(app, p.query()))

    def drift(p: DriftParams, ctx: CallContext) -> Mapping[str, Any]:
        return check_drift(app, p)

    def reasons(p: ReasonStatsParams, ctx: CallContext) -> Mapping[str, Any]:
        return reason_stats(app, p)

    def attribute(p: AttributeParams, ctx: CallContext) -> Mapping[str, Any]:
        return attribute_outcomes(app, p, ctx.agent)

    registry.add("cstp.getCalibration", CalibrationParams, get_calibration)
    registry.add("cstp.checkDrift", DriftParams, drift)
    registry.add("cstp.getReasonStats", ReasonStatsParams, reasons)
    registry.add("cstp.attributeOutcomes", AttributeParams, attribute, writes=True)
