"""Values a clause states, read for the second reading (:mod:`.stance_align`): rates ("100
requests per minute"), repetition ("weekly", "every two weeks", "twice a day"), weekdays
("Monday to Thursday", "any weekday") and a same-day schedule, in one comparable form each.
Durations, sizes and counts come from :func:`.stance_scope.take_scope_and_values`.
"""

from __future__ import annotations

import re

from .stance_words import NUMBER_WORDS

#: Repetition words as a period in days, so "weekly" meets "every two weeks".
_FREQUENCY = {
    "hourly": 1 / 24,
    "daily": 1.0,
    "nightly": 1.0,
    "weekly": 7.0,
    "fortnightly": 14.0,
    "biweekly": 14.0,
    "monthly": 30.4375,
    "quarterly": 91.3125,
    "yearly": 365.25,
    "annually": 365.25,
    "annual": 365.25,
}
_PER = re.compile(
    r"\b(?:(once|twice|\w+ times)\s+(?:a|an|per|each|every)\s+(day|week|month|quarter|year))\b",
    re.IGNORECASE,
)
_EVERY = re.compile(
    r"\bevery\s+(?:(\d+|one|two|three|four|five|six|seven|eight|nine|ten|other)\s+)?"
    r"(day|week|month|quarter|year)s?\b",
    re.IGNORECASE,
)
_PERIOD_DAYS = {"day": 1.0, "week": 7.0, "month": 30.4375, "quarter": 91.3125, "year": 365.25}
NUMBER = re.compile(r"^\d+(?:\.\d+)*$")

_UNIT_WORDS = "second|minute|hour|day|week|month|quarter|year"
_HYPHEN_UNIT = re.compile(rf"\b(\w+)-({_UNIT_WORDS})s?\b", re.IGNORECASE)
_RATE = re.compile(
    rf"\b(\d+(?:[.,]\d+)?)\s+(?:[a-z-]+\s+){{0,2}}?(?:per|an?|/|each)\s*({_UNIT_WORDS}|min|sec|hr)s?\b",
    re.IGNORECASE,
)
_UNIT_SECONDS = {"second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "hr": 3600}
_UNIT_SECONDS |= {"day": 86400, "week": 604800, "month": 2629800, "quarter": 7889400}
_UNIT_SECONDS |= {"year": 31557600}


def _rates(text: str) -> tuple[str, list[tuple[str, str]]]:
    """ "100 requests per minute", "5 deploys a day": one value of kind ``rate`` (per second)."""
    found: list[tuple[str, str]] = []

    def rate(m: re.Match[str]) -> str:
        n = float(m[1].replace(",", ""))
        found.append(("rate", f"{n / _UNIT_SECONDS[m[2].lower()]:.4g}"))
        return " "

    return _RATE.sub(rate, text), found


def _frequencies(text: str) -> tuple[str, list[tuple[str, str]]]:
    found: list[tuple[str, str]] = []

    def per(m: re.Match[str]) -> str:
        count = {"once": 1, "twice": 2}.get(m[1].lower())
        if count is None:
            word = m[1].split()[0].lower()
            count = int(word) if word.isdigit() else NUMBER_WORDS.get(word, 0)
        if count:
            found.append(("period", f"{_PERIOD_DAYS[m[2].lower()] / count:.4g}"))
        return " "

    def every(m: re.Match[str]) -> str:
        word = (m[1] or "one").lower()
        n = 2 if word == "other" else int(word) if word.isdigit() else NUMBER_WORDS.get(word, 1)
        found.append(("period", f"{_PERIOD_DAYS[m[2].lower()] * n:.4g}"))
        return " "

    text = _EVERY.sub(every, _PER.sub(per, text))
    for word in re.findall(r"[A-Za-z-]+", text):
        period = _FREQUENCY.get(word.lower())
        if period is not None:
            found.append(("period", f"{period:.4g}"))
    return text, found


DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?s?|wednesdays?|saturdays?"
_DAY_RANGE = re.compile(rf"\b({_DAY})\s*(?:to|through|thru|until|till|-|\u2013)\s*({_DAY})\b", re.I)
_DAY_ONE = re.compile(rf"\b({_DAY})\b", re.IGNORECASE)
_DAY_GROUPS = {
    "weekday": DAY_NAMES[:5],
    "weekdays": DAY_NAMES[:5],
    "workday": DAY_NAMES[:5],
    "workdays": DAY_NAMES[:5],
    "weekend": DAY_NAMES[5:],
    "weekends": DAY_NAMES[5:],
}
#: "on the same day", "simultaneously": no delay between the things scheduled.
_SAME_TIME = re.compile(
    r"\b(?:(?:on|at)\s+the\s+same\s+(?:day|time|date)|simultaneously|at\s+once)\b", re.I
)


def _day_index(word: str) -> int:
    low = word.lower()
    return next(i for i, name in enumerate(DAY_NAMES) if name.startswith(low[:3]))


def _days(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Weekdays a clause names (ranges and "weekdays" expanded) as one value of kind
    ``days``, and a same-day schedule as a zero delay."""
    found: set[int] = set()

    def span(m: re.Match[str]) -> str:
        start, end = _day_index(m[1]), _day_index(m[2])
        found.update(range(start, end + 1) if start <= end else [*range(start, 7), *range(end + 1)])
        return " "

    def one(m: re.Match[str]) -> str:
        found.add(_day_index(m[1]))
        return " "

    values: list[tuple[str, str]] = []
    if _SAME_TIME.search(text):
        values.append(("duration", "0"))
        text = _SAME_TIME.sub(" ", text)
    text = _DAY_ONE.sub(one, _DAY_RANGE.sub(span, text))
    for word in re.findall(r"[A-Za-z]+", text):
        group = _DAY_GROUPS.get(word.lower())
        if group is not None:
            found.update(DAY_NAMES.index(d) for d in group)
    if found:
        values.append(("days", ",".join(DAY_NAMES[i][:3] for i in sorted(found))))
        text = re.sub(r"\b(?:weekdays?|workdays?|weekends?)\b", " ", text, flags=re.I)
    return text, values


def read_values(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` without the rates, repetitions and weekdays it states, and those values as
    ``(kind, value)`` pairs."""
    text = _HYPHEN_UNIT.sub(r"\1 \2", text)  # "one-week sprints": "one week sprints"
    text, values = _rates(text)
    text, more = _frequencies(text)
    values += more
    text, days = _days(text)
    return text, values + days
