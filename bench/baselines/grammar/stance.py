"""A decision statement read as a stance: what it chooses or rejects, for what, and where.

The parse reads only the statement (never its context) and knows English, not products: the
option is whatever the grammar puts in the option's place ("Use ___ for P", "P goes to ___",
"Write P in ___", "___ is not allowed"), so a name it has never seen parses like a famous one.
A statement becomes one or more :class:`Claim` s:

* ``mode``: adopt, require, allow, optional, reject or trial (a pilot commits to nothing);
* ``option``: the thing chosen or rejected, normalised (case, determiners, a trailing version
  as in "PostgreSQL 16", a vendor prefix, a generic head noun as in "EC2 VMs", a few aliases
  such as k8s). A statement without a named option ("Deploy on Fridays") claims an *action*;
* ``purpose``: what the option is for ("for payment events", "as the primary datastore",
  the object of "Write the billing service in Go"), as stemmed content words without generic
  nouns ("primary", "system", "platform"...);
* ``details`` (other qualifiers: "with pgBouncer", "on Fridays"), ``values`` ("for 30 days",
  "in Q3") and ``scope`` (environments, regions, named targets; :mod:`.stance_scope`).

"X over/instead of/rather than Y" and "Replace Y with X" give a rejected Y beside the adopted X;
"Do not use X ...; use Y" gives two claims sharing one purpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from .stance_phrases import modifiers, split_phrases, unwrap
from .stance_scope import Scope, Value, take_scope_and_values
from .stance_subject import SubjectFirst, subject_first
from .stance_terms import (
    FILLER_TABLE,
    FIRST_WORDS,
    NEGATION_TABLE,
    TOKEN,
    VERBS,
    Option,
    Purpose,
    content_terms,
    is_target,
    lemma,
    make_option,
    match_phrase,
    named,
    options_of,
    purpose_of,
    stem,
    time_terms,
)
from .stance_words import (
    ADOPT,
    ALLOW,
    DETERMINERS,
    ENVIRONMENTS,
    INSTRUMENT_PREPS,
    INSTRUMENT_VERBS,
    OPTIONAL,
    REASON,
    REJECT,
    REQUIRE,
    TRIAL,
    VALUE_VERBS,
)

__all__ = ["Claim", "Option", "Purpose", "Scope", "Stance", "parse"]


@dataclass(frozen=True, slots=True)
class Claim:
    mode: str
    option: Option
    purpose: Purpose = field(default_factory=Purpose)
    scope: Scope = field(default_factory=Scope)
    details: frozenset[str] = frozenset()
    values: tuple[Value, ...] = ()
    #: What the clause's values are values of: its content words without verbs of choice or
    #: of setting ("Keep logs for 30 days" and "Retain logs for 90 days": {"log"}).
    signature: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Stance:
    """Every claim of one statement."""

    text: str
    claims: tuple[Claim, ...]

    def options(self, *modes: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.option.name for c in self.claims if c.mode in modes))

    @property
    def chosen(self) -> tuple[str, ...]:
        return self.options(ADOPT, REQUIRE)

    @property
    def rejected(self) -> tuple[str, ...]:
        return self.options(REJECT)

    @property
    def subject(self) -> frozenset[str]:
        return frozenset(t for c in self.claims for t in c.purpose.terms)

    @property
    def scope(self) -> Scope:
        return Scope(
            frozenset(e for c in self.claims for e in c.scope.environments),
            frozenset(r for c in self.claims for r in c.scope.regions),
            frozenset(t for c in self.claims for t in c.scope.targets),
        )


_MODE_WORDS = {
    "optional": OPTIONAL,
    "voluntary": OPTIONAL,
    "mandatory": REQUIRE,
    "required": REQUIRE,
    "compulsory": REQUIRE,
    "enabled": ADOPT,
    "disabled": REJECT,
    "default": ADOPT,
}
_NEGATED = {ADOPT: REJECT, REQUIRE: OPTIONAL, ALLOW: REJECT, REJECT: ADOPT, TRIAL: REJECT}


# -- clauses -----------------------------------------------------------------------------------
_CLAUSE_SPLIT = re.compile(r"(?:[.;!?](?:\s+|$)|\n+|,?\s+but\s+|\s*;\s*)", re.IGNORECASE)
_AND_VERB = re.compile(
    r",?\s+(?:and|then)\s+(?=(?:do not|don't|never|no longer|use|adopt|drop|avoid|keep|move|"
    r"migrate|switch|retire|remove|stop|replace|require|allow|ban|disable|enable|run|deploy|"
    r"write|store|send|standardi[sz]e)\b)|,\s+(?=(?:do not|don't|never|use|adopt|drop|avoid|"
    r"retire|remove|stop|replace|ban)\b)",
    re.IGNORECASE,
)


@dataclass
class _Frame:
    """One clause being read: its words and everything found so far."""

    words: list[str]
    scope: Scope
    values: tuple[Value, ...]
    subject: list[str] = field(default_factory=list)  # a subject-first statement's subject

    @property
    def low(self) -> list[str]:
        return [w.lower().replace("\u2019", "'") for w in self.words]


_Chunks = list[tuple[str, list[str]]]


def _reshape(
    mode: str, verb: str, kind: str, rest: list[str]
) -> tuple[str, str, list[str], _Chunks]:
    """The mode, the kind of verb phrase, its object and its modifiers, after the shapes that
    move them: "Keep user profiles in PostgreSQL" (the option is where they are kept), "Make
    us-west-2 the primary region", "Make MFA optional"."""
    head, chunks = unwrap(*split_phrases(rest))
    if (
        kind == "choice"
        and head
        and (verb in INSTRUMENT_VERBS or head[0].lower() in DETERMINERS)
        and not named(head)
        and any(p in INSTRUMENT_PREPS - {"to"} and named(w) for p, w in chunks)
    ):
        kind = "instrument"
    if verb in {"make", "declare", "set", "mark"} and kind == "choice":
        for at in range(1, len(head)):
            if head[at].lower() in {"the", "our", "a", "an"}:
                chunks = [("as", head[at + 1 :]), *chunks]
                head = head[:at]
                break
    if kind in {"choice", "reject", "require", "allow", "trial"} and len(head) > 1:
        adjective = _MODE_WORDS.get(head[-1].lower())
        if adjective is not None:
            head, mode = head[:-1], adjective if mode != REJECT else _NEGATED[adjective]
    return mode, kind, head, chunks


def _claims(frame: _Frame, mode: str, verb: str, kind: str, rest: list[str]) -> list[Claim]:
    """The claims of a verb phrase: ``verb`` of ``kind`` followed by ``rest``."""
    mode, kind, head, chunks = _reshape(mode, verb, kind, rest)
    mods = modifiers(chunks, kind)
    purpose_words = list(mods.purpose_words)
    if not purpose_words and mods.infinitive:
        purpose_words = mods.infinitive
    instrument_class = None
    if kind == "replace":
        rejected, adopted = head, list[str]()
        for prep, words in chunks:
            if prep in {"with", "by"} and not adopted:
                adopted = words
                mods = modifiers([c for c in chunks if c[1] is not words], kind)
        purpose_words = mods.purpose_words or mods.infinitive
        targets: list[tuple[str, list[str]]] = [(REJECT, rejected), (ADOPT, adopted)]
    elif kind in {"instrument", "migrate"} and mods.instrument is not None:
        instrument_class = None
        if kind != "migrate" and verb not in _NEUTRAL_VERBS:
            instrument_class = INSTRUMENT_VERBS.get(verb) or stem(verb)
        purpose_words = head + mods.object_words + purpose_words
        targets = [(mode, mods.instrument)] + [(_NEGATED[mode], s) for s in mods.sources]
        if is_target(head):
            mods.targets.add(" ".join(sorted(content_terms(head))))
    elif kind in {"instrument", "migrate", "reschedule", "general"}:
        action = make_option([verb, *head] if kind in {"instrument", "general"} else head, True)
        if action is None:
            return []
        option, count = action
        details = content_terms(mods.detail_words) | time_terms(rest)
        values = frame.values + ((count,) if count else ())
        purpose = _purpose(frame, None, purpose_words, mods.purpose_text)
        scope = _with_targets(frame.scope, mods.targets)
        return [Claim(mode, option, purpose, scope, details, values)]
    else:
        targets = [(mode, head)]
    if kind != "replace":
        alt_mode = ADOPT if mode == REJECT else REJECT
        targets += [(alt_mode, words) for words in mods.alternatives]
    purpose = _purpose(frame, instrument_class, purpose_words, mods.purpose_text)
    details = content_terms(mods.detail_words) | time_terms(mods.detail_words)
    scope = _with_targets(frame.scope, mods.targets)
    out = []
    for claim_mode, words in targets:
        for option, count in options_of(words):
            values = frame.values + ((count,) if count else ())
            out.append(Claim(claim_mode, option, purpose, scope, details, values))
    return out


def _purpose(frame: _Frame, verb: str | None, words: list[str], text: list[str]) -> Purpose:
    """The purpose of a claim; a subject-first statement's subject is part of it, whole."""
    if not frame.subject:
        return purpose_of(verb, words, text)
    return purpose_of(verb, words + frame.subject, [*text, " ".join(frame.subject)])


def _with_targets(scope: Scope, targets: set[str]) -> Scope:
    if not targets:
        return scope
    return Scope(scope.environments, scope.regions, frozenset(targets - {""}))


def _parse_words(frame: _Frame) -> list[Claim]:
    words, low = frame.words, frame.low
    i, negated = 0, False
    while i < len(words):
        if (neg := match_phrase(low, i, NEGATION_TABLE)) is not None:
            negated, i = True, i + neg[1]
        elif (filler := match_phrase(low, i, FILLER_TABLE)) is not None:
            i += filler[1]
        else:
            break
    if i >= len(words):
        return []
    if low[i] in {"no", "zero"} and i + 1 < len(words):
        return _claims(frame, REJECT, "no", "reject", words[i + 1 :])
    if low[i] not in FIRST_WORDS:  # "Deploys are not allowed", not "Deploy on Fridays"
        found = subject_first(" ".join(words[i:]))
        if found is not None:
            return _subject_claims(frame, found, negated)
    first = lemma(low[i])
    verb = match_phrase([first, *low[i + 1 :]], 0, VERBS)
    if verb is not None:
        kind, size = verb
        rest = words[i + size :]
        mode = {
            "choice": ADOPT,
            "reject": REJECT,
            "require": REQUIRE,
            "allow": ALLOW,
            "trial": TRIAL,
        }.get(kind, ADOPT)
        if kind == "reject" and rest and rest[0].lower().endswith("ing") and rest[0].islower():
            return _claims(frame, REJECT, lemma(rest[0]), _verb_kind(lemma(rest[0])), rest[1:])
        if kind == "make":
            kind = "choice"
        if negated:
            mode = _NEGATED.get(mode, REJECT)
        if kind in {"allow", "require"} and (split := _agent_split(first, rest)) is not None:
            return _agent_claims(frame, mode, *split)
        return _claims(frame, mode, first, kind, rest)
    kind = _verb_kind(first)
    return _claims(frame, REJECT if negated else ADOPT, first, kind, words[i + 1 :])


def _agent_split(verb: str, rest: list[str]) -> tuple[list[str], list[str]] | None:
    """Who is allowed (or required) and the action: "Let users delete their account",
    "Allow personal laptops to access the VPN", "Require all engineers to use MFA"."""
    if verb == "let":
        start = 0
        while start < len(rest) - 1 and rest[start].lower() in DETERMINERS:
            start += 1
        return (rest[: start + 1], rest[start + 1 :]) if start + 1 < len(rest) else None
    for at in range(1, len(rest) - 1):
        after = rest[at + 1]
        if (
            rest[at].lower() == "to"
            and after.isalpha()
            and after.islower()
            and after not in DETERMINERS
            and after not in ENVIRONMENTS
            and not (after.endswith("s") and not after.endswith("ss"))  # "to users": a noun
        ):
            return rest[:at], rest[at + 1 :]
    return None


def _agent_claims(frame: _Frame, mode: str, agent: list[str], action: list[str]) -> list[Claim]:
    claims = _parse_words(_Frame(action, frame.scope, frame.values, agent))
    return [replace(c, mode=mode) if c.mode == ADOPT else c for c in claims]


def _verb_kind(verb: str) -> str:
    if verb in INSTRUMENT_VERBS:
        return "instrument"
    found = match_phrase([verb], 0, VERBS)
    return found[0] if found is not None and found[0] != "make" else "instrument"


_NEUTRAL_VERBS = frozenset(
    ["use", "go", "live", "sit", "flow", "land", "belong", "move", "stay", "remain", "be"]
)


def _subject_claims(frame: _Frame, found: SubjectFirst, negated: bool) -> list[Claim]:
    """Claims of a subject-first statement (see :mod:`.stance_subject`)."""
    negated = negated != found.negated
    subject, rest = found.subject.split(), found.rest.split()
    if found.form == "predicate":  # "X is not allowed for P", "MFA is optional for admins"
        mode = _NEGATED.get(found.predicate, REJECT) if negated else found.predicate
        return _claims(frame, mode, "use", "choice", subject + rest)
    if found.form == "modal":  # "Analysts may create tables": the subject is the purpose
        words = (["not"] if negated else []) + rest
        claims = _parse_words(_Frame(words, frame.scope, frame.values, subject))
        if found.predicate == ALLOW:
            claims = [replace(c, mode=ALLOW) if c.mode == ADOPT else c for c in claims]
        return claims
    if found.form == "verb":  # "Admin accounts require MFA": the subject is the purpose
        words = (["not"] if negated else []) + found.predicate.split() + rest
        return _parse_words(_Frame(words, frame.scope, frame.values, subject))
    mode = REJECT if negated else ADOPT
    if found.form == "role":  # "PostgreSQL is the primary datastore"
        return _claims(frame, mode, "use", "choice", [*subject, "as", *rest])
    if found.form == "bare":  # "The rate limit is [1,000 requests per minute] per key"
        return _claims(frame, mode, "use", "choice", [*subject, *rest])
    about = _Frame(frame.words, frame.scope, frame.values, subject)
    if found.form == "reverse":  # "The primary datastore is PostgreSQL"
        return _claims(about, mode, "use", "choice", rest)
    verb = lemma(found.predicate)
    if found.form == "svo":  # "The ledger service writes its rows to the datastore"
        return _claims(about, mode, verb, _verb_kind(verb), rest)
    return _claims(about, mode, verb, "instrument", ["with", *rest])


_SIGNATURE_DROP = frozenset(
    {stem(phrase[0]) for phrase in VERBS} | {stem(word) for word in VALUE_VERBS}
)


def _parse_clause(clause: str) -> list[Claim]:
    text, scope, values = take_scope_and_values(clause)
    if ":" in text:
        left, right = text.split(":", 1)
        if right.strip() and len(left.split()) <= 6:
            inner = _parse_clause(right)
            if inner and any(lemma(w) in FIRST_WORDS for w in right.split()[:3]):
                return inner
            purpose = purpose_of(None, TOKEN.findall(left), [left.strip()])
            found = options_of(TOKEN.findall(right))
            return [Claim(ADOPT, o, purpose, scope, frozenset(), values) for o, _ in found]
    words = TOKEN.findall(text)
    claims = _parse_words(_Frame(words, scope, values)) if words else []
    if any(c.values for c in claims):
        signature = content_terms(words) - _SIGNATURE_DROP
        claims = [replace(c, signature=signature) if c.values else c for c in claims]
    return claims


_PAREN_VALUE = re.compile(r"\(\s*((?:[^()\s]+\s*){0,4}?\d(?:[^()\s]*\s*){0,4})\)")


def _inherit(claim: Claim, last: Claim) -> Claim:
    """A clause without a purpose (or scope) takes the previous one's: "Do not use X for P;
    use Y" adopts Y for P."""
    if not claim.purpose.stated and last.purpose.stated:
        claim = replace(claim, purpose=last.purpose)
    if not claim.scope and last.scope:
        claim = replace(claim, scope=last.scope)
    return claim


@lru_cache(maxsize=16384)
def parse(text: str) -> Stance:
    """The stance of a decision statement (pure and cached: the same text, the same stance)."""
    claims: list[Claim] = []
    text = _PAREN_VALUE.sub(r" \1 ", text)  # "(100 %)": a value, not an aside
    for part in _CLAUSE_SPLIT.split(text):
        reason = REASON.search(part)
        sentence = (part if reason is None else part[: reason.start()]).strip()
        for clause in _AND_VERB.split(sentence):
            for found in _parse_clause(clause.strip()):
                claims.append(_inherit(found, claims[-1]) if claims else found)
    return Stance(text, tuple(dict.fromkeys(claims)))
