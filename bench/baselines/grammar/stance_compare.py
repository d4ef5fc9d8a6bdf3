"""When two decision statements contradict each other, and why (:func:`conflict`).

Two claims can only meet when their scopes do: each scope dimension (environments, regions)
must be unqualified in both, or qualified in both with a common member. A claim qualified where
the other is not ("Use SQLite for the primary datastore in development" beside "Use PostgreSQL
as the primary datastore") is a *scoped exception*, never a contradiction; disjoint scopes
(development and production, the EU and the US) never meet.

Where they meet, they contradict when

1. **different choices for the same purpose**: both adopt (or require) a named option, the
   options differ, the purposes are the same (both written, equal content words after
   stemming, synonyms and generic words such as "primary" or "platform"), and neither
   statement also adopts the other's option;
2. **one rejects what the other adopts**: same option, one rejects it, and the rejection is at
   least as broad as the adoption (its purpose words a subset of the other's: "Do not use
   Redis" covers "Use Redis for sessions"; "Do not use Redis for sessions" does not cover a
   bare "Use Redis");
3. **the same policy with opposite force or incompatible values**: same option and purpose,
   one requires what the other makes optional; or both adopt it with different values of one
   kind ("for 30 days" vs "for 90 days", "in Q3" vs "to Q4") or different versions.

Everything else is compatible: the same option for another purpose ("Datadog for metrics" and
"for logs"), the same choice with more detail (a refinement), a narrower purpose (an exception
for one service), a pilot.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.text import terms

from .stance import Claim, Purpose, Stance
from .stance_scope import Scope
from .stance_terms import named
from .stance_words import (
    ADOPT,
    ALLOW,
    CLASS_NOUNS,
    INSTRUMENT_CLASSES,
    LIGHT_CLASSES,
    OPTIONAL,
    REJECT,
    REQUIRE,
    SYNONYMS,
    TRIAL,
)

#: Modes that commit to an option (allow and optional only permit it).
POSITIVE = frozenset({ADOPT, REQUIRE})
_VALUED = frozenset({ADOPT, REQUIRE, ALLOW})


@dataclass(frozen=True, slots=True)
class Conflict:
    """Why two statements contradict: ``kind`` is choice | rejection | force | value | version."""

    kind: str
    reason: str
    score: float


_SCORES = {"rejection": 0.95, "choice": 0.9, "force": 0.9, "value": 0.85, "version": 0.8}


def scope_covers(broad: Scope, narrow: Scope) -> bool:
    """Whether ``broad`` holds wherever ``narrow`` does (an unqualified dimension: everywhere)."""
    if broad.environments and not broad.environments & narrow.environments:
        return False
    return not broad.regions or (
        bool(narrow.regions) and _regions_meet(broad.regions, narrow.regions)
    )


def scopes_meet(x: Scope, y: Scope) -> bool:
    """Whether two scopes overlap (an unqualified dimension only meets another unqualified)."""
    if bool(x.environments) != bool(y.environments):
        return False
    if x.environments and not x.environments & y.environments:
        return False
    if bool(x.regions) != bool(y.regions):
        return False
    return not x.regions or _regions_meet(x.regions, y.regions)


def _regions_meet(xs: frozenset[str], ys: frozenset[str]) -> bool:
    for x in xs:
        for y in ys:
            (xc, _, xcode), (yc, _, ycode) = x.partition(":"), y.partition(":")
            if xc == yc and (not xcode or not ycode or xcode == ycode):
                return True
    return False


_CLASS_STEMS = {
    cls: frozenset(
        SYNONYMS.get(t, t) for t in terms(f"{INSTRUMENT_CLASSES[cls]} {CLASS_NOUNS.get(cls, '')}")
    )
    for cls in INSTRUMENT_CLASSES
}


_ALL_CLASS_NOUNS = frozenset(t for stems in _CLASS_STEMS.values() for t in stems)
_DERIVED = ("", "r", "er", "ing", "ment", "ion", "ation", "s")


def verb_nouns(verb: str) -> frozenset[str]:
    """Stems of the nouns a purpose verb goes by: its class's ("storage" for store) and its own
    derived forms ("bundler", "bundling" for bundle)."""
    verbs = INSTRUMENT_CLASSES.get(verb, verb).split()  # a class, or the stem of a verb
    derived = " ".join(v + end for v in verbs for end in _DERIVED)
    derived += " " + " ".join(v[:-1] + "ion" for v in verbs if v.endswith("e"))
    return _CLASS_STEMS.get(verb, frozenset({verb})) | frozenset(terms(derived))


def purpose_key(purpose: Purpose) -> str:
    """One string for every purpose :func:`same_purpose` can equate ("-": none written)."""
    if not purpose.stated:
        return "-"
    return " ".join(sorted(purpose.terms - _ALL_CLASS_NOUNS))


def _aligned(p: Purpose, q: Purpose) -> tuple[frozenset[str], frozenset[str]] | None:
    """The purposes' words made comparable, or ``None`` when their instrument verbs differ.

    A verb on one side only ("Store sessions in X") stands for its nouns on the other ("for
    session storage"): those nouns are set aside before comparing.
    """
    if p.verb is not None and q.verb is not None:
        return (p.terms, q.terms) if p.verb == q.verb else None
    if q.verb is not None:
        swapped = _aligned(q, p)
        return None if swapped is None else (swapped[1], swapped[0])
    if p.verb is None:
        return p.terms, q.terms
    nouns = verb_nouns(p.verb)
    if p.verb not in LIGHT_CLASSES and not q.terms & nouns:
        return None  # "Back up the ledger to S3" is not "Use PostgreSQL for the ledger"
    return p.terms - nouns, q.terms - nouns


def same_purpose(p: Purpose, q: Purpose, names: frozenset[str] = frozenset()) -> bool:
    """Both written, and the same content words (an instrument verb only if both say one).

    ``names``: words of the options compared, set aside too: "SQLAlchemy as the ORM for the
    Python services" and "Django ORM for the Python services" name one role.
    """
    aligned = _aligned(p, q)
    return (
        p.stated and q.stated and aligned is not None and aligned[0] - names == aligned[1] - names
    )


def within(universal: Purpose, member: Purpose) -> bool:
    """Whether ``member`` falls under a quantified purpose: "every event in the logistics
    domain" holds for "the logistics dispatch service's route-change events". The head noun
    and at least one more word must be shared (the verb's nouns count on the member's side)."""
    head = universal.universal
    if head is None or member.universal is not None:
        return False
    words = member.terms | (verb_nouns(member.verb) if member.verb else frozenset())
    verbs = {universal.verb, member.verb}
    if None not in verbs and len(verbs) == 2 and not verbs & LIGHT_CLASSES:
        return False
    return head in words and len(universal.terms & words) >= 2


def covers(broad: Purpose, narrow: Purpose) -> bool:
    """Whether a statement for ``broad`` also speaks of ``narrow`` (unstated: everything)."""
    aligned = _aligned(broad, narrow)
    return aligned is not None and aligned[0] <= aligned[1]


def _equal_purpose(p: Purpose, q: Purpose) -> bool:
    return (not p.stated and not q.stated) or same_purpose(p, q)


def _family(a: str, b: str) -> bool:
    """Options sharing a word ("GitHub" and "GitHub Actions", "p95 latency" and "p99
    latency"): parts or variants of one thing, not rivals."""
    return bool(set(a.split()) & set(b.split()))


def _for(claim: Claim) -> str:
    text = claim.purpose.text.strip()
    return f" {text}" if text.startswith(("for ", "as ")) else f" for {text}" if text else ""


def _values_clash(x: Claim, y: Claim) -> tuple[str, str] | None:
    mine: dict[str, set[str]] = {}
    for dimension, value, _ in x.values:
        mine.setdefault(dimension, set()).add(value)
    theirs: dict[str, set[str]] = {}
    for dimension, value, _ in y.values:
        theirs.setdefault(dimension, set()).add(value)
    for dimension in sorted(mine.keys() & theirs.keys()):
        if mine[dimension] != theirs[dimension]:
            ours = ", ".join(s for d, _, s in x.values if d == dimension)
            others = ", ".join(s for d, _, s in y.values if d == dimension)
            return ours, others
    return None


def _versions_clash(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    return not (a.startswith(b) or b.startswith(a))


def _same_option(x: Claim, y: Claim) -> Conflict | None:
    name = x.option.name
    modes = {x.mode, y.mode}
    if REJECT in modes:
        if modes == {REJECT}:
            return None
        no, yes = (x, y) if x.mode == REJECT else (y, x)
        if (
            covers(no.purpose, yes.purpose)
            and no.details <= yes.details
            and scope_covers(no.scope, yes.scope)
        ):
            verb = {ALLOW: "allowed", REQUIRE: "required", OPTIONAL: "made optional"}
            said = verb.get(yes.mode, "adopted")
            return _make("rejection", f"{name}{_for(yes)}: {said} by one, rejected by the other")
        return None
    if not scopes_meet(x.scope, y.scope):
        return None
    if not _equal_purpose(x.purpose, y.purpose) or x.details != y.details:
        return None
    if modes == {REQUIRE, OPTIONAL}:
        return _make("force", f"{name}{_for(x)}: required by one, optional in the other")
    if x.mode in POSITIVE and y.mode in POSITIVE:
        clash = _values_clash(x, y)
        if clash is not None:
            return _make("value", f"{name}{_for(x)}: {clash[0]} vs {clash[1]}")
        base = name.rsplit(" ", 1)[0]  # the name without its version
        # Only a product's version: "PostgreSQL 16", "Node.js 18"; a trailing number on a
        # description ("the session cache layout (heron 21)") is a label.
        if _versions_clash(x.option.version, y.option.version) and named(base.split()):
            versions = f"{x.option.version} vs {y.option.version}"
            return _make("version", f"different versions of {base}{_for(x)}: {versions}")
    return None


def _make(kind: str, reason: str) -> Conflict:
    return Conflict(kind, reason, _SCORES[kind])


def _pair(a: Stance, b: Stance, x: Claim, y: Claim) -> Conflict | None:
    if TRIAL in (x.mode, y.mode):
        return None
    if (
        x.signature
        and x.signature == y.signature
        and x.mode in _VALUED
        and y.mode in _VALUED
        and scopes_meet(x.scope, y.scope)
        and (clash := _values_clash(x, y)) is not None
    ):  # "The Pro plan costs $29 per seat" / "Price the Pro plan at $35 per seat"
        return _make("value", f"{x.option.name}{_for(x)}: {clash[0]} vs {clash[1]}")
    if x.option.key == y.option.key:
        return _same_option(x, y)
    names = frozenset(x.option.key.split()) | frozenset(y.option.key.split())
    if (
        x.mode in POSITIVE
        and y.mode in POSITIVE
        and scopes_meet(x.scope, y.scope)
        and not (x.option.action or y.option.action)
        and (
            same_purpose(x.purpose, y.purpose, names)
            or within(x.purpose, y.purpose)
            or within(y.purpose, x.purpose)
        )
        and not _family(x.option.key, y.option.key)
        and _squash(x.option.name) != _squash(y.option.name)
        and not _shared_choice(a, b)
    ):
        rivals = f"{x.option.name} vs {y.option.name}"
        return _make("choice", f"different choice{_for(x)}: {rivals}")
    return None


def _squash(name: str) -> str:
    """A name without case, spaces or punctuation: "HMAC-SHA256" and "HMAC SHA-256" agree."""
    return "".join(c for c in name.lower() if c.isalnum())


def _shared_choice(a: Stance, b: Stance) -> bool:
    """Whether the two statements adopt a common option (then they are not rivals)."""
    ours = {c.option.key for c in a.claims if c.mode in POSITIVE}
    return any(c.mode in POSITIVE and c.option.key in ours for c in b.claims)


def conflict(a: Stance, b: Stance) -> Conflict | None:
    """The strongest contradiction between two stances, or ``None`` when they are compatible.

    Symmetric up to the wording of the reason, deterministic, and pure.
    """
    best: Conflict | None = None
    for x in a.claims:
        for y in b.claims:
            found = _pair(a, b, x, y)
            if found is not None and (best is None or found.score > best.score):
                best = found
    return best
