"""Statements that name their subject first: "X is not allowed", "PostgreSQL is the primary
datastore", "Payment events go through Kafka", "Admin accounts require MFA".

:func:`subject_first` only finds the parts; :mod:`.stance` turns them into claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .stance_words import COPULA, PREDICATE_MODES, SUBJECT_VERBS


@dataclass(frozen=True, slots=True)
class SubjectFirst:
    """``form``: predicate | verb | role | reverse | instrument | svo."""

    form: str
    subject: str
    predicate: str  # a mode (predicate), a verb (verb, instrument, svo) or ""
    rest: str
    negated: bool = False


_NP = r"(?P<np>[^,;:]+?)"
_REST = r"(?:\s+(?P<rest>.*))?$"
_PREDICATES = [
    (re.compile(rf"^{_NP}\s+{COPULA}\s+(?:now\s+|henceforth\s+)?(?:{words})\b{_REST}", re.I), mode)
    for words, mode in PREDICATE_MODES
]
_VERB = re.compile(
    rf"^{_NP}\s+(?:(?:must|should|will|shall|can|may|to|always|only)\s+)?"
    r"(?P<neg>(?:not|never|no longer|do not|does not|don't|doesn't)\s+)?"
    r"(?P<verb>uses?|adopts?|requires?|needs?|prefers?|avoids?|bans?|standardi[sz]es? on|"
    r"standardi[sz]e on|rel(?:y|ies) on|depends? on|migrates? to|moves? to|switch(?:es)? to|"
    r"stays? on|sticks? with|keeps?|enables?|disables?|drops?|retires?|forbids?|allows?)"
    r"\s+(?P<rest>.+)$",
    re.I,
)
_INSTRUMENT = re.compile(
    rf"^{_NP}\s+(?:(?:{COPULA})\s+(?P<neg>not\s+)?(?:only\s+|always\s+|now\s+)?"
    r"(?P<pp>\w+(?:ed|en)|built|written|run|kept|held|sent|put|done|hosted)|"
    rf"(?P<neg2>(?:do not|does not|don't|doesn't|must not|should not|never)\s+)?"
    rf"(?P<mv>{SUBJECT_VERBS}))"
    r"\s+(?:only\s+|exclusively\s+|entirely\s+)?(?:in|on|with|via|through|to|into|by|using|"
    r"onto|behind|over|inside|as)\s+(?P<rest>.+)$",
    re.I,
)
_ROLE = re.compile(
    rf"^{_NP}\s+(?P<neg>(?:{COPULA})\s+(?:not\s+)?|(?:{COPULA})\s+)"
    r"(?:(?:now|henceforth|still)\s+)?(?:the|our|a|an)\s+(?P<rest>.+)$",
    re.I,
)
_REVERSE = re.compile(
    rf"^(?:the|our)\s+{_NP}\s+(?:{COPULA})\s+(?:now\s+|henceforth\s+)?(?P<rest>(?!not\b).+)$",
    re.I,
)
#: "Analysts may query the replica", "Users cannot delete their account": a modal verb, then
#: the action (permitted, required or forbidden for the subject).
_MODAL = re.compile(
    rf"^{_NP}\s+(?P<modal>may|can|could|must|shall|should|will|need to|needs to|have to|has to|"
    r"gets? to|(?:is|are) (?:allowed|permitted|expected|required|free|able) to|cannot|can't|"
    r"can not|(?:is|are) not (?:allowed|permitted) to|(?:is|are) (?:forbidden|prohibited|banned) "
    r"from|never|do not|does not|don't|doesn't)\s+(?P<rest>[a-z].+)$",
    re.I,
)
_PERMISSIVE = re.compile(
    r"^(?:may|can|could|gets? to|(?:is|are) (?:allowed|permitted|free|able) to)$", re.I
)
_FORBIDDING = re.compile(
    r"^(?:cannot|can't|can not|(?:is|are) not (?:allowed|permitted) to|(?:is|are) "
    r"(?:forbidden|prohibited|banned) from|never|do not|does not|don't|doesn't)$",
    re.I,
)
#: "Timestamps are ISO 8601 strings": a subject classified as a named thing.
_ISA = re.compile(rf"^{_NP}\s+(?:{COPULA})\s+(?P<rest>(?!not\b)[A-Z0-9].*)$")
_BARE = re.compile(
    rf"^{_NP}\s+(?:{COPULA})(?:\s+(?P<rest>(?:per|for|in|on|at|with|across|within|during|by)\b.*))?$",
    re.I,
)
_SVO = re.compile(
    r"^(?P<np>(?:the|our|all|every|each|new|a|an)\s+[^,;:]+?)\s+(?!is\b|was\b|has\b)"
    r"(?P<verb>[a-z]+s)\s+"
    r"(?P<rest>.+)$",
    re.I,
)


def subject_first(text: str) -> SubjectFirst | None:
    """The parts of a subject-first statement, or ``None`` (then it is read as imperative)."""
    if (m := _MODAL.match(text)) is not None:
        modal = m["modal"]
        mode = "allow" if _PERMISSIVE.match(modal) else "adopt"
        return SubjectFirst("modal", m["np"], mode, m["rest"], bool(_FORBIDDING.match(modal)))
    for pattern, mode in _PREDICATES:
        if (m := pattern.match(text)) is not None:
            return SubjectFirst("predicate", m["np"], mode, m["rest"] or "")
    if (m := _VERB.match(text)) is not None:
        return SubjectFirst("verb", m["np"], m["verb"], m["rest"], bool(m["neg"]))
    if (m := _INSTRUMENT.match(text)) is not None:
        verb = m["pp"] or m["mv"].split()[-1]
        negated = bool(m["neg"] or m["neg2"])
        return SubjectFirst("instrument", m["np"], verb, m["rest"], negated)
    if (m := _BARE.match(text)) is not None:  # "On-call rotation is [weekly]"
        return SubjectFirst("bare", m["np"], "", m["rest"] or "")
    m = _REVERSE.match(text) if re.match(r"^(?:the|our)\s", text, re.I) else None
    if m is not None and not re.match(r"^(?:the|our|a|an)\s", m["rest"], re.I):
        return SubjectFirst("reverse", m["np"], "", m["rest"])
    if (m := _ROLE.match(text)) is not None:
        return SubjectFirst("role", m["np"], "", m["rest"], "not" in m["neg"].lower().split())
    if (m := _ISA.match(text)) is not None:
        return SubjectFirst("reverse", m["np"], "", m["rest"])
    if (m := _SVO.match(text)) is not None:
        return SubjectFirst("svo", m["np"], m["verb"], m["rest"])
    return None
