"""Processes as the PostgreSQL test harness sees them, read from ``/proc`` (Linux): a process
is named by its pid and start time, so a reused pid is never mistaken for it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

Proc = tuple[int, int]  # (pid, start time): a pid is not reused while its start time matches


def stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields after "pid (comm)": state, ppid, ...


def of_pid(pid: int) -> Proc | None:
    fields = stat(pid)
    return None if fields is None else (pid, int(fields[19]))


def alive(proc: Proc) -> bool:
    fields = stat(proc[0])
    return fields is not None and int(fields[19]) == proc[1] and fields[0] not in ("Z", "X")


def children(pid: int) -> list[Proc]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := stat(int(entry.name))) and int(fields[1]) == pid:
            found.append((int(entry.name), int(fields[19])))
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def send(procs: list[Proc], sig: int) -> None:
    for proc in procs:
        if alive(proc):
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc[0], sig)


def reap(procs: list[Proc], grace: float) -> None:
    """Wait until ``procs`` are gone: SIGCONT (a SIGSTOPped backend cannot notice its postmaster
    is dead), ``grace`` seconds to exit on their own, then SIGKILL."""
    send(procs, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while any(alive(p) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.02)
    send(procs, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(alive(p) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.01)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def read_text(path: Path, errors: str = "strict") -> str:
    try:
        return path.read_text(errors=errors)
    except (OSError, UnicodeDecodeError):
        return ""


def shm_of(data_dir: Path) -> tuple[int, int] | None:
    """(key, id) of the postmaster's SysV segment: line 7 of postmaster.pid."""
    lines = read_text(data_dir / "postmaster.pid").splitlines()
    parts = lines[6].split() if len(lines) > 6 else []
    return (int(parts[0]), int(parts[1])) if len(parts) == 2 else None


def remove_shm(shm: tuple[int, int] | None) -> None:
    """A SIGKILLed postmaster leaves its (small) SysV segment behind: remove it if it is still
    that segment and nothing is attached (one per kill would add up in kill loops)."""
    if shm is None or not shutil.which("ipcrm"):
        return
    for line in read_text(Path("/proc/sysvipc/shm")).splitlines()[1:]:
        key, shmid, _perms, _size, _cpid, _lpid, nattch = (int(f) for f in line.split()[:7])
        if (key, shmid) == shm and nattch == 0:
            subprocess.run(["ipcrm", "-m", str(shmid)], check=False, capture_output=True)
