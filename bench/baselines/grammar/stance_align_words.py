"""Word lists of the second reading of a statement (:mod:`.stance_align`).

General English and the lexicon of :mod:`.stance_words`: verbs that say *how* a decision is
held rather than what about, negating words, opposites that fill one slot of a decision. None
of it names a product.
"""

from __future__ import annotations

import re

from retrieval.text import terms

from .stance_words import (
    ALLOW_VERBS,
    CHOICE_VERBS,
    GENERIC,
    NEGATIONS,
    REPLACE_VERBS,
    REQUIRE_VERBS,
    SYNONYMS,
    TRIAL_VERBS,
    VALUE_VERBS,
)


def _single(phrases: tuple[str, ...]) -> set[str]:
    return {p for p in phrases if " " not in p}


#: Verbs of choosing, requiring, allowing and setting: they say how, not what about.
HOW_WORDS = frozenset(
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
NEGATING = frozenset(
    _single(NEGATIONS)
    | {"no", "not", "never", "nor", "none", "cannot", "without", "skip", "avoid", "ban"}
    | {"forbid", "forbidden", "prohibit", "prohibited", "disallow", "disallowed", "reject"}
    | {"disable", "disabled", "stop", "exclude", "discontinue", "abandon", "eliminate"}
    | {"drop", "remove", "retire", "deprecate", "sunset", "decommission"}
)
NEGATING_PAIRS = (
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
    "turn off",
    "turned off",
    "switch off",
    "switched off",
    "opt out",
)
TRIAL = frozenset(_single(TRIAL_VERBS) - {"review", "test", "benchmark", "research"})
#: "instead of X", "rather than X", "over X": the rejected alternative, cut from the clause.
ALTERNATIVE = re.compile(
    r"\b(?:instead of|rather than|in place of|in favou?r of)\s+[^,;.]*?(?=$|[,;.]|\s+(?:for|in|on|"
    r"with|to|as|at|because|since|so)\b)",
    re.IGNORECASE,
)
CLAUSES = re.compile(
    r"(?:[.;!?:](?:\s+|$)|\n+|,?\s+but\s+|,?\s+and then\s+|,?\s+then\s+|\s*;\s*|\s+-{1,2}\s+)",
    re.IGNORECASE,
)
#: Generic nouns, as words and as stems ("going" is generic, its stem "go" is a language).
#: Words naming whose decision or which part it is ("the platform team", "the core
#: layer") are kept: two statements differing only there speak of different subjects.
SUBJECT_WORDS = frozenset(
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
GENERIC_WORDS = (
    frozenset(t for w in GENERIC - SUBJECT_WORDS for t in terms(w))
    | frozenset(GENERIC - SUBJECT_WORDS)
) - {"go"}


#: Words that say how a value relates to its subject, not what the subject is ("Trials last
#: 14 days", "Tokens expire after 15 minutes", "Set topic retention to 30 days").
VALUE_RELATION = frozenset(
    SYNONYMS.get(t, t)
    for t in terms(
        "last lasts expire expires expiry valid validity long after within least most budget "
        "limit cap threshold quota retention retained kept allowed "
        "send sent take takes up until"
    )
)


#: Opposites that fill one slot of a decision ("a dark default theme" / "a light default
#: theme"): general English, stemmed like the content words.
OPPOSITES = [
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


def stems(word: str) -> frozenset[str]:
    return frozenset(SYNONYMS.get(t, t) for t in terms(word.replace("-", " ")))


OPPOSITE_STEMS = [(stems(a), stems(b)) for a, b in OPPOSITES]
assert all(a and b for a, b in OPPOSITE_STEMS), "an opposite made only of stopwords"
