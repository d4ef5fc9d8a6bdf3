"""Scope qualifiers and values, read out of a statement before its grammar is parsed.

"in development", "for the EU", "in eu-west-1" say *where* a statement holds; "for 30 days",
"in Q3", "under 200 ms", "$20/month" say *how much* or *when*. Both are taken out of the clause
(so "Keep logs for 30 days" parses as "Keep logs") and kept beside it: a scope decides whether
two statements can meet at all, a value whether they agree on the same policy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .stance_words import (
    ENVIRONMENTS,
    MONTHS,
    NUMBER_WORDS,
    REGION_PREFIX,
    REGIONS,
    UNITS,
    word_set,
)

#: A value: (dimension, canonical value, as written), e.g. ("duration", "2.592e+06", "30 days").
Value = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a statement holds. Empty sets mean "everywhere"."""

    environments: frozenset[str] = frozenset()
    regions: frozenset[str] = frozenset()  # "eu" or "eu:eu-west-1" (continent, then code)
    targets: frozenset[str] = frozenset()  # named service/team/project ("billing service")

    def __bool__(self) -> bool:
        return bool(self.environments or self.regions or self.targets)


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))


_ENV_WORDS = _alternation(ENVIRONMENTS)
_ENV_AFTER_FOR = "dev|development|local development|local|production|prod|staging|preprod"
_ENV_TAIL = r"(?:\s+(?:environments?|envs?|builds?|deployments?|clusters?|servers?|stacks?|only))?"
_END = (
    r"(?=\s*(?:$|[,;:.)]|\b(?:and|or|only|for|with|to|on|in|at|by|until|instead|rather|over|"
    r"not|but|as|from|using|via|through|when|where|while)\b))"
)
_ENV_LIST = rf"(?:{_ENV_WORDS})(?:\s*(?:,|/|&|\band\b|\bor\b)\s*(?:the\s+)?(?:{_ENV_WORDS}))*"
ENV = re.compile(
    rf"\b(?:(?:in|on|across|within|to|into|at|against|under)\s+(?:the\s+|our\s+|a\s+)?"
    rf"(?P<a>{_ENV_LIST}){_ENV_TAIL}{_END}"
    rf"|for\s+(?:the\s+|our\s+)?(?P<b>(?:{_ENV_AFTER_FOR})(?:\s*(?:,|/|&|\band\b|\bor\b)\s*"
    rf"(?:{_ENV_AFTER_FOR}))*){_ENV_TAIL}{_END}"
    rf"|(?P<c>{_ENV_LIST})\s+(?:environments?|envs?|builds?|clusters?|servers?|only)\b"
    rf"|\b(?P<d>locally)\b)",
    re.IGNORECASE,
)
UNIVERSAL = re.compile(
    r"\b(?:(?:in|across|for|on)\s+(?:all|every)\s+(?:environments?|envs?|regions?|stages?)|"
    r"everywhere|globally|world-?wide|in all cases)\b",
    re.IGNORECASE,
)
_REGION_LONG = _alternation(w for w in REGIONS if len(w) > 4)
_REGION_CODE = (
    r"(?:eu|us|ap|ca|sa|me|af|cn|uk|europe|asia|australia|northamerica|southamerica)"
    r"-[a-z]+-?\d+[a-z]?"
)
_REGION_TAIL = (
    r"(?:\s+(?:regions?|customers?|users?|data ?cent(?:er|re)s?|markets?|only|"
    r"traffic|tenants?))?"
)
REGION = re.compile(
    rf"\b(?:in|for|across|within|to|into|from|at|inside|outside|throughout)\s+(?:the\s+)?"
    rf"(?:(?P<code>\b{_REGION_CODE}\b)|(?P<short>\b(?:EU|US|USA|UK|APAC|EMEA|LATAM|"
    rf"EEA)\b)|(?P<long>\b(?i:{_REGION_LONG})\b)){_REGION_TAIL}",
)

_NUMBER = rf"(?:\d+(?:\.\d+)?|{_alternation(NUMBER_WORDS)})"
_UNIT = _alternation(UNITS)
#: Words that lead to a value and go with it: "for 30 days", "no later than Q3".
_LEAD_WORDS = word_set(
    """
    for in by to until till within under below above over at every after before of from than
    less more fewer least most up no later earlier starting through during end start beginning
    the maximum minimum max min a an once twice capped limited set kept retained retention next
    first last on around about approximately roughly with
    """
)
QUANTITY = re.compile(
    rf"\b(?P<n>{_NUMBER})\s*-?\s*(?P<u>{_UNIT})(?=$|[^\w])(?:\s+(?:retention|"
    r"window|period|limit|timeout|ttl|sla|slo))?",
    re.IGNORECASE,
)
MONEY = re.compile(
    r"(?P<m>[$€£]\s?\d[\d,]*(?:\.\d+)?\s?[km]?)(?:\s*(?:/|per|a)\s*"
    r"(?P<per>month|mo|year|yr|user|seat|hour|day))?",
    re.IGNORECASE,
)
QUARTER = re.compile(
    r"\b(?:(?:fy|FY)\s?'?(?P<fy>\d\d)\s+)?(?P<q>[qQ][1-4]|[hH][12])\b"
    r"(?:\s+(?:of\s+)?(?P<y>(?:19|20)\d\d|'\d\d))?",
)
_MONTH = _alternation(m for m in MONTHS if m != "may" and len(m) > 3)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
DATE = re.compile(
    r"\b(?:(?:in|by|until|till|before|after|from|during|since|through|to|end of|early|late|"
    r"mid|start of|on|starting|starts|begins|effective)\s+)*(?:the\s+)?"
    rf"(?:(?P<dm>{_DAY})\s+(?:of\s+)?(?P<month2>{_MONTH}|may)|"
    rf"(?P<month3>{_MONTH}|may)\s+(?P<md>{_DAY})\b)(?:,?\s*(?P<dy>(?:19|20)\d\d))?"
    r"|\b(?:(?:in|by|until|till|before|after|from|during|since|through|to|end of|early|late|"
    rf"mid|start of)\s+)+(?:(?P<month>{_MONTH}|may)\b\s*(?P<my>(?:19|20)\d\d)?|"
    r"(?P<year>(?:19|20)\d\d)\b)|\b(?P<iso>\d{4}-\d{2}-\d{2})\b",
    re.IGNORECASE,
)
CLOCK = re.compile(
    r"\b(?P<h>\d{1,2}):(?P<m>\d{2})(?:\s*(?P<ap>am|pm))?(?:\s*(?P<tz>utc|gmt))?\b",
    re.IGNORECASE,
)


def _number(text: str) -> float:
    low = text.lower()
    return float(NUMBER_WORDS[low]) if low in NUMBER_WORDS else float(low)


def _canonical(value: float) -> str:
    return f"{value:.6g}"


def _quantity(match: re.Match[str]) -> tuple[str, str]:
    dimension, factor = UNITS[match["u"].lower()]
    return dimension, _canonical(_number(match["n"]) * factor)


def _money(match: re.Match[str]) -> tuple[str, str]:
    raw = match["m"].replace(",", "").replace(" ", "")
    scale = {"k": 1e3, "m": 1e6}.get(raw[-1].lower(), 1.0)
    amount = float(raw[1:].rstrip("kmKM")) * scale
    per = (match["per"] or "").lower()
    per = {"mo": "month", "yr": "year"}.get(per, per)
    return f"money{'/' + per if per else ''}", _canonical(amount)


def _quarter(match: re.Match[str]) -> tuple[str, str]:
    year = match["y"] or (f"'{match['fy']}" if match["fy"] else "")
    year = year.replace("'", "20") if year else ""
    return "when", f"{match['q'].lower()}{' ' + year if year else ''}"


def _date(match: re.Match[str]) -> tuple[str, str]:
    if match["iso"]:
        return "when", match["iso"]
    if match["month2"] or match["month3"]:
        month = MONTHS[(match["month2"] or match["month3"]).lower()]
        day = int(re.sub(r"\D", "", match["dm"] or match["md"]))
        year = f" {match['dy']}" if match["dy"] else ""
        return "when", f"m{month:02d}-{day:02d}{year}"
    if match["month"]:
        year = match["my"] or ""
        return "when", f"m{MONTHS[match['month'].lower()]:02d}{' ' + year if year else ''}"
    return "when", str(match["year"])


def _clock(match: re.Match[str]) -> tuple[str, str]:
    hour = int(match["h"]) % 12 if match["ap"] else int(match["h"])
    if (match["ap"] or "").lower() == "pm":
        hour += 12
    return "time", f"{hour:02d}:{match['m']}"


_PERIODS = {
    "hour": 3600.0,
    "day": 86400.0,
    "night": 86400.0,
    "week": 604800.0,
    "fortnight": 1209600.0,
    "month": 2629800.0,
    "quarter": 7889400.0,
    "year": 31557600.0,
}
_ADVERBS = {
    "hourly": "hour",
    "daily": "day",
    "nightly": "night",
    "weekly": "week",
    "biweekly": "fortnight",
    "bi-weekly": "fortnight",
    "fortnightly": "fortnight",
    "monthly": "month",
    "quarterly": "quarter",
    "yearly": "year",
    "annually": "year",
}
FREQUENCY = re.compile(
    r"\b(?:(?:every|each|once\s+(?:a|an|per|every)|per|once\s+a)\s+(?P<unit>hour|day|night|"
    r"week|fortnight|month|quarter|year)|(?P<adv>hourly|daily|nightly|weekly|bi-?weekly|"
    r"fortnightly|monthly|quarterly|yearly|annually))\b",
    re.IGNORECASE,
)


_COUNTED = (
    r"(?!(?:and|or|for|the|per|with|from|than|more|less|of|to|in|on|at|by)\b)"
    r"(?P<noun>[a-z][a-z-]{2,})"
)
_PER = (
    r"(?:\s+(?:per|a|an|/|every|each)\s*(?P<per>second|sec|minute|min|hour|day|week|month|year))?"
)
#: "between 4 and 20 replicas", "2-8 pods": a range of a unit or of things counted.
RANGE = re.compile(
    rf"\bbetween\s+(?P<lo>{_NUMBER})\s+(?:and|to)\s+(?P<hi>{_NUMBER})\s*"
    rf"(?:(?P<u>{_UNIT})\b|{_COUNTED})",
    re.IGNORECASE,
)
_AMOUNT_LEAD = (
    r"up to|at most|at least|no more than|maximum of|minimum of|max|min|to|of|at|from|than|"
    r"is|are|with|exactly|only|cap(?:ped)? at|limit(?:ed)? to"
)
#: "up to 3 projects", "at 20 per pod", "from 20 to 60", "unlimited projects": amounts, after
#: a word that introduces one (a bare "3 replicas" is the option itself). "from N to M" is a
#: change: M is the value.
COUNT = re.compile(
    rf"\b(?:(?:{_AMOUNT_LEAD})\s+(?:(?P<from>{_NUMBER})\s+to\s+)?"
    rf"(?P<core>(?P<n>\d[\d,]*(?:\.\d+)?|{_alternation(NUMBER_WORDS)}))(?:\s+{_COUNTED})?"
    rf"|(?P<inf>unlimited|infinite)\s+{_COUNTED.replace('<noun>', '<things>')})"
    r"(?:\s+(?:per|a|an|/|every|each)\s*"
    r"(?P<per>[a-z]+(?:\s+(?!(?:to|for|in|on|at|of|with|and|or|the|is|are)\b)[a-z]+)?))?",
    re.IGNORECASE,
)
_SECONDS = {
    "sec": 1.0,
    "second": 1.0,
    "min": 60.0,
    "minute": 60.0,
    **{"hour": 3600.0, "day": 86400.0, "week": 604800.0, "month": 2629800.0, "year": 31557600.0},
}


def _range(match: re.Match[str]) -> tuple[str, str]:
    lo, hi = _number(match["lo"]), _number(match["hi"])
    if match["u"]:
        dimension, factor = UNITS[match["u"].lower()]
        return dimension, f"{_canonical(lo * factor)}-{_canonical(hi * factor)}"
    return f"count:{match['noun'].lower().rstrip('s')}", f"{_canonical(lo)}-{_canonical(hi)}"


def _count(match: re.Match[str]) -> tuple[str, str]:
    amount = float("inf") if match["inf"] else _number(match["n"].replace(",", ""))
    noun = (match["noun"] or match["things"] or "amount").lower().rstrip("s")
    per = (match["per"] or "").lower().rstrip("s")
    if per in _SECONDS:
        return f"rate:{noun}", _canonical(amount / _SECONDS[per])
    return f"count:{noun}{'/' + per if per else ''}", _canonical(amount)


def _frequency(match: re.Match[str]) -> tuple[str, str]:
    unit = match["unit"] or _ADVERBS[match["adv"].lower().replace("bi-", "bi")]
    return "duration", _canonical(_PERIODS[unit.lower()])


_DIGIT = re.compile(r"\d")


def _has_digit(text: str, words: set[str]) -> bool:
    return _DIGIT.search(text) is not None


def _has(*needles: str) -> Callable[[str, set[str]], bool]:
    """A cheap test run before a costly pattern: some word or character it needs is there."""
    wanted = frozenset(needles)
    return lambda text, words: bool(words & wanted) or _DIGIT.search(text) is not None


_MONTH_WORDS = frozenset(MONTHS)
_YEARISH = re.compile(r"\d{4}")
_FREQUENCY_WORDS = frozenset({"every", "each", "per", "once", *_ADVERBS})
_VALUE_PATTERNS: tuple[
    tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, str]], Callable[..., bool]], ...
] = (
    (MONEY, _money, lambda text, words: any(c in text for c in "$€£")),
    (DATE, _date, lambda text, words: bool(words & _MONTH_WORDS) or bool(_YEARISH.search(text))),
    (CLOCK, _clock, lambda text, words: ":" in text),
    (RANGE, _range, lambda text, words: "between" in words),
    (QUANTITY, _quantity, _has(*NUMBER_WORDS)),
    (
        COUNT,
        _count,
        lambda text, words: (
            bool(words & {"unlimited", "infinite"}) or _has(*NUMBER_WORDS)(text, words)
        ),
    ),
    (QUARTER, _quarter, _has_digit),
    (FREQUENCY, _frequency, lambda text, words: bool(words & _FREQUENCY_WORDS)),
)
_WORDS = re.compile(r"[\w'-]+")
_UNIVERSAL_WORDS = frozenset({"all", "every", "everywhere", "globally", "worldwide", "world-wide"})
_ENV_WORDS_SET = frozenset({*ENVIRONMENTS, "pre-production", "locally"})
_REGION_WORDS = frozenset(w.split()[0] for w in REGIONS) | {"usa", "eea"}
_REGION_HINT = re.compile(r"[a-z]-\d|\d[a-z]?\b")


def _lead_start(text: str, start: int) -> int:
    """Where the value starting at ``start`` begins once its lead words are counted in."""
    while True:
        end = len(text[:start].rstrip())
        begin = text.rfind(" ", 0, end) + 1
        if end == 0 or text[begin:end].lower() not in _LEAD_WORDS:
            return start
        start = begin


def _take_values(
    text: str, pattern: re.Pattern[str], read: Callable[[re.Match[str]], tuple[str, str]]
) -> tuple[str, list[Value]]:
    """``text`` without ``pattern``'s values (and their lead words), and the values.

    A value led by "from" is where a change starts ("from Q3 to Q4"): it is taken out of the
    text but not kept when the change's end is there too.
    """
    values: list[Value] = []
    origins: list[Value] = []
    kept: list[str] = []
    last = 0
    core = "core" in pattern.groupindex
    for match in pattern.finditer(text):
        changed = core and bool(match.groupdict().get("from"))
        begin = match.start("core") if core and match["core"] and not changed else match.start()
        start = max(last, _lead_start(text, begin))
        value = (*read(match), text[begin : match.end()].strip())
        led = text[start:begin].lower().split()
        (origins if led[-1:] == ["from"] else values).append(value)
        kept.append(text[last:start])
        last = match.end()
    kept.append(text[last:])
    dimensions = {v[0] for v in values}
    return " ".join(kept), values + [v for v in origins if v[0] not in dimensions]


def _region(match: re.Match[str]) -> str:
    if match["code"]:
        code = match["code"].lower()
        return f"{REGION_PREFIX.get(code.split('-')[0], code)}:{code}"
    word = (match["short"] or match["long"] or "").lower()
    return {"usa": "us", "eea": "eu"}.get(word, REGIONS.get(word, word))


def take_scope_and_values(clause: str) -> tuple[str, Scope, tuple[Value, ...]]:
    """``clause`` without its scope and value phrases, the scope, and the values found.

    >>> take_scope_and_values("Use SQLite for the primary datastore in development")
    ('Use SQLite for the primary datastore', Scope(environments=frozenset({'development'}), \
regions=frozenset(), targets=frozenset()), ())
    >>> take_scope_and_values("Keep logs for 30 days")[::2]
    ('Keep logs', (('duration', '2.592e+06', '30 days'),))
    """
    values: list[Value] = []
    words = set(_WORDS.findall(clause.lower()))
    text = UNIVERSAL.sub(" ", clause) if words & _UNIVERSAL_WORDS else clause
    for pattern, read, wanted in _VALUE_PATTERNS:
        if not wanted(text, words):
            continue
        text, found = _take_values(text, pattern, read)
        values.extend(found)
    environments: set[str] = set()
    if words & _ENV_WORDS_SET:
        for match in ENV.finditer(text):
            listed = match["a"] or match["b"] or match["c"] or match["d"] or ""
            for part in re.split(r"\s*(?:,|/|&|\band\b|\bor\b|\bthe\b)\s*", listed.lower()):
                word = part.replace("local development", "local").strip()
                if word in ENVIRONMENTS:
                    environments.add(ENVIRONMENTS[word])
        text = ENV.sub(" ", text)
    regions: set[str] = set()
    if words & _REGION_WORDS or _REGION_HINT.search(text):
        regions = {_region(m) for m in REGION.finditer(text)}
        text = REGION.sub(" ", text)
    text = re.sub(r"\s+([,;:.])", r"\1", re.sub(r"\s+", " ", text)).strip(" ,;:")
    scope = Scope(frozenset(environments), frozenset(regions))
    return text, scope, tuple(sorted(set(values)))
