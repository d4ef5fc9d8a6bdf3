"""Statement-level traits the reading by words (:mod:`.stance_align`) weighs a pair with:
the act a statement opens with, whether it only permits, and what a quantifier rules over.
"""

from __future__ import annotations

import re

from retrieval.text import STOPWORDS, terms

from .stance import parse
from .stance_align_words import HOW_WORDS
from .stance_terms import TOKEN, lemma
from .stance_words import ALLOW, DETERMINERS, INSTRUMENT_VERBS, LIGHT_CLASSES, OPTIONAL

__all__ = ["different_acts", "permits_only", "universal_heads"]


_QUANTIFIED = re.compile(r"\b(?:every|all|each|any)\s+((?:[\w-]+\s+){0,2}[\w-]+)", re.IGNORECASE)


def universal_heads(text: str) -> frozenset[str]:
    """Stems of the (up to three) words a quantifier governs: "Every internal service ..."."""
    return frozenset(t for m in _QUANTIFIED.finditer(text) for t in terms(m.group(1)))


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
    if va is None or vb is None or va == vb or va in HOW_WORDS or vb in HOW_WORDS:
        return False
    if terms(va) == terms(vb):
        return False
    # Only verbs the lexicon knows as acts: an opening noun or adjective ("Production nodes
    # run ...", "Automated backups ...") is no act.
    ca, cb = INSTRUMENT_VERBS.get(va), INSTRUMENT_VERBS.get(vb)
    if ca is None or cb is None:
        return False
    return not (ca == cb and ca in LIGHT_CLASSES)


def permits_only(text: str) -> bool:
    """Whether every claim of the statement only permits (allow, accept, may, optional)."""
    claims = parse(text).claims
    return bool(claims) and all(c.mode in (ALLOW, OPTIONAL) for c in claims)
