"""Ways to fill the server's disk in the fault tests: a real ENOSPC, or EFBIG as a fallback."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
from pathlib import Path

from tests.support.loadgen import Served


class Disk:
    """How a test makes the server's writes fail, and how it gives the space back."""

    name = "disk"
    errno = "ENOSPC"
    prefix: tuple[str, ...] = ()

    def path(self, inside: Path) -> Path:
        return inside

    def preexec(self) -> None:
        return None

    def attach(self, served: Served) -> None:
        self.served = served

    def fill(self) -> None:
        raise NotImplementedError

    def free(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        return None


class TmpfsDisk(Disk):
    """The data directory on a 64 MB tmpfs in a private mount namespace: a real ENOSPC.

    A holder process keeps the namespace (and the tmpfs) alive; the server and the CLI enter
    it with ``nsenter``; the test reaches the files through ``/proc/<holder>/root``.
    """

    name = "tmpfs-enospc"

    def __init__(self, data: Path) -> None:
        data.mkdir(parents=True)
        user = [] if os.geteuid() == 0 else ["--map-root-user"]
        script = 'mount -t tmpfs -o size=64m tmpfs "$0" && echo mounted && exec sleep 3600'
        self.holder = subprocess.Popen(
            ["unshare", "--mount", *user, "--", "sh", "-c", script, str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.holder.stdout is not None
        if self.holder.stdout.readline().strip() != "mounted":
            self.holder.kill()
            _, err = self.holder.communicate(timeout=10)
            raise OSError(f"cannot mount a tmpfs in a private mount namespace: {err.strip()}")
        enter_user = [] if os.geteuid() == 0 else ["--user"]
        cwd = Path(__file__).resolve().parents[2]
        self.prefix = ("nsenter", f"--target={self.holder.pid}", "--mount", *enter_user)
        self.prefix += (f"--wd={cwd}",)
        self.filler = self.path(data) / "filler"

    def path(self, inside: Path) -> Path:
        return Path(f"/proc/{self.holder.pid}/root{inside}")

    def fill(self) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (1 << 16, 512):  # big chunks, then the last partial page
                with contextlib.suppress(OSError):
                    while True:
                        os.write(fd, b"\0" * size)
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink()

    def close(self) -> None:
        self.holder.kill()
        self.holder.wait(timeout=30)


class RlimitDisk(Disk):
    """RLIMIT_FSIZE lowered on the running server (SIGXFSZ ignored): writes fail with EFBIG.

    The fallback where mount namespaces are not allowed. The limit is set a little above the
    log's size, so the next append is cut short mid-line and must be rolled back.
    """

    name = "rlimit-efbig"
    errno = "EFBIG"

    def __init__(self, data: Path) -> None:
        self.data = data

    def preexec(self) -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # survives exec: EFBIG instead of a kill

    def fill(self) -> None:
        limit = (self.data / "events.jsonl").stat().st_size + 64
        resource.prlimit(
            self.served.proc.pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY)
        )

    def free(self) -> None:
        unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
        resource.prlimit(self.served.proc.pid, resource.RLIMIT_FSIZE, unlimited)
