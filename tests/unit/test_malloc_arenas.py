"""``DECIGRAPH_MALLOC_ARENAS``: ``serve`` caps glibc's malloc arenas before threads start.

Each check runs in a fresh interpreter (an arena limit only binds threads that have not
allocated yet) and counts the arenas glibc reports (``malloc_stats`` prints one ``Arena N:``
block per arena to stderr) after eight threads each allocated.
"""

from __future__ import annotations

import ctypes.util
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import ctypes, sys, threading
from service.cli.serve import limit_malloc_arenas
print(limit_malloc_arenas(int(sys.argv[1])))
barrier = threading.Barrier(8)
def work():
    barrier.wait()  # all eight allocate at once: each asks glibc for an arena of its own
    kept = [bytearray(200_000) for _ in range(20)]
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
ctypes.CDLL("libc.so.6").malloc_stats()
"""

glibc = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc" or ctypes.util.find_library("c") is None,
    reason="malloc arenas are glibc's",
)


def arenas(limit: int, env: dict[str, str] | None = None) -> tuple[bool, int]:
    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(limit)],
        cwd=ROOT,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    applied = out.stdout.strip().splitlines()[0] == "True"
    return applied, sum(line.startswith("Arena ") for line in out.stderr.splitlines())


def test_the_setting_defaults_to_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DECIGRAPH_MALLOC_ARENAS", raising=False)
    assert Settings().malloc_arenas == 2
    monkeypatch.setenv("DECIGRAPH_MALLOC_ARENAS", "0")
    assert Settings().malloc_arenas == 0


@glibc
def test_two_arenas_serve_eight_allocating_threads() -> None:
    assert arenas(2) == (True, 2)


@glibc
def test_zero_keeps_glibc_default_of_an_arena_per_thread() -> None:
    applied, count = arenas(0)
    assert not applied
    assert count > 2


@glibc
def test_an_explicit_environment_variable_wins() -> None:
    applied, count = arenas(2, {"MALLOC_ARENA_MAX": "3"})
    assert not applied
    assert count == 3
