"""The wire form of the use cases' inputs: camelCase aliases (snake_case accepted) and the
checks only a JSON boundary needs.

Params models derive from the inputs in :mod:`service.usecases.inputs` and
:mod:`graph.drafts` and add nothing but aliases (:func:`wire`), so every limit is declared once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pydantic import (
    AliasChoices,
    AliasGenerator,
    BaseModel,
    ConfigDict,
    ValidatorFunctionWrapHandler,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError
from pydantic_core import ValidationError as CoreValidationError

from graph.timeutil import UtcDatetime, parse_ts

#: Timestamps are stored as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``: a four-digit year keeps text order
#: equal to time order and keeps every stored value parseable.
MIN_YEAR, MAX_YEAR = 1000, 9999
#: What CSTP's clients call a decision's id in params.
ID_ALIASES = ("id", "decision_id", "decisionId")
#: Integers must survive the JSON round trip (the encoder writes 64-bit integers only).
INT_RANGE = range(-(2**63), 2**63)


def wire(**renames: str | tuple[str, ...]) -> ConfigDict:
    """Model config for params whose wire names differ from the domain's beyond camelCase:
    ``wire(text="decision", source="sourceId")``; a tuple gives accepted alternatives, the first
    being the one error messages use."""

    def validation_alias(name: str) -> str | AliasChoices:
        renamed = renames.get(name)
        if renamed is None:
            return to_camel(name)
        if isinstance(renamed, tuple):
            return AliasChoices(*renamed, name)
        return renamed

    def alias(name: str) -> str:
        renamed = renames.get(name)
        if renamed is None:
            return to_camel(name)
        return renamed[0] if isinstance(renamed, tuple) else renamed

    generator: Callable[[str], Any] = validation_alias
    return ConfigDict(alias_generator=AliasGenerator(alias=alias, validation_alias=generator))


def _range_error(loc: tuple[str, ...], value: Any, message: str) -> CoreValidationError:
    error = PydanticCustomError("out_of_range", message)
    return CoreValidationError.from_exception_data(
        "Params", [{"type": error, "loc": loc, "input": value}]
    )


def _overflowing_key(value: Any) -> tuple[str, ...]:
    """The key of a nested object whose timestamp overflows (``()`` when it is the value)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(item, str):
                try:
                    parse_ts(item)
                except OverflowError:
                    return (str(key),)
                except ValueError:
                    continue
    return ()


def _range_problem(value: Any) -> tuple[tuple[str, ...], str] | None:
    """Where a validated value leaves the storable range, and why (``None`` when it does not)."""
    if isinstance(value, datetime):
        if not MIN_YEAR <= value.year <= MAX_YEAR:
            return (), f"year must be between {MIN_YEAR} and {MAX_YEAR} (UTC)"
    elif isinstance(value, int) and not isinstance(value, bool):
        if value not in INT_RANGE:
            return (), "is out of range (64-bit integers only)"
    elif isinstance(value, BaseModel) and not isinstance(value, Params):  # e.g. RecallFilters
        for name, info in type(value).model_fields.items():
            problem = _range_problem(getattr(value, name))
            if problem is not None:
                return (info.alias or name, *problem[0]), problem[1]
    return None


class Params(BaseModel):
    """Base of every method's params: camelCase or snake_case keys, unknown keys refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        allow_inf_nan=False,
        str_strip_whitespace=True,
    )

    @field_validator("*", mode="wrap")
    @classmethod
    def _storable(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """Refuse, naming the field, dates and integers that validate but cannot be stored or
        answered: a UTC conversion past year 9999 (``OverflowError``), a year below 1000 (its
        timestamp text would not parse back), an integer past 64 bits (``1e30`` is a valid
        ``int`` and would break the JSON encoder when echoed)."""
        try:
            result = handler(value)
        except OverflowError:
            raise _range_error(_overflowing_key(value), value, "date is out of range") from None
        problem = _range_problem(result)
        if problem is not None:
            raise _range_error(problem[0], value, problem[1])
        return result


class NoParams(Params):
    pass


class TimeParams(BaseModel):
    """``asOf`` (a seq, or an ISO-8601 time: the store as it stood then, by transaction time)
    and ``validAt`` (only what was in force then, by valid time), for the read methods that
    take them (:mod:`service.usecases.history`)."""

    as_of: int | UtcDatetime | None = None
    valid_at: UtcDatetime | None = None
