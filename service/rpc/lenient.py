"""Params as CSTP's clients send them: unknown keys ignored (and reported), limits clamped.

CSTP reads its params by key look-up, so a key it does not know is simply ignored, at any depth;
its clients rely on that (the CLI sends ``project_context``, the dashboard sends filters at the
top level). decigraph validates strictly, so before validation :func:`relax` walks the params
alongside the method's params model and

- drops every key the model does not declare, at every depth, reporting each in a warning
  (``"project_context.repo: not a known parameter; ignored"``), so nothing is dropped silently;
- clamps the few numbers CSTP clamps (``limit``, ``depth``...) into their declared range, with a
  warning, instead of refusing them;
- refuses, on methods that write, any key that claims an identity (``recordedBy``, ``agent``...):
  the bearer token decides who acts, and a claim is an error rather than something to ignore;
- refuses a key that is a misspelling of a declared one (``confidnce``, ``supersede``,
  ``CompatibleWith``: :func:`close_match`), naming the field it most likely meant, so a typo
  never writes a decision without the value it was meant to carry.

Everything else (types, sizes, depth) is still validated strictly by the model.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Iterable, Mapping
from difflib import SequenceMatcher
from typing import Any

import annotated_types
import pydantic
from pydantic import AliasChoices
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from .errors import INVALID_PARAMS, RpcError, clip

#: Keys that claim who is acting. Refused on writes wherever a model does not declare them.
IDENTITY_KEYS = frozenset(
    {
        "actor",
        "agent",
        "recordedBy",
        "recorded_by",
        "createdBy",
        "created_by",
        "reviewedBy",
        "reviewed_by",
        "updatedBy",
        "updated_by",
    }
)

#: Numeric params CSTP clamps into range rather than refusing (by field name).
CLAMPED = frozenset(
    {
        "limit",
        "offset",
        "depth",
        "hops",
        "top_k",
        "query_limit",
        "decisions_limit",
        "ready_limit",
        "min_decisions",
        "min_reviewed",
        "hybrid_weight",
    }
)


#: How alike (difflib's ratio of the names without case, ``_`` or ``-``) an unknown key and a
#: declared field must be for the key to be read as a misspelling of it (``confidnce`` 0.95,
#: ``tag`` 0.86); CSTP clients' own extra keys (``repo``, ``sort``, ``order``) stay below.
CLOSE = 0.85


def _plain(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def close_match(key: str, known: Iterable[str]) -> str | None:
    """The known name ``key`` most likely misspells (the spelling closest to the key's), or
    ``None`` when none is close: the same name in another case or separator
    (``CompatibleWith``), or one within :data:`CLOSE` (``confidnce``). Identity keys are
    never taken for misspellings."""
    if key in IDENTITY_KEYS or not key:
        return None
    plain = _plain(key)
    best: tuple[float, float, str] | None = None
    for name in known:
        if name == key or name in IDENTITY_KEYS:
            continue
        other = _plain(name)
        score = 1.0 if other == plain else SequenceMatcher(None, plain, other).ratio()
        if score < CLOSE:
            continue
        ranked = (score, SequenceMatcher(None, key, name).ratio(), name)
        if best is None or ranked[:2] > best[:2]:
            best = ranked
    return None if best is None else best[2]


def misspelt(where: str, suggestion: str, what: str = "parameter") -> RpcError:
    """The refusal of a misspelt key: it names the key and the field it most likely meant."""
    message = f"{clip(where)}: not a known {what}; did you mean {suggestion}?"
    return RpcError(INVALID_PARAMS, message, {"field": where, "suggestion": suggestion})


def _names(name: str, info: FieldInfo) -> set[str]:
    """Every key that fills field ``name`` (the params accept snake_case and camelCase)."""
    keys = {name, to_camel(name)}
    if info.alias:
        keys.add(info.alias)
    alias = info.validation_alias
    if isinstance(alias, str):
        keys.add(alias)
    elif isinstance(alias, AliasChoices):
        keys.update(choice for choice in alias.choices if isinstance(choice, str))
    return keys


def _models_in(annotation: Any) -> list[type[pydantic.BaseModel]]:
    """The pydantic models inside ``annotation`` (``X | None``, ``list[X]``, ``Annotated``)."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    found: list[type[pydantic.BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(_models_in(arg))
    return found


def _free_form(annotation: Any) -> bool:
    """Whether ``annotation`` admits a free-form object (``dict[str, Any]``): its keys are data."""
    origin = typing.get_origin(annotation)
    if annotation is dict or origin is dict or origin is Mapping:
        return True
    return any(_free_form(arg) for arg in typing.get_args(annotation))


def _bounds(info: FieldInfo) -> tuple[float | None, float | None]:
    low: float | None = None
    high: float | None = None
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            low = float(item.ge)  # type: ignore[arg-type]
        elif isinstance(item, annotated_types.Le):
            high = float(item.le)  # type: ignore[arg-type]
    return low, high


def relax(
    model: type[pydantic.BaseModel], params: Mapping[str, Any], *, writes: bool
) -> tuple[dict[str, Any], list[str]]:
    """``params`` with undeclared keys dropped and CSTP's clamped numbers clamped, and the
    warnings saying so. Raises :class:`RpcError` for an identity claim on a write."""
    warnings: list[str] = []
    cleaned = _walk(model, params, "", warnings, writes=writes, top=True)
    return cleaned, warnings


def _walk(
    model: type[pydantic.BaseModel],
    data: Mapping[str, Any],
    prefix: str,
    warnings: list[str],
    *,
    writes: bool,
    top: bool = False,
) -> dict[str, Any]:
    fields: dict[str, tuple[str, FieldInfo]] = {}
    for name, info in model.model_fields.items():
        for key in _names(name, info):
            fields[key] = (name, info)
    extra_allowed = model.model_config.get("extra") == "allow"
    out: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{prefix}{key}"
        if key not in fields:
            meant = close_match(key, fields)
            if meant is not None:  # a typo: refused, even where extra keys are allowed
                raise misspelt(where, f"{prefix}{meant}")
            if extra_allowed:
                out[key] = value
                continue
            if writes and key in IDENTITY_KEYS:
                message = f"{clip(where)}: is set by the bearer token and cannot be sent"
                raise RpcError(INVALID_PARAMS, message, {"field": where})
            warnings.append(f"{clip(where)}: not a known parameter; ignored")
            continue
        name, info = fields[key]
        given = _clamp(where, value, info, warnings) if top and name in CLAMPED else value
        out[key] = _nested(info.annotation, given, where, warnings, writes=writes)
    return out


def _nested(annotation: Any, value: Any, where: str, warnings: list[str], *, writes: bool) -> Any:
    models = _models_in(annotation)
    if len(models) != 1 or _free_form(annotation):
        return value  # a scalar, a free-form object, or a union too loose to walk
    model = models[0]
    if isinstance(value, Mapping):
        return _walk(model, value, f"{where}.", warnings, writes=writes)
    if isinstance(value, list):
        return [
            _walk(model, item, f"{where}.{n}.", warnings, writes=writes)
            if isinstance(item, Mapping)
            else item
            for n, item in enumerate(value)
        ]
    return value


def _clamp(where: str, value: Any, info: FieldInfo, warnings: list[str]) -> Any:
    """CSTP clamps limits into range: so does decigraph, saying so."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return value
    low, high = _bounds(info)
    clamped: int | float = value
    if low is not None and value < low:
        clamped = low
    elif high is not None and value > high:
        clamped = high
    if clamped == value:
        return value
    if isinstance(value, int):
        clamped = int(clamped)
    warnings.append(f"{where}: {value} is out of range; clamped to {clamped}")
    return clamped
