"""Time expressions in recall queries: windows, open bounds, event anchors and what is ignored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.timeexpr import (
    TimeConstraint,
    TimeRelation,
    parse_time_expression,
    strip_time_expression,
)

NOW = datetime(2026, 11, 21, 15, 30, tzinfo=UTC)  # a Saturday
WITHIN, BEFORE, AFTER = TimeRelation.WITHIN, TimeRelation.BEFORE, TimeRelation.AFTER


def day(year: int, month: int, day_of_month: int) -> datetime:
    return datetime(year, month, day_of_month, tzinfo=UTC)


WINDOWS = [
    ("what did we ship today?", day(2026, 11, 21), day(2026, 11, 22), "today"),
    ("what broke yesterday", day(2026, 11, 20), day(2026, 11, 21), "yesterday"),
    ("notes from the day before yesterday", day(2026, 11, 19), day(2026, 11, 20), None),
    ("plans for tomorrow", day(2026, 11, 22), day(2026, 11, 23), "tomorrow"),
    ("what happened this week", day(2026, 11, 16), day(2026, 11, 23), "this week"),
    ("what did we decide about caching last week?", day(2026, 11, 9), day(2026, 11, 16), None),
    ("meetings next week", day(2026, 11, 23), day(2026, 11, 30), "next week"),
    ("What happened This Month", day(2026, 11, 1), day(2026, 12, 1), "This Month"),
    ("incidents last month", day(2026, 10, 1), day(2026, 11, 1), "last month"),
    ("goals this year", day(2026, 1, 1), day(2027, 1, 1), "this year"),
    ("decisions made last year", day(2025, 1, 1), day(2026, 1, 1), "last year"),
    ("what happened last weekend", day(2026, 11, 14), day(2026, 11, 16), "last weekend"),
    ("what did we deploy 3 days ago", day(2026, 11, 18), day(2026, 11, 19), "3 days ago"),
    ("the outage two weeks ago", day(2026, 11, 2), day(2026, 11, 9), "two weeks ago"),
    ("what changed a month ago", day(2026, 10, 1), day(2026, 11, 1), "a month ago"),
    ("the hire 2 years ago", day(2024, 1, 1), day(2025, 1, 1), "2 years ago"),
    ("anything in the last 7 days", day(2026, 11, 14), day(2026, 11, 22), "in the last 7 days"),
    ("bugs in the past 3 months", day(2026, 8, 21), day(2026, 11, 22), "in the past 3 months"),
    ("over the past week?", day(2026, 11, 14), day(2026, 11, 22), "over the past week"),
    ("what did we change recently", day(2026, 10, 22), day(2026, 11, 22), "recently"),
    ("support group in May 2023", day(2023, 5, 1), day(2023, 6, 1), "in May 2023"),
    ("the May 2023 offsite", day(2023, 5, 1), day(2023, 6, 1), "May 2023"),
    ("the launch on 8 May 2023", day(2023, 5, 8), day(2023, 5, 9), "on 8 May 2023"),
    ("met on 8 May, 2023.", day(2023, 5, 8), day(2023, 5, 9), "on 8 May, 2023"),
    ("the call May 8, 2023", day(2023, 5, 8), day(2023, 5, 9), "May 8, 2023"),
    ("May 8th 2023 review", day(2023, 5, 8), day(2023, 5, 9), "May 8th 2023"),
    ("the 8th of May 2023", day(2023, 5, 8), day(2023, 5, 9), "the 8th of May 2023"),
    ("log of 2023-05-08 please", day(2023, 5, 8), day(2023, 5, 9), "2023-05-08"),
    ("what did we decide in 2023", day(2023, 1, 1), day(2024, 1, 1), "in 2023"),
    ("what happened in May", day(2026, 5, 1), day(2026, 6, 1), "in May"),
    ("what happened in December", day(2025, 12, 1), day(2026, 1, 1), "in December"),
    ("trip in the summer of 2023", day(2023, 6, 1), day(2023, 9, 1), "in the summer of 2023"),
    ("summer 2023 hires", day(2023, 6, 1), day(2023, 9, 1), "summer 2023"),
    ("winter 2023", day(2023, 12, 1), day(2024, 3, 1), "winter 2023"),
    ("in May\u00a02023 with a no-break space", day(2023, 5, 1), day(2023, 6, 1), None),
    ("on February 29", day(2024, 2, 29), day(2024, 3, 1), "on February 29"),
]


@pytest.mark.parametrize(("query", "start", "end", "matched"), WINDOWS)
def test_windows(query: str, start: datetime, end: datetime, matched: str | None) -> None:
    found = parse_time_expression(query, NOW)
    assert found is not None
    assert (found.relation, found.start, found.end, found.event) == (WITHIN, start, end, None)
    assert found.matched in query
    if matched is not None:
        assert found.matched == matched


BOUNDS = [
    ("what happened before May 2023", BEFORE, None, day(2023, 5, 1), "before May 2023"),
    ("changes after May 2023", AFTER, day(2023, 6, 1), None, "after May 2023"),
    ("everything since May 2023", AFTER, day(2023, 5, 1), None, "since May 2023"),
    ("plans until May 2023", BEFORE, None, day(2023, 6, 1), "until May 2023"),
    ("prior to 2023 we used MySQL", BEFORE, None, day(2023, 1, 1), "prior to 2023"),
    ("since last week", AFTER, day(2026, 11, 9), None, "since last week"),
    ("what did we know before yesterday", BEFORE, None, day(2026, 11, 20), "before yesterday"),
    ("since May", AFTER, day(2026, 5, 1), None, "since May"),
    ("after 2023-05-08", AFTER, day(2023, 5, 9), None, "after 2023-05-08"),
    ("before the 8th of May 2023", BEFORE, None, day(2023, 5, 8), "before the 8th of May 2023"),
    ("anything since 3 days ago?", AFTER, day(2026, 11, 18), None, "since 3 days ago"),
]


@pytest.mark.parametrize(("query", "relation", "start", "end", "matched"), BOUNDS)
def test_open_bounds(
    query: str,
    relation: TimeRelation,
    start: datetime | None,
    end: datetime | None,
    matched: str,
) -> None:
    expected = TimeConstraint(relation, start, end, None, matched)
    assert parse_time_expression(query, NOW) == expected


EVENTS = [
    ("what happened before the migration", BEFORE, "the migration", "before the migration"),
    ("what happened before the migration?", BEFORE, "the migration", "before the migration"),
    ("what changed after the launch of v2?", AFTER, "the launch of v2", "after the launch of v2"),
    ("since the outage and why", AFTER, "the outage", "since the outage"),
    ("until our  big reorg, what", BEFORE, "our big reorg", "until our  big reorg"),
    ("before the migration was done", BEFORE, "the migration", "before the migration"),
    (
        "after the first public release of the new billing API",
        AFTER,
        "the first public release",
        "after the first public release",
    ),
    ("what did we do after the launch in May 2023", AFTER, "the launch", "after the launch"),
]


@pytest.mark.parametrize(("query", "relation", "event", "matched"), EVENTS)
def test_events(query: str, relation: TimeRelation, event: str, matched: str) -> None:
    assert parse_time_expression(query, NOW) == TimeConstraint(relation, None, None, event, matched)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "what did Melanie paint on Monday?",
        "we met on Friday",
        "it may happen",
        "we may 5x the budget",
        "what happened on 31 February 2023",
        "on February 30",
        "2023-02-30",
        "2023-13-01",
        "in 1024 rows",
        "after all, who owns billing",
        "before we shipped",
        "before the",
        "12/05/2023",
        "9999 years ago",
        "March forward",
        "th\u0131s week",  # dotless i: not an English "this"
        "\u017fince May",  # long s
    ],
)
def test_no_expression(query: str) -> None:
    assert parse_time_expression(query, NOW) is None


@pytest.mark.parametrize(
    ("query", "matched"),
    [
        ("in May 2023 and last week", "in May 2023"),
        ("last week and in May 2023", "last week"),
        ("in the last week", "in the last week"),
        ("before May 2023", "before May 2023"),
        ("on 8 May 2023", "on 8 May 2023"),
        ("on February 31 or in March 2023", "in March 2023"),  # impossible dates skip only
    ],
)
def test_leftmost_then_longest(query: str, matched: str) -> None:
    found = parse_time_expression(query, NOW)
    assert found is not None
    assert found.matched == matched


def test_aware_now_in_another_zone_is_read_in_utc() -> None:
    tokyo = NOW.astimezone(timezone(timedelta(hours=9)))  # already Sunday there
    assert parse_time_expression("today", tokyo) == parse_time_expression("today", NOW)


def test_naive_now_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_time_expression("today", datetime(2026, 11, 21, 15, 30))


@pytest.mark.parametrize(
    ("query", "stripped"),
    [
        ("what did we decide about caching last week?", "what did we decide about caching?"),
        (
            "when did Caroline go to the support group in May 2023",
            "when did Caroline go to the support group",
        ),
        ("what happened  before the migration ?", "what happened?"),
        ("Today", ""),
    ],
)
def test_strip_time_expression(query: str, stripped: str) -> None:
    found = parse_time_expression(query, NOW)
    assert found is not None
    assert strip_time_expression(query, found) == stripped


def test_strip_without_the_matched_text_only_collapses_whitespace() -> None:
    constraint = TimeConstraint(WITHIN, day(2026, 1, 1), day(2027, 1, 1), None, "this year")
    assert strip_time_expression("  who owns  billing ?", constraint) == "who owns billing?"


TIME_WORDS = """
    in on the of before after since until prior to last past this next ago a an two day days week
    weeks weekend month months year years today yesterday recently May may 8th 2023 2023-05-08 31
    February summer fall migration launch , ? 0 99 th\u0131s la\u017ft \u0130n
""".split()  # noqa: SIM905


@settings(max_examples=300, deadline=None)
@given(
    query=st.one_of(st.text(max_size=80), st.lists(st.sampled_from(TIME_WORDS)).map(" ".join)),
    now=st.datetimes(timezones=st.just(UTC)),
)
def test_never_raises_and_matched_is_in_the_query(query: str, now: datetime) -> None:
    found = parse_time_expression(query, now)
    if found is None:
        return
    assert found.matched
    assert found.matched in query
    if found.start is not None and found.end is not None:
        assert found.start < found.end
    if found.event is not None:
        assert (found.start, found.end) == (None, None)
    assert len(strip_time_expression(query, found)) <= len(query)
