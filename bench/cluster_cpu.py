"""What else the machine was doing during ``bench/bench_cluster.py``: CPU-seconds used by this
run's process tree and by everything else, per phase, and a wait for a quiet moment first.

The run's tree is this process, its live descendants (writer processes, servers, PostgreSQL's
postmaster and backends: their ``utime + stime + cutime + cstime`` from ``/proc/<pid>/stat``)
and the children it has reaped (``os.times()``); the machine's busy time comes from
``/proc/stat``. Other work = machine busy - this run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

HZ = os.sysconf("SC_CLK_TCK")


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def machine_cpu() -> tuple[float, float]:
    """(busy, busy + idle) CPU-seconds of the whole machine since boot."""
    user, nice, system, idle, iowait, irq, softirq, steal = (
        int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    )
    busy = user + nice + system + irq + softirq + steal
    return busy / HZ, (busy + idle + iowait) / HZ


def tree_cpu() -> float:
    """CPU-seconds used so far by this process and all its descendants, living or reaped."""
    times = os.times()
    total = times.user + times.system + times.children_user + times.children_system
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue  # exited meanwhile
        fields = text[text.rindex(")") + 2 :].split()  # state, ppid, ...: field 3 onwards
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        ticks[pid] = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    todo, seen = list(children.get(os.getpid(), [])), 0
    while todo:
        pid = todo.pop()
        seen += ticks.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total + seen / HZ


class Phases:
    """Per phase: the wait for a quiet machine before it, its wall time, the load average at
    its end, and the CPU-seconds of capacity, of this run and of other work during it."""

    def __init__(self, quiet_share: float, max_wait_s: float) -> None:
        self.rows: list[dict[str, Any]] = []
        self.quiet_share = quiet_share
        self.max_wait_s = max_wait_s
        self._waited = 0.0
        self._mark()

    def _mark(self) -> None:
        self._wall = time.perf_counter()
        self._busy, self._total = machine_cpu()
        self._own = tree_cpu()

    def wait_quiet(self, window_s: float = 10.0) -> None:
        """Until other work used at most ``quiet_share`` of the machine over ``window_s``
        (or ``max_wait_s`` passed); then start the next phase's clock."""
        started = time.perf_counter()
        while time.perf_counter() - started < self.max_wait_s:
            busy, total, own = *machine_cpu(), tree_cpu()
            time.sleep(window_s)
            busy2, total2, own2 = *machine_cpu(), tree_cpu()
            other = (busy2 - busy) - (own2 - own)
            if other <= self.quiet_share * (total2 - total):
                break
            print(f"[wait] other work used {other / (total2 - total):.0%}", flush=True)
        self._waited = time.perf_counter() - started
        self._mark()

    def done(self, name: str) -> None:
        busy, total = machine_cpu()
        own = tree_cpu() - self._own
        row = {
            "phase": name,
            "waited_for_quiet_s": round(self._waited, 1),
            "wall_s": round(time.perf_counter() - self._wall, 1),
            "load_at_end": loadavg(),
            "capacity_cpu_s": round(total - self._total, 1),
            "this_run_cpu_s": round(own, 1),
            "other_work_cpu_s": round(max(0.0, busy - self._busy - own), 1),
        }
        self.rows.append(row)
        self._waited = 0.0
        print(f"[{name}] {row}", flush=True)
        self._mark()
