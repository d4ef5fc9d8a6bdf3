"""The analyst's history tables: a decision's events as a DataFrame, and which methods a view
``as_of`` a point passes ``asOf`` to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from graph.timeutil import parse_ts

#: The methods that answer ``asOf`` (README "History and time travel").
AS_OF_METHODS = frozenset(
    f"cstp.{name}"
    for name in [
        "getDecision",
        "listDecisions",
        "getGraph",
        "getNeighbors",
        "findPath",
        "getAncestors",
        "getDescendants",
        "findContradictions",
        "getBlockedChain",
        "getHighSalience",
        "queryDecisions",
        "recall",
    ]
)
HISTORY_COLUMNS = ["seq", "ts", "actor", "action", "changes", "edge", "outcome", "lessons"]


def _changes(event: Mapping[str, Any]) -> str:
    if event["action"] == "recorded":
        return ""
    return "; ".join(
        f"{field}: {c['before']!r} -> {c['after']!r}" for field, c in event["changes"].items()
    )


def history_table(found: Mapping[str, Any]) -> pd.DataFrame:
    """``cstp.getDecisionHistory``'s answer, one row per event (oldest first): seq, time,
    actor, action, what changed (``field: before -> after``), the edge, a review's outcome and
    lessons."""
    rows = []
    for event in found["events"]:
        edge = event.get("edge")
        review = event.get("review") or {}
        rows.append(
            {
                "seq": event["seq"],
                "ts": pd.Timestamp(parse_ts(event["ts"])),
                "actor": event["actor"],
                "action": event["action"],
                "changes": _changes(event),
                "edge": None
                if edge is None
                else f"{edge['source']} -{edge['type']}-> {edge['target']}",
                "outcome": review.get("outcome"),
                "lessons": review.get("lessons"),
            }
        )
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)
