"""Placeholder: the breakers methods are being written (issue 13)."""

from __future__ import annotations

from service import usecases
from service.rpc.protocol import Registry


def register_breakers(registry: Registry, app: usecases.Decigraph) -> None:
    """Register the breakers methods (none yet)."""
