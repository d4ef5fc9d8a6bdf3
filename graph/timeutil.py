"""UTC timestamps with one fixed-width text form, so string order is time order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def to_utc(value: datetime) -> datetime:
    """Make ``value`` timezone-aware UTC; naive datetimes are taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    if value.tzinfo is UTC:  # the common case; astimezone would copy it for nothing
        return value
    return value.astimezone(UTC)


def format_ts(value: datetime) -> str:
    """``2026-05-01T12:00:00.000000Z``: always microseconds, always ``Z``."""
    return to_utc(value).strftime(TIMESTAMP_FORMAT)


def parse_ts(value: str | datetime) -> datetime:
    """Parse an ISO-8601 date or datetime (``Z`` or offset; naive means UTC)."""
    if isinstance(value, datetime):
        return to_utc(value)
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return to_utc(datetime.fromisoformat(text))


def _validate(value: object) -> datetime:
    if isinstance(value, datetime):
        return to_utc(value)
    if isinstance(value, str):
        try:
            return parse_ts(value)
        except ValueError as exc:
            raise ValueError(f"not an ISO-8601 date or datetime: {value!r}") from exc
    raise ValueError(f"expected an ISO-8601 string, got {type(value).__name__}")


UtcDatetime = Annotated[
    datetime,
    BeforeValidator(_validate),
    PlainSerializer(format_ts, return_type=str, when_used="json"),
]


def utc_now() -> datetime:
    return datetime.now(UTC)
