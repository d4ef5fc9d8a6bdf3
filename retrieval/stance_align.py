"""The second reading of a pair of statements: by the words they share and where they differ.

:mod:`.stance` reads a statement's grammar (what it chooses, for what); some contradictions
are plain in the words even when the grammar is not one it reads ("Consumers need not be
idempotent" against "Consumers must be idempotent", "Database backups are retained for 7
days" against "... kept for 35 days", a passive "Container images are built with Docker
BuildKit" against "Build container images with Kaniko rather than BuildKit"). Each
statement is cut into clauses; a clause keeps its content words (stemmed, synonyms folded,
verbs of choice and of setting left out, as they say nothing of the subject), which of them
come from name-like words ("Kaniko", "ISO 8601", "HTTP/1.1"), its values, its scope and
whether it is negated. Two clauses contradict (:func:`align_conflict`) when they meet in
scope and

* **negation**: one is negated, the other is not, and they say the same thing otherwise
  (at least two shared words, at most one word of difference on one side and two on the other);
* **value**: both give a value of one kind (a duration, a size, a count, a frequency, a bare
  number such as a version or a threshold), the values differ, and the rest is the same
  subject (two shared words and nothing unshared on one side, or three shared and at most one
  unshared on each);
* **substitution**: the same sentence with one named thing swapped for another (at least
  two shared words; each side's unshared words include a name and at most one other word);
* **explicit rejection**: one statement rejects an option ("instead of X", "Replace X with
  Y", "from X to Y", "Drop X") that the other adopts, for an overlapping purpose.

A statement that only adds to the other (every content word of one is in the other) is a
refinement, never a substitution. A pilot commits to nothing and contradicts nothing.
Deterministic, no model: the same two texts always give the same verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from .stance import Stance, parse
from .stance_scope import Scope, take_scope_and_values
from .stance_terms import TOKEN, lemma
from .stance_words import (
    ALIASES,
    ALLOW_VERBS,
    CHOICE_VERBS,
    DETERMINERS,
    ENVIRONMENTS,
    GENERIC,
    INSTRUMENT_VERBS,
    LIGHT_CLASSES,
    NEGATIONS,
    NUMBER_WORDS,
    REGIONS,
    REJECT,
    REPLACE_VERBS,
    REQUIRE_VERBS,
    SYNONYMS,
    TRIAL_VERBS,
    UNITS,
    VALUE_VERBS,
    WEEKDAYS,
)
from .text import STOPWORDS, terms

__all__ = [
    "AlignedClause",
    "align_conflict",
    "clauses",
    "different_acts",
    "refinement",
    "subject_terms",
]


def _single(phrases: tuple[str, ...]) -> set[str]:
    return {p for p in phrases if " " not in p}


#: Verbs of choosing, requiring, allowing and setting: they say how, not what about.
_HOW_WORDS = frozenset(
    _single(CHOICE_VERBS)
    | _single(REQUIRE_VERBS)
    | _single(ALLOW_VERBS)
    | _single(REPLACE_VERBS)
    | set(VALUE_VERBS)
    | {"we", "will", "would", "get", "gets", "do", "does", "done", "has", "have"}
    | {"standardis", "standardiz", "switch", "move", "migrat", "adopt", "stay"}
    | {"enough", "also", "all", "every", "each", "any", "only", "always", "just", "new"}
    | {"include", "included", "includes", "including", "inclusive"}
    | {"utc", "gmt", "cet", "cest", "pst", "pdt", "est", "edt"}  # a time's zone, not a subject
)
#: Words that negate their clause (beside :data:`NEGATIONS`): rejecting verbs and "no".
_NEGATING = frozenset(
    _single(NEGATIONS)
    | {"no", "not", "never", "nor", "none", "cannot", "without", "skip", "avoid", "ban"}
    | {"forbid", "forbidden", "prohibit", "prohibited", "disallow", "disallowed", "reject"}
    | {"disable", "disabled", "stop", "exclude", "discontinue", "abandon", "eliminate"}
    | {"drop", "remove", "retire", "deprecate", "sunset", "decommission"}
)
_NEGATING_PAIRS = (
    "need not",
    "may not",
    "no longer",
    "must not",
    "do not",
    "does not",
    "phase out",
    "move off",
    "migrate off",
    "move away from",
    "migrate away from",
    "get rid of",
)
_TRIAL = frozenset(_single(TRIAL_VERBS) - {"review", "test", "benchmark", "research"})
#: "instead of X", "rather than X", "over X": the rejected alternative, cut from the clause.
_ALTERNATIVE = re.compile(
    r"\b(?:instead of|rather than|in place of|in favou?r of)\s+[^,;.]*?(?=$|[,;.]|\s+(?:for|in|on|"
    r"with|to|as|at|because|since|so)\b)",
    re.IGNORECASE,
)
_CLAUSES = re.compile(
    r"(?:[.;!?:](?:\s+|$)|\n+|,?\s+but\s+|,?\s+and then\s+|,?\s+then\s+|\s*;\s*|\s+-{1,2}\s+)",
    re.IGNORECASE,
)
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
_NUMBER = re.compile(r"^\d+(?:\.\d+)*$")
#: Generic nouns, as words and as stems ("going" is generic, its stem "go" is a language).
#: Words naming whose decision or which part it is ("the platform team", "the core
#: layer") are kept: two statements differing only there speak of different subjects.
_SUBJECT_WORDS = frozenset(
    [
        "platform",
        "platforms",
        "team",
        "teams",
        "system",
        "systems",
        "developer",
        "developers",
        "engineer",
        "engineers",
        "company",
        "org",
        "organisation",
        "organization",
        "layer",
        "layers",
        "core",
        "central",
        "stack",
    ]
)
_GENERIC = (
    frozenset(t for w in GENERIC - _SUBJECT_WORDS for t in terms(w))
    | frozenset(GENERIC - _SUBJECT_WORDS)
) - {"go"}


@dataclass(frozen=True, slots=True)
class AlignedClause:
    """One clause, reduced to what two clauses are compared by."""

    negated: bool
    content: frozenset[str]
    named: frozenset[str]
    values: tuple[tuple[str, str], ...]  # (dimension, value), sorted
    scope: Scope
    trial: bool
    #: Initials of runs of capitalised words ("Firebase Cloud Messaging": "fcm").
    acronyms: frozenset[str] = frozenset()


def _name_like(word: str, first: bool) -> bool:
    if word.lower() in ALIASES or any(c.isdigit() for c in word):
        return True
    if re.search(r"\w[.+#/_=]\w", word):
        return True
    upper = [c for c in word[1:] if c.isupper()]
    if upper:
        return True  # "GitOps", "JAX", "iOS" (not only a capital first letter)
    return word[:1].isupper() and not first and word.lower() not in WEEKDAYS


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


_DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?s?|wednesdays?|saturdays?"
_DAY_RANGE = re.compile(rf"\b({_DAY})\s*(?:to|through|thru|until|till|-|\u2013)\s*({_DAY})\b", re.I)
_DAY_ONE = re.compile(rf"\b({_DAY})\b", re.IGNORECASE)
_DAY_GROUPS = {
    "weekday": _DAY_NAMES[:5],
    "weekdays": _DAY_NAMES[:5],
    "workday": _DAY_NAMES[:5],
    "workdays": _DAY_NAMES[:5],
    "weekend": _DAY_NAMES[5:],
    "weekends": _DAY_NAMES[5:],
}
#: "on the same day", "simultaneously": no delay between the things scheduled.
_SAME_TIME = re.compile(
    r"\b(?:(?:on|at)\s+the\s+same\s+(?:day|time|date)|simultaneously|at\s+once)\b", re.I
)


def _day_index(word: str) -> int:
    low = word.lower()
    return next(i for i, name in enumerate(_DAY_NAMES) if name.startswith(low[:3]))


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
            found.update(_DAY_NAMES.index(d) for d in group)
    if found:
        values.append(("days", ",".join(_DAY_NAMES[i][:3] for i in sorted(found))))
        text = re.sub(r"\b(?:weekdays?|workdays?|weekends?)\b", " ", text, flags=re.I)
    return text, values


def _clause(raw: str) -> AlignedClause | None:
    low = raw.lower().replace("\u2019", "'").replace("n't", " not")
    # Negations cancel in pairs: "never ship X without Y" asks for Y.
    negations = sum(low.count(p) for p in _NEGATING_PAIRS)
    text = _ALTERNATIVE.sub(" ", raw)
    text = _HYPHEN_UNIT.sub(r"\1 \2", text)  # "one-week sprints": "one week sprints"
    text, values = _rates(text)
    text, more = _frequencies(text)
    values += more
    text, days = _days(text)
    values += days
    text, scope, found = take_scope_and_values(text)
    # A count is a number whatever it counts ("3 projects" may parse as a count or not).
    values += [("number" if d.startswith("count:") else d, v) for d, v, _ in found]
    content: set[str] = set()
    named: set[str] = set()
    places: dict[str, set[str]] = {"environments": set(), "regions": set()}
    trial = False
    words = [w for w in TOKEN.findall(text) if w != ","]
    for at, word in enumerate(words):
        low_word = word.lower().replace("\u2019", "'").strip("'\"")
        if low_word.endswith("'s"):
            low_word = low_word[:-2]
        base = lemma(low_word)
        if base in _NEGATING or low_word in _NEGATING:
            if not any(low_word in p.split() for p in _NEGATING_PAIRS if p in low):
                negations += 1
            continue
        scoped = _scope_word(word)
        if scoped is not None:
            places[scoped[0]].add(scoped[1])
            continue
        if base in _TRIAL and at <= 1 and base == low_word:  # "Pilot X"; not "Trials last"
            trial = True
        if _NUMBER.match(low_word):
            values.append(("number", low_word))
            continue
        if low_word in NUMBER_WORDS:
            values.append(("number", str(NUMBER_WORDS[low_word])))
            continue
        if low_word in UNITS or low_word.rstrip("s") in _DAY_NAMES:
            continue  # a unit without its number, or a day already read by _days
        if base in _HOW_WORDS or low_word in _HOW_WORDS or low_word in STOPWORDS:
            continue
        stems = [SYNONYMS.get(t, t) for t in terms(low_word.replace("-", " "))]
        stems = [s for s in stems if s and s not in _GENERIC and s not in _HOW_WORDS]
        content.update(stems)
        if _name_like(word, at == 0):
            named.update(stems)
    if not content:
        return None
    scope = Scope(
        scope.environments | frozenset(places["environments"]),
        scope.regions | frozenset(places["regions"]),
        scope.targets,
    )
    return AlignedClause(
        negations % 2 == 1,
        frozenset(content),
        frozenset(named),
        tuple(sorted(set(values))),
        scope,
        trial,
        _acronyms(words),
    )


#: Environment words that qualify a clause wherever they stand ("Staging API pods ...");
#: "test", "ci" and "local" are left out: as plain words they rarely name an environment.
_PLACE_ENVIRONMENTS = frozenset(
    {"production", "prod", "staging", "preprod", "pre-production", "development", "sandbox"}
)


def _scope_word(word: str) -> tuple[str, str] | None:
    """An environment or region named as a modifier ("the EU warehouse", "Staging pods")."""
    low = word.lower()
    if low in _PLACE_ENVIRONMENTS:
        return "environments", ENVIRONMENTS[low]
    # Regions only when written as names: "US" and "EU", never the pronoun "us".
    if low in REGIONS and word[:1].isupper() and (len(word) > 3 or word.isupper()):
        return "regions", REGIONS[low]
    return None


def _acronyms(words: list[str]) -> frozenset[str]:
    found: set[str] = set()
    run: list[str] = []
    for at, word in enumerate([*words, ""]):
        if at > 0 and word[:1].isupper() and word.isalpha():  # not the sentence's capital
            run.append(word)
            continue
        for start in range(len(run)):
            for end in range(start + 2, len(run) + 1):
                found.add("".join(w[0] for w in run[start:end]).lower())
        run = []
    return frozenset(found)


@lru_cache(maxsize=16384)
def clauses(text: str) -> tuple[AlignedClause, ...]:
    """The clauses of a statement, as :func:`align_conflict` compares them."""
    parts = [p for p in _CLAUSES.split(text) if p and p.strip()]
    found = [c for c in (_clause(p) for p in parts) if c is not None]
    # A single word the grammar puts in an option's place names a thing even in lower case
    # ("npm", "black", "webpack"); a longer lower-case option ("two approving reviews") is
    # a description, not a name.
    options = frozenset(
        t
        for claim in parse(text).claims
        if not claim.option.action and len(claim.option.name.split()) == 1
        for t in _stems(claim.option.name)
        if t not in _GENERIC
    )
    return tuple(replace(c, named=c.named | (c.content & options)) for c in found)


def subject_terms(text: str) -> frozenset[str]:
    """Every content word of a statement: the keys the statement index files it under."""
    return frozenset(t for c in clauses(text) for t in c.content)


def _scopes_meet(x: Scope, y: Scope) -> bool:
    """Both unqualified, or qualified with a common member (per dimension)."""
    for mine, theirs in ((x.environments, y.environments), (x.regions, y.regions)):
        if bool(mine) != bool(theirs) or (mine and not mine & theirs):
            return False
    return True


def _dimensions(c: AlignedClause) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for dimension, value in c.values:
        out.setdefault(dimension, set()).add(value)
    return {k: frozenset(v) for k, v in out.items()}


def _negation(x: AlignedClause, y: AlignedClause) -> str | None:
    if x.negated == y.negated:
        return None
    shared = x.content & y.content
    only_x, only_y = x.content - shared, y.content - shared
    if _opposed(only_x, only_y) is not None:
        return None  # "Public API responses are cached" / "Private API responses are not"
    extra = sorted((len(only_x), len(only_y)))
    # Up to one word of difference on each side (another verb for one act: "query" and
    # "access"), or two on one side when the other has none.
    if len(shared) >= 2 and (extra[1] <= 1 or (extra[0] == 0 and extra[1] <= 2)):
        return f"one says not to, the other to: {' '.join(sorted(shared))}"
    return None


#: Words that say how a value relates to its subject, not what the subject is ("Trials last
#: 14 days", "Tokens expire after 15 minutes", "Set topic retention to 30 days").
_VALUE_RELATION = frozenset(
    SYNONYMS.get(t, t)
    for t in terms(
        "last lasts expire expires expiry valid validity long after within least most maximum "
        "minimum max min budget limit cap threshold quota retention retained kept allowed "
        "send sent take takes up until"
    )
)


def _value(x: AlignedClause, y: AlignedClause) -> str | None:
    mine, theirs = _dimensions(x), _dimensions(y)
    clash = sorted(d for d in mine.keys() & theirs.keys() if mine[d] != theirs[d])
    if not clash:
        return None
    xs, ys = x.content - _VALUE_RELATION, y.content - _VALUE_RELATION
    shared = xs & ys
    if not shared or _opposed(xs - shared, ys - shared) is not None:
        return None  # nothing in common, or opposite subjects ("public" / "private" API)
    extra = sorted((len(xs - shared), len(ys - shared)))
    # A word on each side only may name two different things ("search" and "ads" ranking
    # models), so one side's subject must hold entirely in the other's; a one-word subject
    # ("trials") may be qualified by at most one word on the other side.
    if extra[0] == 0 and (len(shared) >= 2 or extra[1] <= 1):
        d = clash[0]
        ours, others = ", ".join(sorted(mine[d])), ", ".join(sorted(theirs[d]))
        return f"{' '.join(sorted(shared))}: {d} {ours} vs {others}"
    return None


#: Opposites that fill one slot of a decision ("a dark default theme" / "a light default
#: theme"): general English, stemmed like the content words.
_OPPOSITES = [
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("public", "private"),
    ("manual", "automated"),
    ("manual", "automatic"),
    ("static", "dynamic"),
    ("stateful", "stateless"),
    ("push", "pull"),
    ("eager", "lazy"),
    ("optimistic", "pessimistic"),
    ("monolith", "microservices"),
    ("monorepo", "polyrepo"),
    ("in-house", "outsourced"),
    ("self-hosted", "managed"),
    ("opt-in", "opt-out"),
    ("online", "offline"),
    ("dark", "light"),
    ("upfront", "arrears"),
    ("strict", "lax"),
    ("strict", "loose"),
    ("hard", "soft"),
    ("centralised", "decentralised"),
    ("centralized", "decentralized"),
    ("first", "last"),
    ("allowlist", "denylist"),
    ("whitelist", "blacklist"),
    ("horizontal", "vertical"),
    ("server-side", "client-side"),
    ("blocking", "non-blocking"),
    ("encrypted", "plaintext"),
    ("batch", "streaming"),
    ("relational", "nosql"),
    ("public", "internal"),
    ("external", "internal"),
    ("show", "hide"),
    ("grant", "revoke"),
    ("accept", "decline"),
    ("ascending", "descending"),
]


def _stems(word: str) -> frozenset[str]:
    return frozenset(SYNONYMS.get(t, t) for t in terms(word.replace("-", " ")))


_OPPOSITE_STEMS = [(_stems(a), _stems(b)) for a, b in _OPPOSITES]
assert all(a and b for a, b in _OPPOSITE_STEMS), "an opposite made only of stopwords"


def _opposed(only_x: frozenset[str], only_y: frozenset[str]) -> frozenset[str] | None:
    """The words of an opposite pair that one side has and the other replaces, if any."""
    for a, b in _OPPOSITE_STEMS:
        for mine, theirs in ((a, b), (b, a)):
            if mine <= only_x and theirs <= only_y:
                return mine | theirs
    return None


def _substitution(x: AlignedClause, y: AlignedClause) -> str | None:
    if x.negated != y.negated:
        return None
    shared = x.content & y.content
    only_x, only_y = x.content - shared, y.content - shared
    if len(shared) < 2:
        return None
    opposed = _opposed(only_x, only_y)
    if opposed is not None:  # the slot holds an opposite, not a name
        named_x, named_y = only_x & (x.named | opposed), only_y & (y.named | opposed)
    else:
        named_x, named_y = only_x & x.named, only_y & y.named
    if not named_x or not named_y:
        return None
    # Besides the names, one side may say a little more about the slot ("npm as the package
    # manager" / "pnpm"): two words on one side when the other has none, else one each.
    extra = sorted((len(only_x - named_x), len(only_y - named_y)))
    if extra[1] > 2 or (extra[1] == 2 and extra[0] > 0):
        return None
    if (only_x & y.acronyms) or (only_y & x.acronyms):
        return None  # "FCM" beside "Firebase Cloud Messaging": one name, two spellings
    if x.named and sorted("".join(x.named)) == sorted("".join(y.named)):
        return None  # "HMAC-SHA256" and "HMAC SHA-256": the same letters, split otherwise
    rivals = f"{' '.join(sorted(named_x))} vs {' '.join(sorted(named_y))}"
    return f"different choice for {' '.join(sorted(shared))}: {rivals}"


def _adopts(stance: Stance, cls: tuple[AlignedClause, ...], option: frozenset[str]) -> bool:
    """Whether a statement adopts an option named by ``option``'s stems (by its parse, or, when
    the parse names no such option, by a clause that mentions it and is not negated)."""
    for claim in stance.claims:
        if set(claim.option.key.split()) & option:
            if claim.mode == REJECT:
                return False
    return any(not c.negated and option <= c.content for c in cls)


def _rejection(a: str, b: str) -> str | None:
    for no_text, yes_text in ((a, b), (b, a)):
        no, yes = parse(no_text), parse(yes_text)
        yes_clauses = clauses(yes_text)
        for claim in no.claims:
            if claim.mode != REJECT or claim.option.action:
                continue
            option = frozenset(
                SYNONYMS.get(t, t) for t in terms(claim.option.name.replace("-", " "))
            )
            option -= _GENERIC
            if not option or not _adopts(yes, yes_clauses, option):
                continue
            purpose = claim.purpose.terms
            words = frozenset(t for c in yes_clauses for t in c.content)
            if purpose and not purpose & words:
                continue
            if claim.scope.environments or claim.scope.regions:
                if not any(_scopes_meet(claim.scope, c.scope) for c in yes_clauses):
                    continue
            return f"{claim.option.name}: rejected by one, adopted by the other"
    return None


def _refines(a: tuple[AlignedClause, ...], b: tuple[AlignedClause, ...]) -> bool:
    """Whether one statement only adds to the other (same polarity, all its words kept)."""
    wa = frozenset(t for c in a for t in c.content)
    wb = frozenset(t for c in b for t in c.content)
    na = {c.negated for c in a}
    nb = {c.negated for c in b}
    return na == nb and (wa <= wb or wb <= wa)


def _lead_verb(text: str) -> str | None:
    """The imperative verb a statement opens with ("Lint Go code ..."), if it seems to."""
    words = TOKEN.findall(text)
    if not words:
        return None
    first = words[0]
    low = first.lower()
    if (
        low in DETERMINERS
        or low in STOPWORDS
        or any(c.isdigit() for c in first)
        or any(c.isupper() for c in first[1:])
        or (low.endswith("s") and not low.endswith("ss"))  # "Hotfixes go ...": a noun
    ):
        return None
    return lemma(low)


def different_acts(a: str, b: str) -> bool:
    """Whether two statements open with different acts ("Lint Go code with X" / "Format Go
    code with Y"): then naming different tools is no rivalry. Verbs of choosing ("Use",
    "Adopt") name no act, and verbs of one light class (deploy, run, host) are one act."""
    va, vb = _lead_verb(a), _lead_verb(b)
    if va is None or vb is None or va == vb or va in _HOW_WORDS or vb in _HOW_WORDS:
        return False
    if terms(va) == terms(vb):
        return False
    # Only verbs the lexicon knows as acts: an opening noun or adjective ("Production nodes
    # run ...", "Automated backups ...") is no act.
    ca, cb = INSTRUMENT_VERBS.get(va), INSTRUMENT_VERBS.get(vb)
    if ca is None or cb is None:
        return False
    return not (ca == cb and ca in LIGHT_CLASSES)


def refinement(a: str, b: str) -> bool:
    """Whether one of two statements only adds detail to the other (see :func:`_refines`)."""
    return _refines(clauses(a), clauses(b))


def align_conflict(a: str, b: str) -> tuple[str, str] | None:
    """``(kind, reason)`` when the two statements contradict by their words, else ``None``.

    ``kind`` is negation | value | choice | rejection. Symmetric up to the reason's wording.
    """
    ca, cb = clauses(a), clauses(b)
    if not ca or not cb or any(c.trial for c in ca + cb):
        return None
    rejected = _rejection(a, b)
    if rejected is not None:
        return "rejection", rejected
    for x in ca:
        for y in cb:
            if not _scopes_meet(x.scope, y.scope):
                continue
            found = _value(x, y)
            if found is not None:
                return "value", found
            found = _negation(x, y)
            if found is not None:
                return "negation", found
            if not _refines(ca, cb) and not different_acts(a, b):
                found = _substitution(x, y)
                if found is not None:
                    return "choice", found
    return None
