"""Canonical JSON and hashing: the same value always gives the same bytes."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

_OPTIONS = orjson.OPT_SORT_KEYS


def canonical_json(value: Any) -> bytes:
    """Compact JSON with sorted keys; floats in orjson's shortest round-trip form."""
    return orjson.dumps(value, option=_OPTIONS)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
