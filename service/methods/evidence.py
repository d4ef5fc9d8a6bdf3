"""Placeholder: the evidence methods are being written (issue 13)."""

from __future__ import annotations

from service import usecases
from service.rpc.protocol import Registry


def register_evidence(registry: Registry, app: usecases.Decigraph) -> None:
    """Register the evidence methods (none yet)."""
