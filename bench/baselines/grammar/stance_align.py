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

from retrieval.text import STOPWORDS, terms

from .stance import Stance, parse
from .stance_align_words import (
    ALTERNATIVE,
    CLAUSES,
    GENERIC_WORDS,
    HOW_WORDS,
    NEGATING,
    NEGATING_PAIRS,
    OPPOSITE_STEMS,
    TRIAL,
    VALUE_RELATION,
    stems,
)
from .stance_scope import Scope, take_scope_and_values
from .stance_terms import TOKEN, lemma, named
from .stance_traits import different_acts, permits_only, universal_heads
from .stance_values import DAY_NAMES, NUMBER, read_values
from .stance_words import (
    ALIASES,
    ENVIRONMENTS,
    NUMBER_WORDS,
    REGIONS,
    REJECT,
    SYNONYMS,
    UNITS,
    WEEKDAYS,
)

__all__ = [
    "AlignedClause",
    "align_conflict",
    "clauses",
    "different_acts",
    "refinement",
    "subject_terms",
]


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
    #: The names one by one: stems of runs of adjacent name-like words ("Argo CD": one).
    name_groups: tuple[frozenset[str], ...] = ()


def _name_like(word: str, first: bool) -> bool:
    if word.lower() in ALIASES or any(c.isdigit() for c in word):
        return True
    if re.search(r"\w[.+#/_=]\w", word):
        return True
    upper = [c for c in word[1:] if c.isupper()]
    if upper:
        return True  # "GitOps", "JAX", "iOS" (not only a capital first letter)
    return word[:1].isupper() and not first and word.lower() not in WEEKDAYS


def _clause(raw: str) -> AlignedClause | None:
    low = raw.lower().replace("\u2019", "'").replace("n't", " not")
    # Negations cancel in pairs: "never ship X without Y" asks for Y.
    negations = sum(low.count(p) for p in NEGATING_PAIRS)
    pair_words = {w for p in NEGATING_PAIRS if p in low for w in p.split()}
    text = ALTERNATIVE.sub(" ", raw)
    text, values = read_values(text)
    text, scope, found = take_scope_and_values(text)
    # A count is a number whatever it counts ("3 projects" may parse as a count or not).
    values += [("number" if d.startswith("count:") else d, v) for d, v, _ in found]
    content: set[str] = set()
    names: list[tuple[int, list[str]]] = []  # (position, stems) of each name-like word
    places: dict[str, set[str]] = {"environments": set(), "regions": set()}
    trial = False
    words = [w for w in TOKEN.findall(text) if w != ","]
    for at, word in enumerate(words):
        low_word = word.lower().replace("\u2019", "'").strip("'\"")
        if low_word.endswith("'s"):
            low_word = low_word[:-2]
        base = lemma(low_word)
        if low_word in pair_words:
            continue  # part of a negating phrase ("turn off"), counted above
        if base in NEGATING or low_word in NEGATING:
            negations += 1
            continue
        scoped = _scope_word(word)
        if scoped is not None:
            places[scoped[0]].add(scoped[1])
            continue
        if base in TRIAL and at <= 1 and base == low_word:  # "Pilot X"; not "Trials last"
            trial = True
        number = _number(low_word)
        if number is not None:
            if _value_position(words, at):
                values.append(("number", number))
            continue
        if low_word in UNITS or low_word.rstrip("s") in DAY_NAMES:
            continue  # a unit without its number, or a day already read by _days
        if base in HOW_WORDS or low_word in HOW_WORDS or low_word in STOPWORDS:
            continue
        folded = [SYNONYMS.get(t, t) for t in terms(low_word.replace("-", " "))]
        kept = [t for t in folded if t and t not in GENERIC_WORDS and t not in HOW_WORDS]
        content.update(kept)
        if _name_like(word, at == 0) and kept:
            names.append((at, kept))
    if not content:
        return None
    scope = Scope(
        scope.environments | frozenset(places["environments"]),
        scope.regions | frozenset(places["regions"]),
        scope.targets,
    )
    groups = _name_groups(names)
    return AlignedClause(
        negations % 2 == 1,
        frozenset(content),
        frozenset(t for g in groups for t in g),
        tuple(sorted(set(values))),
        scope,
        trial,
        _acronyms(words),
        groups,
    )


#: Words after which a number is a value ("to 10", "is 0.8", "at 50").
_VALUE_LEAD = frozenset(["to", "at", "is", "are", "be", "of", "=", "from", "by", "than"])


def _value_position(words: list[str], at: int) -> bool:
    """Whether the number at ``words[at]`` is a value, not a label: a version ("3.12", "Java
    17"), a count of something ("3 projects", "two reviews") or a setting ("to 10"); never
    "Decision 5 from client 5", "batch 3 of the ledger" or "(cedar 5)"."""
    word = words[at]
    if "." in word.strip("."):
        return True  # "3.12", "0.8"
    before = words[at - 1] if at > 0 else ""
    after = words[at + 1] if at + 1 < len(words) else ""
    if before.lower() in _VALUE_LEAD:
        return True
    if after.isalpha() and after.lower() not in STOPWORDS and (after.islower() or after.isupper()):
        return True  # a count ("3 projects", "two approving reviews") or "18 LTS"
    return at - 1 > 0 and _name_like(before, False)  # "Java 17", "iOS 15" (not the opening word)


def _number(word: str) -> str | None:
    """A bare number ("3.12", "200") or a number word ("two": "2")."""
    if NUMBER.match(word):
        return word
    return str(NUMBER_WORDS[word]) if word in NUMBER_WORDS else None


def _name_groups(names: list[tuple[int, list[str]]]) -> tuple[frozenset[str], ...]:
    """Stems of adjacent name-like words joined into one name each ("Argo CD": one)."""
    groups: list[set[str]] = []
    last = -2
    for at, parts in names:
        if at == last + 1:
            groups[-1].update(parts)
        else:
            groups.append(set(parts))
        last = at
    return tuple(frozenset(g) for g in groups)


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
    parts = [p for p in CLAUSES.split(text) if p and p.strip()]
    found = [c for c in (_clause(p) for p in parts) if c is not None]
    # A single word the grammar puts in an option's place names a thing even in lower case
    # ("npm", "black", "webpack"); a longer lower-case option ("two approving reviews") is
    # a description, not a name.
    options = frozenset(
        t
        for claim in parse(text).claims
        if not claim.option.action and len(claim.option.name.split()) == 1
        for t in stems(claim.option.name)
        if t not in GENERIC_WORDS
    )
    out = []
    for c in found:
        extra = (c.content & options) - c.named
        groups = c.name_groups + tuple(frozenset({t}) for t in sorted(extra))
        out.append(replace(c, named=c.named | extra, name_groups=groups))
    return tuple(out)


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
    if only_x and only_y and ((only_x & x.named) or (only_y & y.named)):
        return None  # each says something else, one of it a name: another statement
    extra = sorted((len(only_x), len(only_y)))
    # Up to one word of difference on each side (another verb for one act: "query" and
    # "access"), or two on one side when the other has none.
    if len(shared) >= 2 and (extra[1] <= 1 or (extra[0] == 0 and extra[1] <= 2)):
        return f"one says not to, the other to: {' '.join(sorted(shared))}"
    return None


def _value(x: AlignedClause, y: AlignedClause) -> str | None:
    mine, theirs = _dimensions(x), _dimensions(y)
    clash = sorted(d for d in mine.keys() & theirs.keys() if mine[d] != theirs[d])
    if not clash:
        return None
    xs, ys = x.content - VALUE_RELATION, y.content - VALUE_RELATION
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


_OPPOSITE_WORDS = frozenset(t for pair in OPPOSITE_STEMS for side in pair for t in side)


def _opposed(only_x: frozenset[str], only_y: frozenset[str]) -> frozenset[str] | None:
    """The words of an opposite pair that one side has and the other replaces, if any."""
    if only_x.isdisjoint(_OPPOSITE_WORDS) or only_y.isdisjoint(_OPPOSITE_WORDS):
        return None  # the common case, in one set lookup per word
    for a, b in OPPOSITE_STEMS:
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
    # Besides the names, each side may say one word more ("Flux as the GitOps controller"
    # beside "Argo CD for GitOps"); more, and the names may fill different roles.
    extra = sorted((len(only_x - named_x), len(only_y - named_y)))
    if extra[1] > 1:
        return None
    mine, theirs = _dimensions(x), _dimensions(y)
    # Other names with other prices, sizes or durations are other subjects ("the Pro plan at
    # $35"); bare numbers are often the names' own versions ("Ubuntu 22.04", "Debian 12").
    if any(mine[d] != theirs[d] for d in (mine.keys() & theirs.keys()) - {"number"}):
        return None
    if (only_x & y.acronyms) or (only_y & x.acronyms):
        return None  # "FCM" beside "Firebase Cloud Messaging": one name, two spellings
    if x.named and sorted("".join(x.named)) == sorted("".join(y.named)):
        return None  # "HMAC-SHA256" and "HMAC SHA-256": the same letters, split otherwise
    # The names aside, most of what the two say must be shared: "the public API" in "JSON
    # fields in the public API are camelCase" and "Document the public API with OpenAPI" is a
    # topic they share, not one sentence with another name in it.
    frame = (x.content | y.content) - named_x - named_y
    if extra[0] > 0 and len(shared) < 0.6 * len(frame):
        return None
    # Two names swapped on each side ("Lint Python code with ruff" / "Lint Go code with
    # golangci-lint"): the subject changed with the tool, so they are not rivals.
    if _groups(x, named_x) > 1 and _groups(y, named_y) > 1:
        return None
    rivals = f"{' '.join(sorted(named_x))} vs {' '.join(sorted(named_y))}"
    return f"different choice for {' '.join(sorted(shared))}: {rivals}"


def _groups(c: AlignedClause, names: frozenset[str]) -> int:
    """How many separate names of ``c`` the words ``names`` belong to."""
    return sum(1 for g in c.name_groups if g & names) or len(names & c.named)


def _adopts(stance: Stance, cls: tuple[AlignedClause, ...], option: frozenset[str]) -> bool:
    """Whether a statement adopts an option named by ``option``'s stems (by its parse, or, when
    the parse names no such option, by a clause that mentions it and is not negated)."""
    if any(c.mode == REJECT and set(c.option.key.split()) & option for c in stance.claims):
        return False  # the statement itself rejects it ("Stop using X; move to Y")
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
            option -= GENERIC_WORDS
            if not option or not _adopts(yes, yes_clauses, option):
                continue
            # A thing, not an act: a name ("Replace Trivy ..."), or what the other statement's
            # grammar also puts in an option's place ("black" in "Format code with black");
            # "Block merges" rejects no option "Squash-merge pull requests" adopts.
            words_of_option = claim.option.name.split()
            explicit = any(
                claim.option.name.lower() in m.group(0).lower()
                for m in ALTERNATIVE.finditer(no_text)
            )  # "... instead of the URL path": said in so many words
            rejected_key = set(claim.option.key.split())
            if (
                not explicit
                and not named(words_of_option)
                and not any(
                    c.mode != REJECT
                    and not c.option.action
                    and set(c.option.key.split()) == rejected_key
                    for c in yes.claims
                )
            ):
                continue
            # What the rejection is qualified by must hold for the adoption too: "No PII in
            # logs" says nothing of "Mask PII in the warehouse". ("with a shared API key
            # instead of mTLS" qualifies the alternative, not the rejection.)
            details = frozenset(t for d in claim.details for t in terms(d))
            words = frozenset(t for c in yes_clauses for t in c.content)
            if details and not explicit and not details & words:
                continue
            purpose = claim.purpose.terms
            words = frozenset(t for c in yes_clauses for t in c.content)
            # For the same purpose, or for a member of what the other rules for all ("Every
            # team deploys with X" / "The search team deploys with Y instead of X").
            member = universal_heads(yes_text) & frozenset(terms(claim.purpose.text))
            if purpose and not purpose & words and not member:
                continue
            scoped = claim.scope.environments or claim.scope.regions
            if scoped and not any(_scopes_meet(claim.scope, c.scope) for c in yes_clauses):
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
    # Permitting one thing does not contradict choosing another ("Accept passkeys as the second
    # factor" beside "Require MFA"): a permission meets a choice only by negation or rejection.
    permissive = permits_only(a) or permits_only(b)
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
            if not _refines(ca, cb) and not different_acts(a, b) and not permissive:
                found = _substitution(x, y)
                if found is not None:
                    return "choice", found
    return None
