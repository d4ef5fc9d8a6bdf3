"""Deterministic entity extraction: what a text is about, found by the shape of its words.

Entities link memory items that mention the same thing and match a query's subjects to them,
so the same text must always give the same keys: no model, only patterns and word lists. Spans
are claimed in a fixed order (URLs, e-mail addresses, @mentions, paths) and masked, so nothing
inside a URL is read again as a path or a name; the remaining words are then classified one by
one, and adjacent capitalised words are joined into one name.

E-mail addresses are kept whole as identifiers (``alice@example.com``), never split into a
mention and a domain. Keys of mentions keep their ``@`` so a handle and a name stay distinct.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum


class EntityKind(StrEnum):
    EXPLICIT = "explicit"
    URL = "url"
    PATH = "path"
    MENTION = "mention"
    IDENTIFIER = "identifier"
    CAMEL = "camel"
    ACRONYM = "acronym"
    NAME = "name"


@dataclass(frozen=True, slots=True, order=True)
class Entity:
    """One entity: the ``key`` it is matched by, its ``kind`` and the first ``surface`` form."""

    key: str
    kind: EntityKind
    surface: str


#: Capitalised at the start of a sentence or in casual speech, yet never a name on its own.
#: Time words are here too: weekdays and months belong to time expressions, not entities.
COMMON_WORDS = frozenset(
    """
    avoid stop adopt migrate replace switch prefer drop deprecate enable disable choose pick
    standardise standardize pilot ban forbid allow require retire revert rollback roll upgrade
    downgrade introduce consolidate
    i me my mine myself we us our ours you your yours he him his she her hers it its they them
    their theirs this that these those the a an some any all every each both either neither no
    none another other such there here everyone someone something everything nothing anyone
    anything nobody everybody somebody one two three four five six seven eight nine ten
    i'm i've i'll i'd it's that's there's here's what's let's we're we've we'll we'd you're
    you've you'll you'd they're they've they'll he's she's don't didn't doesn't isn't wasn't
    aren't weren't can't couldn't won't wouldn't shouldn't haven't hasn't hadn't who's how's
    where's when's
    what when where why how who whom whose which whatever whenever
    do does did done doing is are was were be been being am have has had having can could would
    should will shall may might must let get got go going went make made see saw look looks know
    think thought guess hope love like want need feel felt keep try tell said says say come take
    check remember please
    and but or nor so yet if then than because since though although while as at by for from in
    into of off on onto out over to up with without about after before during until unless per
    via
    just also well really very maybe perhaps actually anyway still even only now soon later
    already again always never sometimes often once too not indeed definitely absolutely totally
    probably honestly certainly basically finally hopefully unfortunately luckily especially plus
    however meanwhile otherwise instead besides overall many much more most few lots first last
    next
    yes yeah yep yup nope oh ah aw aww hey hi hello bye goodbye thanks thank thx wow whoa ok okay
    sure great nice good cool awesome amazing sounds glad happy sorry congrats congratulations
    haha hahaha lol hmm um uh ugh welcome cheers dear btw omg wait right true exactly agreed
    mr mrs ms dr prof sir madam
    monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thurs fri sat
    sun january february march april june july august september october november december jan
    feb mar apr jun jul aug sep sept oct nov dec today tonight tomorrow yesterday morning
    afternoon evening night day week weekend month year
    ask show find give list explain describe summarize summarise remind use add run fix send read
    write open create help mail email ping deploy merge build move start remove delete review
    install configure release ship plan schedule
    put cache retry hold generate encrypt decrypt rotate restrict publish expose track pin page
    shard settle freeze unfreeze personalise personalize integrate implement limit cap set mark
    split store log monitor alert throttle batch queue validate reject accept approve keep turn
    incident outage postmortem
    """.split()  # noqa: SIM905
)

#: All-caps tokens that are chat shorthand or shouted emphasis rather than acronyms.
NOT_ACRONYMS = frozenset(
    """
    ok okay lol omg btw fyi asap tbh imo imho idk aka etc tl dr tldr ps nb fwiw iirc afaik wtf
    brb ttyl nvm thx pls plz xoxo haha lmao rofl pm eta todo fixme wip note warning important
    urgent update new big huge best worst less more stop help done
    """.split()  # noqa: SIM905
)

#: Lower-case particles that may sit inside a multi-word name ("Bank of America").
NAME_CONNECTORS = frozenset(["of", "de", "da", "di", "du", "del", "della", "van", "von", "der"])

_URL = re.compile(r"(?<![\w.@/])(?:https?://|www\.)[^\s<>\"'`{}|\\^\[\]]+", re.IGNORECASE)
_URL_SCHEME = re.compile(r"^https?://", re.IGNORECASE)
_EMAIL = re.compile(r"(?<![\w.+\-])[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
_MENTION = re.compile(r"(?<![\w@.+\-])@[^\W\d]\w*(?:[.\-]\w+)*")
_PATH = re.compile(r"(?<![\w./~\-])(?:(?:~|\.{1,2})?(?:/[\w.\-]+)+|[\w.\-]+(?:/[\w.\-]+)+)/?")
_FILE_EXTENSION = re.compile(r"[^\W_]\.[A-Za-z][A-Za-z0-9]{0,7}$")
_TOKEN = re.compile(r"\w+(?:['\u2019.\-]\w+)*(?:['\u2019](?!\w))?")
_HYPHEN_PART = re.compile(r"[^\-]+")
_SAME_LINE_SPACE = re.compile(r"[^\S\n]+")
_NUMBER_WITH_UNIT = re.compile(
    r"\d+(?:[\-\u2013]\d+)?(?:st|nd|rd|th|s|am|pm|k|m|b|x|h|hrs?|mins?|secs?|ms|kb|mb|gb|tb|px)",
    re.IGNORECASE,
)
_TRAILING_PUNCTUATION = ".,;:!?'\""
_MAX_NAME_WORDS = 6  # longer capitalised runs are headlines, not names
_MASK = "\x00"  # not a word character and not whitespace: masked spans join nothing


@dataclass(frozen=True, slots=True)
class _Word:
    kind: EntityKind
    key: str
    surface: str
    possessive: bool = False


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def _strip_possessive(token: str) -> tuple[str, bool]:
    if token.endswith(("'s", "'S")):
        return token[:-2], True
    if token.endswith("'"):
        return token[:-1], True
    return token, False


def _is_acronym(letters: str) -> bool:
    return 2 <= len(letters) <= 6 and letters.isalpha() and letters.isupper()


def _classify(token: str) -> _Word | None:
    """The kind of one word, or None when it is not an entity on its own."""
    normal = token.replace("\u2019", "'")
    if normal.casefold() in COMMON_WORDS:
        return None
    core, possessive = _strip_possessive(normal)
    folded = core.casefold()
    if len(core) < 2 or folded in COMMON_WORDS or not any(c.isalpha() for c in core):
        return None
    if "_" in core:
        return _Word(EntityKind.IDENTIFIER, folded, core)
    if "." in core:
        # "e.g." and "U.S." are abbreviations, "os.path" and "Node.js" are names of things.
        if max(len(segment) for segment in core.split(".")) < 2:
            return None
        return _Word(EntityKind.IDENTIFIER, folded, core)
    if any(c.isdigit() for c in core):
        if _NUMBER_WITH_UNIT.fullmatch(core):  # ordinals, decades, times and sizes
            return None
        return _Word(EntityKind.IDENTIFIER, folded, core)
    if core.endswith("s") and _is_acronym(core[:-1]):  # "APIs" and "API" are the same thing
        singular = core[:-1].casefold()
        if singular in NOT_ACRONYMS or singular in COMMON_WORDS:
            return None
        return _Word(EntityKind.ACRONYM, singular, core[:-1])
    if core.isupper():
        if not _is_acronym(core) or folded in NOT_ACRONYMS:
            return None
        return _Word(EntityKind.ACRONYM, folded, core)
    if core.istitle():
        return _Word(EntityKind.NAME, folded, core, possessive)
    if core.isalpha() and any(c.isupper() for c in core[1:]) and any(c.islower() for c in core):
        return _Word(EntityKind.CAMEL, folded, core)
    return None


def _tokens(masked: str) -> Iterator[tuple[int, int, str]]:
    """Word tokens with their spans; hyphenated plain words split into their parts."""
    for match in _TOKEN.finditer(masked):
        token = match.group()
        compound = "-" in token and not any(c.isdigit() for c in token)
        if compound and not _strip_possessive(token.replace("\u2019", "'"))[0].istitle():
            for part in _HYPHEN_PART.finditer(token):
                yield match.start() + part.start(), match.start() + part.end(), part.group()
        else:
            yield match.start(), match.end(), token


def _name_run(run: list[tuple[int, int, _Word | None, str]]) -> Iterator[tuple[int, _Word]]:
    while run and run[-1][2] is None:  # a trailing connector belongs to the next words
        run.pop()
    if run:
        parts = [word.surface if word is not None else text for _, _, word, text in run]
        surface = " ".join(parts)
        yield run[0][0], _Word(EntityKind.NAME, surface.casefold(), surface)


def _words(masked: str) -> Iterator[tuple[int, _Word]]:
    """Entities among the plain words of ``masked``, with their positions."""
    run: list[tuple[int, int, _Word | None, str]] = []  # name words, or None for a connector
    run_open = False
    for start, end, token in _tokens(masked):
        word = _classify(token)
        joins = (
            run_open
            and len(run) < _MAX_NAME_WORDS
            and _SAME_LINE_SPACE.fullmatch(masked, run[-1][1], start) is not None
        )
        if word is not None and word.kind is EntityKind.NAME:
            if not joins:
                yield from _name_run(run)
                run = []
            run.append((start, end, word, token))
            run_open = not word.possessive  # "Caroline's Mom" is not one name
            continue
        if joins and token in NAME_CONNECTORS and run[-1][2] is not None:
            run.append((start, end, None, token))
            continue
        yield from _name_run(run)
        run, run_open = [], False
        if word is not None:
            yield start, word
    yield from _name_run(run)


def _url(surface: str) -> tuple[EntityKind, str, str]:
    cleaned = surface.rstrip(_TRAILING_PUNCTUATION)
    while cleaned.endswith(")") and cleaned.count(")") > cleaned.count("("):
        cleaned = cleaned[:-1].rstrip(_TRAILING_PUNCTUATION)
    return EntityKind.URL, cleaned, _URL_SCHEME.sub("", cleaned).rstrip("/").casefold()


def _path(surface: str) -> tuple[EntityKind, str, str] | None:
    surface = surface.rstrip(".")
    if not _is_path(surface):
        return None
    return EntityKind.PATH, surface, surface.rstrip("/").casefold()


def _is_path(candidate: str) -> bool:
    """Whether a slashed token is a path rather than ``and/or``, ``TCP/IP`` or ``12/05/2023``."""
    if not any(c.isalpha() for c in candidate):
        return False
    if candidate.startswith(("./", "../", "~/")):
        return True
    segments = [segment for segment in candidate.split("/") if segment]
    has_extension = _FILE_EXTENSION.search(segments[-1]) is not None
    needed = 2 if candidate.startswith("/") else 3
    return has_extension or len(segments) >= needed


def _spans(text: str) -> tuple[str, list[tuple[int, _Word]]]:
    """URLs, e-mails, mentions and paths, and ``text`` with their spans masked."""
    masked = text
    found: list[tuple[int, _Word]] = []
    passes: list[tuple[re.Pattern[str], Callable[[str], tuple[EntityKind, str, str] | None]]] = [
        (_URL, _url),
        (_EMAIL, lambda surface: (EntityKind.IDENTIFIER, surface, surface.casefold())),
        (_MENTION, lambda surface: (EntityKind.MENTION, surface, surface.casefold())),
        (_PATH, _path),
    ]
    for pattern, read in passes:
        claimed: list[tuple[int, int]] = []
        for match in pattern.finditer(masked):
            entity = read(match.group())
            if entity is None:
                continue
            kind, surface, key = entity
            claimed.append((match.start(), match.start() + len(surface)))
            if len(key) >= 2:
                found.append((match.start(), _Word(kind, key, surface)))
        pieces, done = [], 0
        for start, end in claimed:
            pieces += [masked[done:start], _MASK * (end - start)]
            done = end
        masked = "".join([*pieces, masked[done:]])
    return masked, found


def extract_entities(text: str, explicit: Sequence[str] = (), *, limit: int = 32) -> list[Entity]:
    """The entities of ``text``: explicit ones first, then in order of first occurrence.

    Parameters
    ----------
    text
        Free text: a memory item, a decision or a query.
    explicit
        Entities the caller already knows; normalised (casefolded, whitespace collapsed) and
        kept even when the text never mentions them.
    limit
        At most this many entities are returned.

    Returns
    -------
    list of Entity
        One entity per key; the first occurrence decides its kind and surface.

    Examples
    --------
    >>> [e.key for e in extract_entities("Caroline moved the API to PostgreSQL in New York.")]
    ['caroline', 'api', 'postgresql', 'new york']
    >>> extract_entities("see src/app/main.py", ["Billing"])[0]
    Entity(key='billing', kind=<EntityKind.EXPLICIT: 'explicit'>, surface='Billing')
    """
    if limit < 0:
        raise ValueError(f"limit must be non-negative, got {limit}")
    entities: dict[str, Entity] = {}
    for given in explicit:
        key = _normalise(given)
        if len(key) >= 2 and key not in entities:
            entities[key] = Entity(key, EntityKind.EXPLICIT, " ".join(given.split()))
    masked, found = _spans(text)
    found.extend(_words(masked))
    found.sort(key=lambda item: item[0])
    for _, word in found:
        if len(entities) >= limit:
            break
        if word.key not in entities:
            entities[word.key] = Entity(word.key, word.kind, word.surface)
    return list(entities.values())[:limit]


def entity_keys(text: str, explicit: Sequence[str] = ()) -> list[str]:
    """Only the keys of :func:`extract_entities`, in the same order.

    Examples
    --------
    >>> entity_keys("Ask @melanie about max_retries in gpt-4 and S3", ["Billing"])
    ['billing', '@melanie', 'max_retries', 'gpt-4', 's3']
    """
    return [entity.key for entity in extract_entities(text, explicit)]


def idf_weights(doc_freq: Mapping[str, int], total_docs: int) -> dict[str, float]:
    """Smoothed inverse document frequency per key: ``log(1 + (N - df + 0.5) / (df + 0.5))``.

    Rare keys weigh more, and the smoothing keeps every weight positive, so an entity shared by
    every document still counts a little.

    Examples
    --------
    >>> weights = idf_weights({"redis": 1, "caroline": 9}, total_docs=10)
    >>> round(weights["redis"], 3), round(weights["caroline"], 3)
    (1.992, 0.147)
    """
    if total_docs < 0:
        raise ValueError(f"total_docs must be non-negative, got {total_docs}")
    weights: dict[str, float] = {}
    for key, df in doc_freq.items():
        if not 0 <= df <= total_docs:
            raise ValueError(f"document frequency of {key!r} must be in [0, {total_docs}]")
        weights[key] = math.log(1.0 + (total_docs - df + 0.5) / (df + 0.5))
    return weights
