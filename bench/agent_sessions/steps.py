"""How a session's ``record`` step becomes ``log_decision`` arguments (shared by the benchmark
runner and ``scripts/train_relevance.py``, so both replay a session the same way)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def record_args(step: Mapping[str, Any], ids: Mapping[str, str]) -> dict[str, Any]:
    """``log_decision``'s arguments for ``step``; ``ids`` maps the session's keys to ids (keys
    not recorded yet are left out)."""
    args: dict[str, Any] = {
        "decision": step["decision"],
        "confidence": step.get("confidence", 0.8),
        "category": step.get("category", "architecture"),
        "stakes": step.get("stakes", "medium"),
    }
    if step.get("context"):
        args["context"] = step["context"]
    if step.get("reasons"):
        args["reasons"] = [{"type": "analysis", "text": r} for r in step["reasons"]]
    for name in ("supersedes", "compatible_with"):
        if step.get(name):
            args[name] = [ids[k] for k in step[name] if k in ids]
    if step.get("override_reason"):
        args["override_reason"] = step["override_reason"]
    return args
