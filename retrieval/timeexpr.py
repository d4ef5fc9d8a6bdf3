"""Time expressions in recall queries, turned into a window, an open bound or an event anchor.

"What did we decide last week?", "when did Caroline go to the support group in May 2023" and
"what happened before the migration" all say *when* to look. This module finds the first such
expression and says what it means relative to ``now``; the caller narrows or boosts by it.

Every window is whole UTC days, start inclusive and end exclusive, so two calls on the same day
agree: weeks are ISO weeks from Monday, "in the last N days" runs from N days before today to
the end of today, and "N weeks ago" is the whole week that day falls in.

Precedence when a query holds several expressions: the leftmost wins, and of those starting at
the same place the longest ("in May 2023" beats "in May", "before May 2023" beats "May 2023").
A date that cannot exist ("31 February 2023") is never matched, and neither is anything that
overlaps it, so it cannot degrade into a looser reading such as "February 2023". Matching is
case-insensitive over ASCII letters; weekday names alone are not time expressions.

Examples
--------
>>> from datetime import UTC, datetime
>>> now = datetime(2026, 11, 21, 15, 30, tzinfo=UTC)
>>> found = parse_time_expression("what did we decide about caching last week?", now)
>>> found.relation, found.matched
(<TimeRelation.WITHIN: 'within'>, 'last week')
>>> found.start.isoformat(), found.end.isoformat()
('2026-11-09T00:00:00+00:00', '2026-11-16T00:00:00+00:00')
>>> strip_time_expression("what did we decide about caching last week?", found)
'what did we decide about caching?'
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum


class TimeRelation(StrEnum):
    WITHIN = "within"
    BEFORE = "before"
    AFTER = "after"


@dataclass(frozen=True, slots=True)
class TimeConstraint:
    """What a query says about time.

    ``start`` is inclusive and ``end`` exclusive, both UTC; ``None`` leaves that side open. An
    ``event`` ("the migration") is a moment the caller still has to find, so both bounds are
    ``None`` then. ``matched`` is the exact text of the query that was recognised.
    """

    relation: TimeRelation
    start: datetime | None
    end: datetime | None
    event: str | None
    matched: str


Window = tuple[datetime, datetime]
_Build = Callable[[re.Match[str], datetime], Window]

# Spelled out rather than taken from calendar.month_abbr, which follows the process locale.
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NUMBERS = {name: number for number, name in enumerate(_MONTHS, start=1)}
_SEASON_STARTS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_NUMBER_WORDS = {word: n for n, word in enumerate((*_NUMBERS, "eleven", "twelve"), start=1)}
_NUMBER_WORDS |= {"a": 1, "an": 1, "a couple of": 2, "a couple": 2, "couple of": 2}

_MONTH = (
    r"(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b"
)
_DAY = r"(?P<day>[0-9]{1,2})(?:st|nd|rd|th)?\b"
_YEAR = r"(?P<year>(?:19|20|21)[0-9]{2})\b(?![\-/][0-9])"  # 1900-2199: "in 1024 rows" is no year
_COUNT = (
    r"(?P<n>[0-9]{1,4}|a\s+couple\s+of|a\s+couple|couple\s+of|an?|one|two|three|four|five|six"
    r"|seven|eight|nine|ten|eleven|twelve)"
)
_UNIT = r"(?P<unit>day|week|month|year)s?\b"
_IN = r"(?:(?:in|during|throughout)\s+)"

# ASCII matching: Unicode rules let a dotless i or a long s (U+0131, U+017F) match "i" and "s",
# and such a word would reach the lookup tables above, which do not hold it.
_FLAGS = re.IGNORECASE | re.ASCII
_CONNECTIVE = re.compile(r"\b(?P<word>before|after|since|until|till|prior\s+to)\s+", _FLAGS)
_EVENT_START = re.compile(r"(?:the|our|my|your|their|his|her)\b", _FLAGS)
_EVENT_WORD = re.compile(r"[^\S\n]+(?P<word>\w+(?:['\u2019\-./]\w+)*)")
_EVENT_MAX_WORDS = 6
#: Words that end an event phrase: the rest of the question starts there.
_EVENT_STOP = frozenset(
    """
    what when where why who whom whose which how and or but because so that if while though
    although whether then than did do does was were is are has have had will would could should
    can may might we i you they he she it us them me there here ago
    """.split()  # noqa: SIM905
)
_DANGLING = frozenset(["the", "a", "an", "of", "in", "on", "at", "for", "to", "with", "our", "my"])
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([?!.,;:])")


@dataclass(frozen=True, slots=True)
class _Candidate:
    start: int
    end: int
    window: Window | None  # None: looks like a date but cannot exist
    standalone: bool  # False: a bare "May" or "2023" counts only after "before", "since"...


def _day(year: int, month: int, day: int) -> Window:
    start = datetime(year, month, day, tzinfo=UTC)
    return start, start + timedelta(days=1)


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + delta
    return index // 12, index % 12 + 1


def _months(year: int, month: int, count: int = 1) -> Window:
    end_year, end_month = _add_months(year, month, count)
    return datetime(year, month, 1, tzinfo=UTC), datetime(end_year, end_month, 1, tzinfo=UTC)


def _week(day: datetime) -> Window:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=7)


def _month_of(match: re.Match[str]) -> int:
    text = match["month"]
    return int(text) if text.isdigit() else _MONTH_NUMBERS[text[:3].casefold()]


def _count_of(match: re.Match[str]) -> int:
    text = " ".join(match["n"].casefold().split())
    return int(text) if text.isdigit() else _NUMBER_WORDS[text]


def _units_back(today: datetime, unit: str, count: int) -> datetime:
    """The day ``count`` units before ``today``; month ends clamp (31 March - 1 month = 28 Feb)."""
    if unit in {"day", "week"}:
        return today - timedelta(days=count * (7 if unit == "week" else 1))
    months = count * (12 if unit == "year" else 1)
    year, month = _add_months(today.year, today.month, -months)
    day = min(today.day, calendar.monthrange(year, month)[1])
    return datetime(year, month, day, tzinfo=UTC)


def _recent_day(month: int, day: int, today: datetime) -> Window:
    """The latest ``day`` of ``month`` not after today (29 February looks back to a leap year)."""
    for year in range(today.year, today.year - 8, -1):
        try:
            window = _day(year, month, day)
        except ValueError:
            continue
        if window[0] <= today:
            return window
    raise ValueError(f"no recent day {day} of month {month}")


def _calendar_day(match: re.Match[str], today: datetime) -> Window:
    month, day = _month_of(match), int(match["day"])
    if match["year"] is None:
        return _recent_day(month, day, today)
    return _day(int(match["year"]), month, day)


def _calendar_month(match: re.Match[str], today: datetime) -> Window:
    return _months(int(match["year"]), _month_of(match))


def _recent_month(match: re.Match[str], today: datetime) -> Window:
    month = _month_of(match)
    return _months(today.year if month <= today.month else today.year - 1, month)


def _season(match: re.Match[str], today: datetime) -> Window:
    first = _SEASON_STARTS[match["season"].casefold()]
    return _months(int(match["year"]), first, 3)  # winter 2023: December 2023 to February 2024


def _calendar_period(match: re.Match[str], today: datetime) -> Window:
    step = {"this": 0, "last": -1, "next": 1}[match["which"].casefold()]
    unit = match["unit"].casefold()
    if unit in {"week", "weekend"}:
        monday, next_monday = _week(today + timedelta(days=7 * step))
        return (next_monday - timedelta(days=2) if unit == "weekend" else monday), next_monday
    if unit == "month":
        return _months(*_add_months(today.year, today.month, step))
    return _months(today.year + step, 1, 12)


def _ago(match: re.Match[str], today: datetime) -> Window:
    unit, count = match["unit"].casefold(), _count_of(match)
    point = _units_back(today, unit, count)
    if unit == "day":
        return point, point + timedelta(days=1)
    if unit == "week":
        return _week(point)
    return _months(point.year, point.month) if unit == "month" else _months(point.year, 1, 12)


def _rolling(match: re.Match[str], today: datetime) -> Window:
    count = _count_of(match) if match["n"] else 1
    return _units_back(today, match["unit"].casefold(), count), today + timedelta(days=1)


def _days_from_today(offset: int) -> _Build:
    def build(match: re.Match[str], today: datetime) -> Window:
        start = today + timedelta(days=offset)
        return start, start + timedelta(days=1)

    return build


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    build: _Build
    standalone_group: str | None  # when set, the match stands alone only if this group matched


def _rule(pattern: str, build: _Build, standalone_group: str | None = None) -> _Rule:
    return _Rule(re.compile(pattern, _FLAGS), build, standalone_group)


_RULES = (
    _rule(
        rf"(?:\b(?:on\s+|{_IN}))?(?<![\w\-])(?P<year>[0-9]{{4}})-(?P<month>[0-9]{{2}})"
        r"-(?P<day>[0-9]{2})(?![0-9])",
        _calendar_day,
    ),
    _rule(
        rf"(?:\b{_IN})?(?<![\w\-])(?P<year>[0-9]{{4}})-(?P<month>[0-9]{{2}})(?![\w\-])",
        _calendar_month,
    ),
    _rule(rf"\b(?:on\s+)?(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH}(?:,?\s+{_YEAR})?", _calendar_day),
    _rule(rf"\b(?:on\s+)?{_MONTH}\s+(?:the\s+)?{_DAY}(?:,?\s+{_YEAR})?", _calendar_day),
    _rule(rf"\b{_IN}?{_MONTH}(?:\s+of)?,?\s+{_YEAR}", _calendar_month),
    _rule(rf"\b(?P<prep>{_IN})?{_MONTH}", _recent_month, "prep"),
    _rule(
        rf"\b{_IN}?(?:the\s+)?(?P<season>spring|summer|autumn|fall|winter)(?:\s+of)?,?\s+{_YEAR}",
        _season,
    ),
    _rule(rf"\b(?P<prep>{_IN})?{_YEAR}", lambda m, today: _months(int(m["year"]), 1, 12), "prep"),
    _rule(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", _days_from_today(0)),
    _rule(r"\b(?:yesterday|last\s+night)\b", _days_from_today(-1)),
    _rule(r"\b(?:the\s+)?day\s+before\s+yesterday\b", _days_from_today(-2)),
    _rule(r"\btomorrow\b", _days_from_today(1)),
    _rule(r"\b(?P<which>this|last|next)\s+(?P<unit>week|weekend|month|year)\b", _calendar_period),
    _rule(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", _ago),
    _rule(  # "the last week" is rolling, a bare "last week" is the calendar week before
        rf"\b(?:(?:in|over|during|within|for)\s+)?"
        rf"(?:(?:the\s+)?(?:last|past)\s+{_COUNT}\s+|the\s+(?:last|past)\s+){_UNIT}",
        _rolling,
    ),
    _rule(
        r"\b(?:recently|lately)\b",
        lambda m, today: (today - timedelta(days=30), today + timedelta(days=1)),
    ),
)


def _candidates(query: str, today: datetime) -> Iterator[_Candidate]:
    for rule in _RULES:
        for match in rule.pattern.finditer(query):
            try:
                window: Window | None = rule.build(match, today)
            except (ValueError, OverflowError):  # 31 February, or beyond what datetime holds
                window = None
            group = rule.standalone_group
            standalone = group is None or match[group] is not None
            yield _Candidate(match.start(), match.end(), window, standalone)


def _bounded(connective: re.Match[str], end: int, window: Window, query: str) -> TimeConstraint:
    """Before X ends where X starts, until X where it ends; after and since mirror them."""
    word = " ".join(connective["word"].casefold().split())
    matched = query[connective.start() : end]
    if word in {"before", "prior to"}:
        return TimeConstraint(TimeRelation.BEFORE, None, window[0], None, matched)
    if word in {"until", "till"}:
        return TimeConstraint(TimeRelation.BEFORE, None, window[1], None, matched)
    if word == "since":
        return TimeConstraint(TimeRelation.AFTER, window[0], None, None, matched)
    return TimeConstraint(TimeRelation.AFTER, window[1], None, None, matched)


def _anchored(connective: re.Match[str], end: int, query: str) -> TimeConstraint:
    after = connective.end()
    word = connective["word"].casefold()
    relation = TimeRelation.AFTER if word in {"after", "since"} else TimeRelation.BEFORE
    event = " ".join(query[after:end].split())
    return TimeConstraint(relation, None, None, event, query[connective.start() : end])


def _event_end(query: str, start: int, date_starts: set[int]) -> int | None:
    """Where the event phrase starting at ``start`` ends, or None when there is none."""
    opening = _EVENT_START.match(query, start)
    if opening is None or start in date_starts:
        return None
    position, words, end = opening.end(), 1, None
    while words < _EVENT_MAX_WORDS:
        word = _EVENT_WORD.match(query, position)
        if word is None or word.start("word") in date_starts:
            break
        if word["word"].casefold() in _EVENT_STOP:
            break
        position, words = word.end(), words + 1
        if word["word"].casefold() not in _DANGLING:  # cut at six words, "the launch of the"
            end = position
    return end


def parse_time_expression(query: str, now: datetime) -> TimeConstraint | None:
    """The time expression of ``query`` relative to ``now``, or None when it has none.

    Parameters
    ----------
    query
        A recall question in English.
    now
        The present, timezone-aware (converted to UTC); windows are whole UTC days.

    Returns
    -------
    TimeConstraint or None
        The leftmost expression, the longest of those starting there (see the module notes).
        "before X" ends where X starts and "until X" where X ends; "after X" starts where X
        ends and "since X" where X starts. Without a date, "before the <event>" names the event.

    Raises
    ------
    ValueError
        If ``now`` is naive.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> now = datetime(2026, 11, 21, 15, 30, tzinfo=UTC)
    >>> found = parse_time_expression("when did Caroline go to the support group in May 2023", now)
    >>> found.start.isoformat(), found.end.isoformat(), found.matched
    ('2023-05-01T00:00:00+00:00', '2023-06-01T00:00:00+00:00', 'in May 2023')
    >>> found = parse_time_expression("what happened before the migration?", now)
    >>> found.relation, found.start, found.end, found.event
    (<TimeRelation.BEFORE: 'before'>, None, None, 'the migration')
    >>> parse_time_expression("what did Melanie paint on Monday?", now) is None
    True
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    # Same length as the query, so positions still point into it, but with every kind of space
    # (no-break, thin...) as a plain one: the ASCII patterns only know those.
    scan = "".join(" " if c.isspace() and c != "\n" else c for c in query)
    candidates = list(_candidates(scan, today))
    impossible = [(c.start, c.end) for c in candidates if c.window is None]
    date_starts = {c.start for c in candidates if c.standalone}
    longest: dict[int, tuple[int, Window]] = {}  # start -> the longest possible date there
    options: list[tuple[int, int, TimeConstraint]] = []
    for c in candidates:
        if c.window is None:
            continue
        if c.start not in longest or c.end > longest[c.start][0]:
            longest[c.start] = (c.end, c.window)
        if c.standalone:
            constraint = TimeConstraint(
                TimeRelation.WITHIN, *c.window, None, query[c.start : c.end]
            )
            options.append((c.start, c.end, constraint))
    for connective in _CONNECTIVE.finditer(scan):
        if connective.end() in longest:
            end, window = longest[connective.end()]
            options.append((connective.start(), end, _bounded(connective, end, window, query)))
        elif (event_end := _event_end(scan, connective.end(), date_starts)) is not None:
            anchored = _anchored(connective, event_end, query)
            options.append((connective.start(), event_end, anchored))
    possible = [
        (start, end, constraint)
        for start, end, constraint in options
        if not any(bad_start < end and start < bad_end for bad_start, bad_end in impossible)
    ]
    if not possible:
        return None
    return min(possible, key=lambda option: (option[0], option[0] - option[1]))[2]


def strip_time_expression(query: str, constraint: TimeConstraint) -> str:
    """``query`` without the text of ``constraint``, whitespace collapsed.

    Spaces left in front of punctuation by the removal go too, so keyword and vector search see
    the question without its time words.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> now = datetime(2026, 11, 21, tzinfo=UTC)
    >>> query = "what  did we ship in May 2023 ?"
    >>> strip_time_expression(query, parse_time_expression(query, now))
    'what did we ship?'
    """
    index = query.find(constraint.matched) if constraint.matched else -1
    if index >= 0:
        query = query[:index] + " " + query[index + len(constraint.matched) :]
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", " ".join(query.split()))
