"""The node and edge model shared by decisions and memory items.

Models validate; they do not store. The graph keeps each node's attributes as the JSON form of
:class:`Node` (``Node.to_attrs``), which is what snapshots, hashes and exports read.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from pydantic_core import ValidationError as CoreValidationError

from .enums import (
    Category,
    EdgeType,
    Lifecycle,
    NodeKind,
    Outcome,
    ReasonType,
    ReviewStatus,
    Stakes,
)
from .timeutil import UtcDatetime

NODE_ID_PATTERN = re.compile(r"^[0-9a-f]{8}$")

MAX_TEXT = 10_000
MAX_CONTEXT = 20_000
MAX_SHORT = 500
MAX_TAGS = 50
MAX_TAG_LEN = 100
MAX_REASONS = 50
MAX_ENTITIES = 100
MAX_WEIGHT = 1_000.0
MAX_PATTERN = 2_000

ShortText = Annotated[str, Field(max_length=MAX_SHORT)]
MetaValue = str | int | float | bool
#: CSTP fields kept verbatim on a decision (``deliberation``, ``trace``, ``mental_state``...) as
#: JSON text at most this long: they are returned, never interpreted by the graph.
MAX_EXTRAS_JSON = 65_536


def extras_problem(value: Any) -> str | None:
    """Why ``value`` cannot be kept as client fields (``None`` when it can): it must be JSON
    the log can hold (integers of at most 64 bits, finite numbers) and at most
    :data:`MAX_EXTRAS_JSON` bytes of it."""
    try:
        text = orjson.dumps(value)
    except TypeError as exc:  # an integer past 64 bits, a value that is not JSON
        return f"must hold only JSON values that fit 64-bit integers ({exc})"
    if len(text) > MAX_EXTRAS_JSON:
        return f"as JSON must be at most {MAX_EXTRAS_JSON} bytes, got {len(text)}"
    return None


def check_extras(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """Client fields kept verbatim: JSON of at most :data:`MAX_EXTRAS_JSON` bytes
    (:func:`extras_problem`). ``None`` and ``{}`` are both "none"."""
    if not value:
        return None
    problem = extras_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


#: Fields CSTP's clients send that decigraph keeps as given and returns from getDecision.
Extras = Annotated[dict[str, Any] | None, AfterValidator(check_extras)]


def check_node_id(value: str, field: str = "id") -> str:
    """Return ``value`` if it is a node id (8 lowercase hex characters, as CSTP issues).

    Raises ``ValueError`` naming the field otherwise; ids are never truncated or re-cased.
    """
    if not isinstance(value, str) or not NODE_ID_PATTERN.match(value):
        raise ValueError(f"{field} must be 8 lowercase hex characters, got {value!r}")
    return value


#: Characters no text a caller sends may hold: the C0 controls other than tab, line feed and
#: carriage return (NUL, BEL, ESC...: no text format carries them safely, XML 1.0 not at all),
#: and lone surrogates (not text: they have no UTF-8 form, so no event could hold them).
REFUSED_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


def refused_character(text: str) -> str | None:
    r"""Why ``text`` may not be stored (its first refused character), or ``None`` when it may.

    Examples
    --------
    >>> refused_character("tab\tand\nnewline are fine") is None
    True
    >>> refused_character("bell\x07").split(";")[0]
    'must not contain the control character U+0007 (at position 4)'
    """
    match = REFUSED_CHARACTERS.search(text)
    if match is None:
        return None
    code, at = ord(match.group()), match.start()
    if 0xD800 <= code <= 0xDFFF:
        return f"must not contain the lone surrogate U+{code:04X} (at position {at})"
    return (
        f"must not contain the control character U+{code:04X} (at position {at}); "
        "tab, line feed and carriage return are the only ones allowed"
    )


def find_refused_character(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """Where in ``value`` (a string, or lists, dicts and models of them) a refused character is,
    as a path below ``value`` and the reason; ``None`` when there is none."""
    if isinstance(value, str):
        reason = refused_character(value)
        return None if reason is None else ((), reason)
    if isinstance(value, BaseModel):
        items: Any = ((name, getattr(value, name)) for name in type(value).model_fields)
    elif isinstance(value, dict):
        for key in value:
            if isinstance(key, str) and (reason := refused_character(key)) is not None:
                return (key,), f"key {reason}"
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = find_refused_character(item)
        if found is not None:
            return (key, *found[0]), found[1]
    return None


def refuse_control_characters(value: Any) -> Any:
    """A field validator for models at the edge (every text field: text, context, reasons,
    tags, entities, metadata...): ``value`` unchanged, or a validation error naming the field
    (and the item within it) that holds a refused character (:data:`REFUSED_CHARACTERS`).

    Stored models (:class:`Node`, :class:`Edge`) do not refuse them: a log written before this
    rule may hold them, and it must still replay; the exports escape them instead.
    """
    found = find_refused_character(value)
    if found is None:
        return value
    where, reason = found
    error = PydanticCustomError("control_character", reason)
    raise CoreValidationError.from_exception_data(
        "text", [{"type": error, "loc": where, "input": value}]
    )


def _clean_str_list(values: list[str], field: str, max_items: int, max_len: int) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for raw in values:
        item = raw.strip()
        if not item:
            continue
        if len(item) > max_len:
            raise ValueError(f"{field} items must be at most {max_len} characters")
        if item not in seen:
            seen.add(item)
            out.append(item)
    if len(out) > max_items:
        raise ValueError(f"{field} may hold at most {max_items} items")
    return out


def clean_tags(values: list[str]) -> list[str]:
    """Tags stripped, blank ones dropped, duplicates removed (first kept), within the limits."""
    return _clean_str_list(values, "tags", MAX_TAGS, MAX_TAG_LEN)


def clean_entities(values: list[str]) -> list[str]:
    """Entities as :func:`clean_tags` cleans tags, within their own limits."""
    return _clean_str_list(values, "entities", MAX_ENTITIES, MAX_SHORT)


#: Tags and entities: stripped, blanks dropped, duplicates removed, within their limits.
Tags = Annotated[list[str], AfterValidator(clean_tags)]
Entities = Annotated[list[str], AfterValidator(clean_entities)]


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_strip_whitespace=True, frozen=True
    )


class Reason(_Strict):
    type: ReasonType
    text: str = Field(min_length=1, max_length=2_000)
    strength: float = Field(default=0.8, ge=0.0, le=1.0)


BridgeList = Annotated[list[Annotated[str, Field(max_length=2_000)]], Field(max_length=50)]


class Bridge(_Strict):
    """CSTP's structure/function bridge; the lists are kept as given (CSTP's bridge clients send
    them; nothing in decigraph judges them yet)."""

    structure: str | None = Field(default=None, max_length=2_000)
    function: str | None = Field(default=None, max_length=2_000)
    tolerance: BridgeList | None = None
    enforcement: BridgeList | None = None
    prevention: BridgeList | None = None


class Review(_Strict):
    """One review of a decision's outcome."""

    outcome: Outcome
    actual_result: str | None = Field(default=None, max_length=MAX_CONTEXT)
    lessons: str | None = Field(default=None, max_length=MAX_CONTEXT)
    notes: str | None = Field(default=None, max_length=MAX_CONTEXT)
    reviewed_at: UtcDatetime | None = None
    reviewed_by: ShortText | None = None
    affected_kpis: dict[str, float] | None = Field(default=None, max_length=100)


class Node(_Strict):
    """A decision (CSTP fields) or a memory item (``kind`` observation, fact or thought).

    Reviews are history: the flat fields (``outcome``, ``actual_result``, ``lessons``,
    ``review_notes``, ``reviewed_at``, ``reviewed_by``) hold the latest review, which is the
    current outcome, and ``past_reviews`` the ones before it, oldest first (absent until a
    second review, so a node reviewed once is stored as it always was). :meth:`reviews` gives
    them all.
    """

    id: str
    kind: NodeKind = NodeKind.DECISION
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    category: Category | None = None
    stakes: Stakes | None = None
    context: str | None = Field(default=None, max_length=MAX_CONTEXT)
    reasons: list[Reason] = Field(default_factory=list, max_length=MAX_REASONS)
    tags: Tags = Field(default_factory=list)
    pattern: str | None = Field(default=None, max_length=MAX_PATTERN)
    bridge: Bridge | None = None
    project: ShortText | None = None
    feature: ShortText | None = None
    pr: ShortText | None = None
    source: ShortText | None = None
    external_id: ShortText | None = None
    entities: Entities = Field(default_factory=list)
    lifecycle: Lifecycle = Lifecycle.ACCEPTED
    status: ReviewStatus = ReviewStatus.PENDING
    outcome: Outcome | None = None
    actual_result: str | None = Field(default=None, max_length=MAX_CONTEXT)
    lessons: str | None = Field(default=None, max_length=MAX_CONTEXT)
    review_notes: str | None = Field(default=None, max_length=MAX_CONTEXT)
    reviewed_at: UtcDatetime | None = None
    reviewed_by: ShortText | None = None
    affected_kpis: dict[str, float] | None = Field(default=None, max_length=100)
    past_reviews: list[Review] | None = None
    review_by: UtcDatetime | None = None
    #: CSTP's compaction flag: never compacted, whatever its age.
    preserve: bool | None = None
    extras: Extras = None
    created_at: UtcDatetime
    occurred_at: UtcDatetime | None = None
    recorded_by: ShortText
    updated_at: UtcDatetime | None = None
    updated_by: ShortText | None = None
    version: int = Field(default=1, ge=1)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_node_id(value)

    @field_validator("lifecycle")
    @classmethod
    def _stored_lifecycle(cls, value: Lifecycle) -> Lifecycle:
        if value is Lifecycle.SUPERSEDED:
            raise ValueError("superseded is derived from a supersedes edge; supersede instead")
        return value

    @field_validator("past_reviews")
    @classmethod
    def _no_empty_history(cls, value: list[Review] | None) -> list[Review] | None:
        return value or None  # one stored form: no past reviews is an absent field

    def current_review(self) -> Review | None:
        """The latest review (the flat fields), or ``None`` before the first."""
        if self.status is not ReviewStatus.REVIEWED or self.outcome is None:
            return None
        return Review(
            outcome=self.outcome,
            actual_result=self.actual_result,
            lessons=self.lessons,
            notes=self.review_notes,
            reviewed_at=self.reviewed_at,
            reviewed_by=self.reviewed_by,
            affected_kpis=self.affected_kpis,
        )

    def reviews(self) -> list[Review]:
        """Every review, oldest first; the last is the current outcome."""
        current = self.current_review()
        return [*(self.past_reviews or ()), *([current] if current else [])]

    def to_attrs(self) -> dict[str, Any]:
        """The JSON-compatible attribute dict kept on the graph node (``id`` is the key)."""
        return self.model_dump(mode="json", exclude={"id"}, exclude_none=True)

    @classmethod
    def from_attrs(cls, node_id: str, attrs: dict[str, Any]) -> Node:
        return cls.model_validate({**attrs, "id": node_id})


class Edge(_Strict):
    """A typed directed edge ``source -> target`` ("source <type> target")."""

    source: str
    target: str
    type: EdgeType
    weight: float = Field(default=1.0, gt=0.0, le=MAX_WEIGHT)
    created_at: UtcDatetime
    created_by: ShortText
    context: str | None = Field(default=None, max_length=MAX_CONTEXT)
    origin: Literal["manual", "auto"] = "manual"
    meta: dict[str, MetaValue] = Field(default_factory=dict, max_length=32)

    @field_validator("source", "target")
    @classmethod
    def _ids(cls, value: str, info: ValidationInfo) -> str:
        return check_node_id(value, info.field_name or "id")

    @field_validator("meta")
    @classmethod
    def _meta(cls, value: dict[str, MetaValue]) -> dict[str, MetaValue]:
        for key, item in value.items():
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"meta.{key} must be finite")
        return value

    def to_attrs(self) -> dict[str, Any]:
        """Attributes kept on the graph edge; source, target and type are its endpoints and key."""
        return self.model_dump(mode="json", exclude={"source", "target", "type"}, exclude_none=True)

    @classmethod
    def from_attrs(cls, source: str, target: str, edge_type: str, attrs: dict[str, Any]) -> Edge:
        return cls.model_validate({**attrs, "source": source, "target": target, "type": edge_type})
