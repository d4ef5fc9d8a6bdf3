"""Words of a decision statement: tokens, verbs, option names and purpose terms.

The pieces :mod:`.stance` assembles into claims. An option's *key* is its identity: casefolded,
stemmed words without determiners, a trailing version ("PostgreSQL 16" is PostgreSQL, version
16), a vendor prefix ("Apache Kafka"), a generic head noun ("EC2 VMs") or a spelling variant
(:data:`~.stance_words.ALIASES`). A purpose is its content words, stemmed, with synonyms folded
and generic words ("primary", "platform", "all") left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.text import STOPWORDS, terms

from .stance_scope import Value
from .stance_words import (
    ALIASES,
    ALLOW_VERBS,
    ALTERNATIVE_PREPS,
    CHOICE_VERBS,
    DETERMINERS,
    FILLER,
    GENERIC,
    INSTRUMENT_VERBS,
    MONTHS,
    NEGATIONS,
    NUMBER_WORDS,
    OPTION_TAILS,
    PREPOSITIONS,
    REJECT_VERBS,
    REPLACE_VERBS,
    REQUIRE_VERBS,
    RESCHEDULE_VERBS,
    SYNONYMS,
    TARGET_HEADS,
    TRIAL_VERBS,
    VENDORS,
    WEEKDAYS,
)


@dataclass(frozen=True, slots=True)
class Option:
    """A chosen or rejected thing: ``key`` is its identity, ``name`` as written."""

    key: str
    name: str
    version: str | None = None
    action: bool = False  # an action ("deploy"), not a named choice


@dataclass(frozen=True, slots=True)
class Purpose:
    """What an option is for. ``verb`` is the instrument class ("run", "write") when the
    statement's verb says it ("Deploy X on K8s"); ``stated``: a purpose was written at all."""

    verb: str | None = None
    terms: frozenset[str] = frozenset()
    stated: bool = False
    text: str = ""
    #: The head of a quantified purpose ("every event in the logistics domain": "event").
    universal: str | None = None


TOKEN = re.compile(r"[$€£]?\w(?:[\w.+#/'\u2019-]*[\w+#])?|,")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)*(?:\.x|\+|x)?$|^(?:lts|latest)$", re.IGNORECASE)
_PRONOUNS = frozenset(
    ["it", "this", "that", "them", "these", "those", "they", "everything", "anything", "something"]
)


def _table(*groups: tuple[tuple[str, ...], str]) -> dict[tuple[str, ...], str]:
    table: dict[tuple[str, ...], str] = {}
    for phrases, kind in groups:
        for phrase in phrases:
            table.setdefault(tuple(phrase.split()), kind)
    return table


VERBS = _table(
    (REPLACE_VERBS, "replace"),
    (CHOICE_VERBS, "choice"),
    (REJECT_VERBS, "reject"),
    (REQUIRE_VERBS, "require"),
    (ALLOW_VERBS, "allow"),
    (TRIAL_VERBS, "trial"),
    (RESCHEDULE_VERBS, "reschedule"),
    (("migrate", "switch", "port", "transition", "upgrade", "convert", "shift", "move"), "migrate"),
    (("make", "set", "mark", "declare"), "make"),
)
FIRST_WORDS = {p[0] for p in VERBS} | set(INSTRUMENT_VERBS)
FILLER_TABLE = _table((FILLER, "filler"), (("always", "only", "strictly", "officially"), "filler"))
NEGATION_TABLE = _table((NEGATIONS, "neg"))
ALTERNATIVE_TABLE = _table((ALTERNATIVE_PREPS, "alt"))
BOUNDARY = PREPOSITIONS | {p[0] for p in ALTERNATIVE_TABLE if len(p) == 1}


_FIRSTS: dict[int, frozenset[str]] = {}


def match_phrase(
    low: list[str], at: int, table: dict[tuple[str, ...], str]
) -> tuple[str, int] | None:
    """The longest phrase of ``table`` starting at ``low[at]``: its kind and length."""
    firsts = _FIRSTS.get(id(table))
    if firsts is None:
        firsts = _FIRSTS[id(table)] = frozenset(p[0] for p in table)
    if at >= len(low) or low[at] not in firsts:
        return None
    for size in (4, 3, 2, 1):
        phrase = tuple(low[at : at + size])
        if len(phrase) == size and phrase in table:
            return table[phrase], size
    return None


#: Inflectional endings and what replaces them: "using" -> "use", "relies" -> "rely".
_INFLECTIONS = (
    ("ies", "y"),
    ("ied", "y"),
    ("ing", ""),
    ("ing", "e"),
    ("es", ""),
    ("s", ""),
    ("ed", ""),
    ("d", ""),
)


def lemma(word: str) -> str:
    """The base form of a verb the lexicon knows ("using" -> "use"), else ``word``."""
    word = word.lower().replace("\u2019", "'")
    if word in FIRST_WORDS:
        return word
    irregular = {
        "written": "write",
        "built": "build",
        "ran": "run",
        "kept": "keep",
        "held": "hold",
        "sent": "send",
        "chose": "choose",
        "chosen": "choose",
    }
    if word in irregular:
        return irregular[word]
    for suffix, add in _INFLECTIONS:
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            base = word[: -len(suffix)]
            for candidate in (base + add, base[:-1] + add if base[-1:] == base[-2:-1] else ""):
                if candidate in FIRST_WORDS:
                    return candidate
    return word


def stem(word: str) -> str:
    low = word.lower()
    if not low.isalpha():
        return low
    found = terms(low)
    return found[0] if found else low


_GENERIC = frozenset(GENERIC | DETERMINERS | {t for w in GENERIC | DETERMINERS for t in terms(w)})
_TARGET_HEADS = frozenset(t for w in TARGET_HEADS for t in terms(w))


def content_terms(words: list[str]) -> frozenset[str]:
    """Purpose words: stemmed, synonyms folded, stopwords and generic nouns left out."""
    folded = (SYNONYMS.get(t, t) for t in terms(" ".join(words).replace("-", " ")))
    return frozenset(t for t in folded if t not in _GENERIC and t not in STOPWORDS)


def is_target(words: list[str]) -> bool:
    return bool(words) and stem(words[-1]) in _TARGET_HEADS


def is_time(word: str) -> bool:
    low = word.lower()
    return low in WEEKDAYS or (low in MONTHS and low != "may")


def _name_like(word: str) -> bool:
    return (
        any(c.isupper() or c.isdigit() for c in word)
        or re.search(r"\w[.+#/_-]\w?", word) is not None
        or word.lower() in ALIASES
    )


def named(words: list[str], loose: bool = False) -> bool:
    """Whether a phrase looks like the name of a thing: a capital (not a weekday), a digit,
    code-like punctuation, a known alias; ``loose`` also takes a bare phrase ("with pytest").

    An acronym before a common noun ("API responses", "CI jobs") names no thing.
    """
    if not words or any(is_time(w) for w in words):
        return False
    marked = [w for w in words if _name_like(w)]
    if marked and not (
        words[-1].islower() and all(w.isupper() and w.isalpha() and len(w) > 1 for w in marked)
    ):
        return True
    return loose and words[0].lower() not in DETERMINERS and len(words) <= 3


def make_option(words: list[str], action: bool = False) -> tuple[Option, Value | None] | None:
    """The option a noun phrase names, and the count it carries ("two approvals")."""
    words = [w.strip(",'\"") for w in words if w not in {",", "'s"}]
    while words and words[0].lower() in DETERMINERS:
        words = words[1:]
    count: Value | None = None
    if len(words) > 1 and (words[0].isdigit() or words[0].lower() in NUMBER_WORDS):
        n = int(words[0]) if words[0].isdigit() else NUMBER_WORDS[words[0].lower()]
        count = (f"count:{stem(words[-1])}", str(n), f"{words[0]} {words[-1]}")
        words = words[1:]
    name = " ".join(words)
    version = None
    if len(words) > 1 and _VERSION.match(words[-1]):
        version, words = words[-1].lower().lstrip("v"), words[:-1]
    if not words:
        return None
    low = [ALIASES.get(w.lower(), w.lower()) for w in words]
    whole = " ".join(low)
    low = ALIASES.get(whole, whole).split()
    if len(low) > 1 and low[0] in VENDORS:
        low = low[1:]
    while len(low) > 1 and low[-1] in OPTION_TAILS:
        low = low[:-1]
    stems = {stem(w) for w in low if w not in STOPWORDS and not is_time(w)} - {""}
    key = " ".join(sorted(stems))
    if not key or key in _PRONOUNS:
        return None
    return Option(key, name, version, action), count


def split_list(words: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in words:
        if word.lower() in {"and", "or", "&", ",", "plus", "and/or"}:
            parts.append([])
        else:
            parts[-1].append(word)
    return [p for p in parts if p]


def options_of(words: list[str], action: bool = False) -> list[tuple[Option, Value | None]]:
    found = [make_option(p, action) for p in split_list(words)]
    return [f for f in found if f is not None]


def time_terms(words: list[str]) -> frozenset[str]:
    return frozenset(stem(w.rstrip("s")) for w in words if w.lower() in WEEKDAYS)


_QUANTIFIERS = frozenset({"all", "every", "each", "any"})
_NP_ENDS = PREPOSITIONS | {",", "the", "a", "an", "our", "its", "their"}


def _universal_head(words: list[str]) -> str | None:
    """The noun a quantifier ranges over: "all [production] services" -> "servic"."""
    low = [w.lower() for w in words]
    for at, word in enumerate(low):
        if word in _QUANTIFIERS:
            end = at + 1
            while end < len(low) and low[end] not in _NP_ENDS:
                end += 1
            head = content_terms(words[at + 1 : end][-1:]) if end > at + 1 else frozenset()
            return next(iter(head), None)
    return None


def purpose_of(verb: str | None, words: list[str], text: list[str]) -> Purpose:
    core = content_terms(words)
    stated = bool(terms(" ".join(words)))
    return Purpose(verb, core, stated, " ".join(text) or " ".join(words), _universal_head(words))
