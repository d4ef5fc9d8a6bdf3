"""Shared pieces of the BENCHMARKS.md renderer: targets, cell formatting, the Report buffer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SALIENCE_RATIO = 3.0
RECALL_P50_MS, RECALL_P95_MS = 30.0, 60.0
LOCOMO_R10 = 0.66
CONTRA_PRECISION, CONTRA_RECALL = 0.95, 0.85
CATS = ["multi-hop", "temporal", "open-domain", "single-hop"]
HYBRID = "hybrid recall (decigraph)"
NA = "n/a"
FLOOR = "GET /.well-known/agent.json"


def ms(cell: dict[str, Any] | None) -> tuple[str, str]:
    if not cell:
        return NA, NA
    return f"{cell['median_ms']:,.2f} ms", f"{cell['p95_ms']:,.2f} ms"


def ok(flag: bool) -> str:
    return "**met**" if flag else "**missed**"


class Report:
    def __init__(self, results: Path) -> None:
        self.dir = results
        self.run: dict[str, Any] = json.loads((results / "run.json").read_text())
        self.lines: list[str] = []
        self.targets: list[list[str]] = []

    def load(self, name: str) -> Any:
        step = self.run["steps"].get(name)
        if step is None or step["status"] != "ok":
            why = "not run" if step is None else f"{step['status']}, see `{step['log']}`"
            self.out(f"*Not measured in this run ({why}).*", "")
            return None
        return json.loads((self.dir / f"{name}.json").read_text())

    def out(self, *lines: str) -> None:
        self.lines.extend(lines)

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        self.out("| " + " | ".join(header) + " |", "|" + "---|" * len(header))
        self.out(*("| " + " | ".join(str(c) for c in row) + " |" for row in rows), "")
