"""Checks one session file's shape (not its content)."""

import json
import sys

KINDS = {"record", "review", "pre_action", "session_context"}
CATS = {"architecture", "process", "integration", "tooling", "security"}
STAKES = {"low", "medium", "high", "critical"}
OUTCOMES = {"success", "partial", "failure", "abandoned"}
LISTS = ("must_appear", "may_appear", "conflicts", "failures", "must_not_appear")


def main(path: str) -> int:
    with open(path) as f:
        doc = json.load(f)
    errs = []
    agents = set(doc.get("agents") or [])
    if not agents:
        errs.append("agents: list one or two agent names")
    seen: dict[str, str] = {}
    failed: set[str] = set()
    counts = dict.fromkeys(KINDS, 0)
    for i, s in enumerate(doc.get("steps", [])):
        where = f"step {i}"
        kind = s.get("do")
        if kind not in KINDS:
            errs.append(f"{where}: do must be one of {sorted(KINDS)}")
            continue
        counts[kind] += 1
        if kind in ("record", "pre_action", "session_context") and s.get("agent") not in agents:
            errs.append(f"{where}: agent must be one of {sorted(agents)}")
        if kind == "record":
            key = s.get("key")
            if not key or key in seen:
                errs.append(f"{where}: key missing or reused: {key}")
            if not s.get("decision"):
                errs.append(f"{where}: decision text missing")
            if s.get("category", "architecture") not in CATS:
                errs.append(f"{where}: category must be one of {sorted(CATS)}")
            if s.get("stakes", "medium") not in STAKES:
                errs.append(f"{where}: stakes must be one of {sorted(STAKES)}")
            for f in ("depends_on", "supersedes", "compatible_with"):
                for k in s.get(f, []):
                    if k not in seen:
                        errs.append(f"{where}: {f} names unknown key {k}")
            if key:
                seen[key] = s.get("decision", "")
        elif kind == "review":
            if s.get("key") not in seen:
                errs.append(f"{where}: review of unknown key {s.get('key')}")
            if s.get("outcome") not in OUTCOMES:
                errs.append(f"{where}: outcome must be one of {sorted(OUTCOMES)}")
            if s.get("outcome") in ("failure", "abandoned"):
                failed.add(s.get("key"))
        else:
            text = s.get("action") if kind == "pre_action" else s.get("task")
            if not text:
                errs.append(f"{where}: {'action' if kind == 'pre_action' else 'task'} missing")
            exp = s.get("expect")
            if not isinstance(exp, dict):
                errs.append(f"{where}: expect missing")
                continue
            for name in LISTS:
                for k in exp.get(name, []):
                    if k not in seen:
                        errs.append(f"{where}: expect.{name} names unknown key {k}")
            must = set(exp.get("must_appear", []))
            for name in ("conflicts", "failures"):
                if not set(exp.get(name, [])) <= must:
                    errs.append(f"{where}: every {name} key must also be in must_appear")
            if set(exp.get("must_not_appear", [])) & (must | set(exp.get("may_appear", []))):
                errs.append(f"{where}: must_not_appear overlaps must/may_appear")
            for k in exp.get("failures", []):
                if k not in failed:
                    errs.append(f"{where}: failures key {k} was not reviewed failure/abandoned")
    n = len(doc.get("steps", []))
    if not 25 <= n <= 40:
        errs.append(f"{n} steps; write 25-40")
    if counts["record"] < 15:
        errs.append("at least 15 record steps")
    if not 6 <= counts["pre_action"] <= 10:
        errs.append("6-10 pre_action probes")
    if not 2 <= counts["session_context"] <= 3:
        errs.append("2-3 session_context probes")
    for e in errs:
        print("ERROR", e)
    print(f"{n} steps: {counts}; {'OK' if not errs else f'{len(errs)} problems'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
