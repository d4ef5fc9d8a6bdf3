"""The arguments a tool accepts, and what a call's other arguments become.

A tool accepts every field of its input model (:mod:`.schemas`, or a method's params for
decigraph's own tools), at every depth, listed in its schema or not. Before a call is mapped
onto its method, :func:`check_arguments` walks the arguments beside that tree:

- a key that misspells an accepted one (``confidnce``, ``supersede``, ``overide_reason``,
  ``CompatibleWith``: :func:`service.rpc.lenient.close_match`) refuses the call, naming the key
  and the argument it most likely meant; nothing is called, so nothing is written;
- any other unknown key is dropped and named in the answer's warnings
  (``"colour: not a known argument; ignored"``), as ``POST /cstp`` names ignored params.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, Union

import pydantic

from service.rpc.errors import clip
from service.rpc.lenient import close_match, misspelt

#: An accepted argument name -> the names accepted inside it (``None``: a value, or a free-form
#: object whose keys are data).
Known = dict[str, Union["Known", None]]


def _model_in(annotation: Any) -> type[pydantic.BaseModel] | None:
    """The one pydantic model inside ``annotation`` (``X | None``, ``list[X]``), if any; a
    union that also admits a free-form object is free-form."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if annotation is dict or origin is dict or origin is Mapping:
        return None
    found: list[type[pydantic.BaseModel]] = []
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is dict or arg is dict:
            return None
        model = _model_in(arg)
        if model is not None:
            found.append(model)
    return found[0] if len(found) == 1 else None


def known_of(model: type[pydantic.BaseModel], renames: Mapping[str, str] | None = None) -> Known:
    """The arguments ``model`` accepts, by field name (``renames``: the tool's names for some
    top-level fields), with the names accepted inside nested models."""
    tree: Known = {}
    for name, info in model.model_fields.items():
        nested = _model_in(info.annotation)
        key = (renames or {}).get(name, name)
        tree[key] = None if nested is None else known_of(nested)
    return tree


def check_arguments(
    known: Known, arguments: Mapping[str, Any], prefix: str = ""
) -> tuple[dict[str, Any], list[str]]:
    """``arguments`` without the unknown keys, and a warning naming each; raises
    :class:`~service.rpc.errors.RpcError` (-32602) for a misspelt key."""
    warnings: list[str] = []
    kept = _walk(known, arguments, prefix, warnings)
    return kept, warnings


def _walk(
    known: Known, given: Mapping[str, Any], prefix: str, warnings: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in given.items():
        where = f"{prefix}{key}"
        if key not in known:
            meant = close_match(key, known)
            if meant is not None:
                raise misspelt(where, f"{prefix}{meant}", "argument")
            warnings.append(f"{clip(where)}: not a known argument; ignored")
            continue
        inner = known[key]
        if inner is None:
            out[key] = value
        elif isinstance(value, Mapping):
            out[key] = _walk(inner, value, f"{where}.", warnings)
        elif isinstance(value, list):
            out[key] = [
                _walk(inner, item, f"{where}.{n}.", warnings) if isinstance(item, Mapping) else item
                for n, item in enumerate(value)
            ]
        else:
            out[key] = value
    return out


def with_warnings(
    payload: dict[str, Any], warnings: list[str], key: str = "warnings"
) -> dict[str, Any]:
    """``payload`` with ``warnings`` added to its list under ``key`` (``paramWarnings`` for a
    tool whose own ``warnings`` mean something else: check_action's guardrail warnings)."""
    if not warnings:
        return payload
    said = payload.get(key)
    return {**payload, key: [*(said if isinstance(said, list) else []), *warnings]}
