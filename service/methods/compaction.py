"""Placeholder: the compaction methods are being written (issue 13)."""

from __future__ import annotations

from service import usecases
from service.rpc.protocol import Registry


def register_compaction(registry: Registry, app: usecases.Decigraph) -> None:
    """Register the compaction methods (none yet)."""
