"""The agent-session benchmark (``bench/agent_sessions/``) as a ``make bench`` step: the frozen
test sessions played over MCP through a real server of this tree, and through a real server of
the baseline commit (a git worktree, same client, same run), into one result file.

Usage: python bench/bench_agent_sessions.py --out FILE [--baseline-commit SHA] [--set test]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import ROOT as _ROOT  # noqa: E402,F401 - the package's root check

#: main before issue 28 (the briefing): the baseline the issue names.
BASELINE = "48a5022"


def worktree(commit: str) -> Path:
    """A checkout of ``commit`` under ``bench/.cache`` (made once, reused)."""
    path = ROOT / "bench" / ".cache" / f"baseline-{commit}"
    if not (path / "service").exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--force", "--detach", str(path), commit],
            check=True,
        )
    return path


def play(root: Path, label: str, which: str) -> dict[str, object]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "agent_sessions" / "run.py"), "--set", which,
             "--root", str(root), "--label", label, "--out", out.name],
            check=True,
        )  # fmt: skip
        result: dict[str, object] = json.loads(Path(out.name).read_text())
    for session in result["sessions"]:  # type: ignore[attr-defined]
        session.pop("transcript", None)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--baseline-commit", default=BASELINE)
    ap.add_argument("--set", default="test", choices=["test", "dev"])
    a = ap.parse_args()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    new = play(ROOT, "this tree", a.set)
    base = play(worktree(a.baseline_commit), f"baseline {a.baseline_commit}", a.set)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"set": a.set, "head": head, "baselineCommit": a.baseline_commit}
    a.out.write_text(json.dumps({**doc, "new": new, "baseline": base}, indent=1))


if __name__ == "__main__":
    main()
