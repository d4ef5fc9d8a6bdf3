"""``decigraph serve``: listen, open the store (its lock), publish the address, warm the model,
serve.

Order matters for operators: the port is bound first (a port in use fails at once, before a
long catch-up), then the store and its indexes are opened (the directory lock; a read-only
directory, bad rules or an unreachable ChromaDB end here with one line on stderr), then the
address goes to ``<data-dir>/server.json``. The model loads and warms in a background thread
started before the store opens (a request that embeds meanwhile waits for it; ``/health``
answers at once, ``/ready`` once the model is warm).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import sys
import tempfile
from pathlib import Path

from service.settings import Settings

from .address import publish, url_of, withdraw


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: one the kernel picks)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def unwritable(data_dir: Path) -> str | None:
    """Why files cannot be created in ``data_dir`` (created owner-only if missing), or ``None``."""
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=data_dir, prefix=".write-probe-"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def limit_malloc_arenas(arenas: int) -> bool:
    """``mallopt(M_ARENA_MAX, arenas)`` on glibc, unless ``MALLOC_ARENA_MAX`` is set (glibc read
    it at start) or ``arenas`` is 0; whether the limit was applied. Call it before threads
    start: an arena a thread already has stays."""
    if not arenas or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to set
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))


#: glibc's ``M_ARENA_MAX`` parameter number (malloc.h).
_M_ARENA_MAX = -8


def serve(settings: Settings) -> int:
    limit_malloc_arenas(settings.malloc_arenas)  # first: before uvicorn, tracing or the model
    import uvicorn

    from service.composition import Warmup, announce_startup, open_app
    from service.http.app import create_app
    from service.http.auth import AuthConfigError, load_tokens
    from service.http.events import end_streams_on_exit
    from service.telemetry import start_tracing, stop_tracing
    from service.usecases.webhooks import WebhookConfigError, load_webhooks, start_webhooks

    problem = unwritable(settings.data_dir)
    if problem is not None:
        print(
            f"decigraph: the data directory {settings.data_dir} is not writable ({problem}); "
            "serve keeps its event log there",
            file=sys.stderr,
        )
        return 2
    try:
        tokens = load_tokens(settings)
        hooks = load_webhooks(settings, set(tokens.agents.values()) if tokens.enabled else None)
    except (AuthConfigError, WebhookConfigError, OSError) as exc:
        print(f"decigraph: {_one_line(exc)}", file=sys.stderr)
        return 2
    try:
        sock = listen(settings.host, settings.port)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f"{settings.host}:{settings.port}"
        print(f"decigraph: cannot listen on {where}: {reason}", file=sys.stderr)
        return 2
    # uvicorn shuts down gracefully on SIGTERM and then re-raises the signal; with the default
    # disposition that kills the process before app.close() (flushing queued vector writes,
    # snapshotting the indexes) could run. Turn it into an exit that unwinds instead.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        start_tracing(settings)  # DECIGRAPH_TRACING: before the app, so it is traced throughout
        warmup = Warmup.early(settings)  # the model loads while the store opens
        # The judge's network loads beside the model's warm-up, not on the first check.
        app = open_app(settings, warmup.embedder, timeline=warmup.timeline).preloading_judge()
        webhooks = start_webhooks(app, hooks)  # None: no webhook configured
        try:
            url = url_of(sock)
            publish(settings.data_dir, url)
            print(
                f"decigraph: {app.store.seq} events from {settings.data_dir}; serving {url}/cstp",
                file=sys.stderr,
            )
            config = uvicorn.Config(create_app(app, tokens, warmup), host=settings.host)
            server = uvicorn.Server(config)
            announce_startup(warmup, lambda: server.started)  # one line on stderr
            end_streams_on_exit(server, app)  # SIGTERM ends the GET /events streams too
            server.run(sockets=[sock])
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let close() finish
            with contextlib.suppress(OSError):
                withdraw(settings.data_dir)
            if webhooks is not None:
                webhooks.stop()  # saves where each webhook stands
            app.close()
    finally:
        stop_tracing()  # export the spans still queued
        sock.close()
        signal.signal(signal.SIGTERM, previous)
    return 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    return " ".join(str(exc).split())
