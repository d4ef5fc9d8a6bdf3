"""BENCHMARKS.md section for the agent-session benchmark (``bench/bench_agent_sessions.py``)."""

from __future__ import annotations

from typing import Any

from bench.report_base import NA, Report, ok

#: Issue 28's targets.
MUST_RECALL, PRECISION, RAISED, FALSE_RAISED, FAILURES = 0.95, 0.90, 0.90, 0.10, 0.90
PRE_ACTION_BYTES, CONTEXT_BYTES, TOOL_BYTES = 2048, 4096, 12 * 1024


def _f(value: Any) -> str:
    return NA if value is None else f"{value:.3f}"


def _row(label: str, s: dict[str, Any]) -> list[str]:
    pre, ctx = s["preActionBytes"], s["sessionContextBytes"]
    return [
        label, _f(s["mustAppearRecall"]), _f(s["precision"]), _f(s.get("precisionMustNot")),
        f"{_f(s['conflictsRaised'])} of {s['conflictProbes']}",
        f"{_f(s['falseConflicts'])} of {s['noConflictProbes']}",
        f"{_f(s['failuresRecalled'])} of {s['failures']}",
        f"{pre['median']} / {pre['p95']}", f"{ctx['median']} / {ctx['p95']}",
        str(s.get("toolBytes", NA)),
    ]  # fmt: skip


HEADER = [
    "server", "must-appear recall", "precision (strict)", "precision (not must-not)",
    "conflicts raised", "false conflicts", "failures recalled",
    "preAction bytes median / p95", "session context bytes median / p95", "tools/list bytes",
]  # fmt: skip


def agent_sessions(r: Report) -> None:
    r.out("## Quality: what an agent is told (scripted sessions over MCP)", "")
    a = r.load("agent-sessions")
    if not a:
        return
    new, base = a["new"], a["baseline"]
    n = len(new["sessions"])
    r.out(
        f"`bench/bench_agent_sessions.py`: the {n} frozen `{a['set']}` sessions of "
        "`bench/agent_sessions/` (each written by a helper who saw only `WRITERS_TASK.md` and a "
        "domain, never the ranking code), played step by step through a real `decigraph serve` "
        "over MCP (the SDK's client at `/mcp`): records, reviews, supersessions, and at each "
        "probe `pre_action` (not recording) or `get_session_context`. A decision is *named* when "
        "its id appears in the answer. Strict precision counts every named decision the writer "
        "did not list as must or may appear as noise; the second precision counts only the "
        "writer's must-not-appear list as noise. Conflicts are read from the answer's conflict "
        f"part. The baseline is commit `{a['baselineCommit']}` (main before this work), served "
        "and measured by the same client in the same run.",
        "",
    )
    r.table(HEADER, [_row("this tree", new["overall"]), _row("baseline", base["overall"])])
    rows = []
    for s_new, s_base in zip(new["sessions"], base["sessions"], strict=True):
        x, y = s_new["summary"], s_base["summary"]
        rows.append([
            s_new["id"], str(s_new.get("domain", ""))[:60],
            f"{_f(x['mustAppearRecall'])} ({_f(y['mustAppearRecall'])})",
            f"{_f(x['precision'])} ({_f(y['precision'])})",
            f"{_f(x['conflictsRaised'])} ({_f(y['conflictsRaised'])})",
            f"{_f(x['falseConflicts'])} ({_f(y['falseConflicts'])})",
            f"{_f(x['failuresRecalled'])} ({_f(y['failuresRecalled'])})",
            f"{x['preActionBytes']['median']} ({y['preActionBytes']['median']})",
        ])  # fmt: skip
    r.out("Per session (baseline in brackets):", "")
    r.table(
        ["session", "domain", "must recall", "precision", "conflicts raised", "false conflicts",
         "failures", "preAction median bytes"],
        rows,
    )  # fmt: skip
    o = new["overall"]
    pre, ctx = o["preActionBytes"]["median"], o["sessionContextBytes"]["median"]
    r.targets += [
        ["agent sessions: must-appear recall", f">= {MUST_RECALL}", _f(o["mustAppearRecall"]),
         ok((o["mustAppearRecall"] or 0) >= MUST_RECALL)],
        ["agent sessions: precision of decisions named (strict)", f">= {PRECISION}",
         _f(o["precision"]), ok((o["precision"] or 0) >= PRECISION)],
        ["agent sessions: conflicts raised when expected", f">= {RAISED}",
         _f(o["conflictsRaised"]), ok((o["conflictsRaised"] or 0) >= RAISED)],
        ["agent sessions: conflicts raised without one", f"<= {FALSE_RAISED}",
         _f(o["falseConflicts"]), ok((o["falseConflicts"] or 1) <= FALSE_RAISED)],
        ["agent sessions: failures recalled", f">= {FAILURES}", _f(o["failuresRecalled"]),
         ok((o["failuresRecalled"] or 0) >= FAILURES)],
        ["agent sessions: preAction answer median", f"<= {PRE_ACTION_BYTES} B", f"{pre} B",
         ok(pre is not None and pre <= PRE_ACTION_BYTES)],
        ["agent sessions: session context median", f"<= {CONTEXT_BYTES} B", f"{ctx} B",
         ok(ctx is not None and ctx <= CONTEXT_BYTES)],
        ["MCP tools/list (descriptions + schemas)", f"<= {TOOL_BYTES} B",
         f"{o.get('toolBytes')} B", ok((o.get("toolBytes") or 10**9) <= TOOL_BYTES)],
    ]  # fmt: skip
