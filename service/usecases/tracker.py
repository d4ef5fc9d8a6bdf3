"""Placeholder: CSTP's deliberation tracker is being written (issue 13)."""

from __future__ import annotations

from .context import Decigraph
from .inputs import RecordDecision


def attach_deliberation(
    app: Decigraph,
    cmd: RecordDecision,
    *,
    agent: str,
    agent_id: str | None = None,
    decision_id: str | None = None,
) -> RecordDecision:
    """``cmd`` with the deliberation the tracker captured for this agent's session (none yet)."""
    return cmd
