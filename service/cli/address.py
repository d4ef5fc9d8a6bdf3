"""Where the server holding a data directory listens: ``<data-dir>/server.json``.

``decigraph serve`` writes it (mode 0600) once it holds the directory lock and listens, and
removes it on a clean shutdown. A command that finds the directory locked asks the server
named there, and only when that file is the lock holder's own (same pid, same host): a file a
killed server left behind, or a lock held by something that is not a server, is a clear error,
never a guess at a default port that may serve another store.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
from pathlib import Path
from typing import NamedTuple

from graph.errors import DecigraphError

SERVER_FILE = "server.json"
_HOLDER = re.compile(r"^pid (\d+) on (\S+)$")


class ServerAddressError(DecigraphError):
    """The data directory is locked and no usable server address is known for it."""


class ServerAddress(NamedTuple):  # not a dataclass: `decigraph recall` imports this module
    url: str
    pid: int
    host: str


def url_of(sock: socket.socket) -> str:
    """The URL a local client reaches a listening socket at (a wildcard bind is loopback)."""
    address = sock.getsockname()
    host, port = str(address[0]), int(address[1])
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def publish(data_dir: Path, url: str) -> Path:
    """Write ``data_dir/server.json`` for this process (atomically, owner-only)."""
    path = data_dir / SERVER_FILE
    body = {"url": url, "pid": os.getpid(), "host": socket.gethostname()}
    temporary = path.with_name(f".{SERVER_FILE}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(json.dumps(body, indent=2).encode() + b"\n")
    os.replace(temporary, path)
    return path


def withdraw(data_dir: Path) -> None:
    """Remove ``data_dir/server.json`` if this process wrote it."""
    found = read(data_dir)
    if found is not None and found.pid == os.getpid() and found.host == socket.gethostname():
        with contextlib.suppress(FileNotFoundError):
            (data_dir / SERVER_FILE).unlink()


def read(data_dir: Path) -> ServerAddress | None:
    """What ``server.json`` says, or ``None`` when it is missing or unreadable."""
    try:
        raw = json.loads((data_dir / SERVER_FILE).read_bytes())
        return ServerAddress(str(raw["url"]), int(raw["pid"]), str(raw["host"]))
    except (OSError, KeyError, TypeError, ValueError):  # ValueError: not JSON
        return None


def locate(data_dir: Path, holder: str) -> str:
    """The URL of the server holding ``data_dir``'s lock; ``holder`` is what the lock file
    says (``pid N on HOST``). :class:`ServerAddressError` when no address is its own."""
    path = data_dir / SERVER_FILE
    found = read(data_dir)
    if found is None:
        raise ServerAddressError(
            f"{data_dir} is locked by {holder}, which has not published an address in {path} "
            "(not a decigraph server, or one still starting); wait for it or stop it"
        )
    match = _HOLDER.match(holder.strip())
    if match is None or (found.pid, found.host) != (int(match[1]), match[2]):
        raise ServerAddressError(
            f"{data_dir} is locked by {holder}, but {path} was written by pid {found.pid} on "
            f"{found.host} (a server that is gone); stop the holder or wait for it"
        )
    return found.url


def serving(data_dir: Path) -> str | None:
    """The URL of a live server holding ``data_dir``, judged without taking the lock: its
    ``server.json`` names the process the lock file names, and that process is alive. ``None``
    otherwise; the caller then opens the directory itself, which says exactly why it cannot
    (a holder that has not published its address, a file a killed server left behind)."""
    found = read(data_dir)
    if found is None:
        return None
    try:
        holder = (data_dir / "LOCK").read_bytes()[:200].decode("utf-8", "replace").strip()
    except OSError:
        return None
    match = _HOLDER.match(holder)
    if match is None or (found.pid, found.host) != (int(match[1]), match[2]):
        return None
    if found.host == socket.gethostname():
        try:
            os.kill(found.pid, 0)
        except ProcessLookupError:
            return None  # a killed server's lock is already free
        except PermissionError:
            pass  # alive, another user's
    return found.url
