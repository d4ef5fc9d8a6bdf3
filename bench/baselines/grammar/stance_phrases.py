"""The phrases of a verb phrase: its object, then each modifier sorted into the part of a
claim it speaks to (purpose, instrument, rejected alternative, source, detail)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .stance_terms import (
    ALTERNATIVE_TABLE,
    BOUNDARY,
    content_terms,
    is_target,
    match_phrase,
    named,
)
from .stance_words import DETERMINERS, INSTRUMENT_PREPS, LOOSE_INSTRUMENT_PREPS, WEEKDAYS


def split_phrases(words: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The object (up to the first preposition) and the ``(preposition, words)`` after it."""
    low = [w.lower() for w in words]
    head: list[str] = []
    chunks: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(words):
        alt = match_phrase(low, i, ALTERNATIVE_TABLE)
        open_chunk = bool(chunks) and not chunks[-1][1]  # "for every PR": one modifier
        if alt is not None and (head or chunks) and not open_chunk:
            prep, size = "alt:" + " ".join(low[i : i + alt[1]]), alt[1]
        elif low[i] in BOUNDARY and not open_chunk:
            prep, size = low[i], 1
        else:
            (chunks[-1][1] if chunks else head).append(words[i])
            i += 1
            continue
        chunks.append((prep, []))
        i += size
    return head, [(p, [w for w in ws if w != ","]) for p, ws in chunks]


@dataclass
class Modifiers:
    """A verb phrase's modifiers, sorted (words as written)."""

    purpose_words: list[str] = field(default_factory=list)
    purpose_text: list[str] = field(default_factory=list)
    detail_words: list[str] = field(default_factory=list)
    alternatives: list[list[str]] = field(default_factory=list)
    instrument: list[str] | None = None
    object_words: list[str] = field(default_factory=list)  # "objects [in the media bucket]"
    object_text: list[str] = field(default_factory=list)
    sources: list[list[str]] = field(default_factory=list)
    infinitive: list[str] = field(default_factory=list)
    targets: set[str] = field(default_factory=set)


def modifiers(chunks: list[tuple[str, list[str]]], verb_kind: str) -> Modifiers:
    """Sort the modifiers of a verb phrase: purpose, instrument, alternatives, details."""
    out = Modifiers()
    instrumental = verb_kind in {"instrument", "migrate"}
    for prep, words in chunks:
        if not words:
            continue
        if prep.startswith("alt:"):
            out.alternatives.append(words)
        elif prep == "as" and instrumental and out.instrument is None and named(words):
            out.instrument = words  # "Encode event payloads as Protobuf"
        elif prep in {"for", "as"} or (
            prep in {"in", "within", "across", "inside"}
            and verb_kind != "instrument"
            and is_target(words)
        ):
            out.purpose_words += words
            out.purpose_text.append(f"{prep} {' '.join(words)}")
            if is_target(words):
                out.targets.add(" ".join(sorted(content_terms(words))))
        elif (
            prep == "to"
            and verb_kind == "choice"
            and words[0].islower()
            and (words[0] not in DETERMINERS)
        ):  # "Use Kafka to decouple the services": what it is for
            out.infinitive += words
        elif prep == "from" and verb_kind == "migrate":
            out.sources.append(words)
        elif (
            out.instrument is None
            and instrumental
            and prep in INSTRUMENT_PREPS
            and named(words, loose=prep in LOOSE_INSTRUMENT_PREPS or verb_kind == "migrate")
        ):
            out.instrument = words
        elif (
            out.instrument is None
            and instrumental
            and prep in {"in", "of", "on", "at", "inside", "within"}
            and not any(w.lower() in WEEKDAYS for w in words)
        ):  # qualifies the object, if an instrument follows
            out.object_words += words
            out.object_text.append(f"{prep} {' '.join(words)}")
        else:
            out.detail_words += words
    if out.instrument is None:
        out.detail_words += out.object_words
        out.object_words, out.object_text = [], []
    return out


_WRAPPERS = re.compile(
    r"^(?:(?:the|our)\s+)?(?:use|usage|support|adoption)(?:\s+(?:of|for))?$", re.I
)


def unwrap(
    head: list[str], chunks: list[tuple[str, list[str]]]
) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """ "Drop support for IE11", "Drop IE11 support" and "End the use of jQuery" speak of IE11
    and jQuery."""
    for cut in range(len(head), 0, -1):
        if _WRAPPERS.match(" ".join(head[:cut])):
            if cut < len(head):
                return head[cut:], chunks
            if chunks and chunks[0][0] in {"for", "of"}:
                return chunks[0][1], chunks[1:]
    if len(head) > 1 and head[-1].lower() in {"support", "usage"}:
        return head[:-1], chunks
    return head, chunks
