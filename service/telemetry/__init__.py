"""OpenTelemetry traces, when a server is asked for them (``DECIGRAPH_TRACING=otlp``).

Off by default, and then free: nothing here imports OpenTelemetry, :mod:`graph.tracing` keeps
its shared no-op span and :func:`instrument_http` adds no middleware. On, :func:`start_tracing`
builds the SDK's tracer provider (:mod:`.sdk`, configured by the standard ``OTEL_*``
variables), installs it behind :func:`graph.tracing.span`, and :func:`instrument_http` wraps
the HTTP app in a request span (:mod:`.asgi`). ``pip install 'decigraph[otel]'`` brings the
SDK and the OTLP/HTTP exporter.

The spans of one ``recordDecision``::

    POST /cstp                  http.request.method, http.route, url.path,
                                http.response.status_code
      cstp.recordDecision       rpc.system, rpc.method, decigraph.agent, rpc.jsonrpc.error_code
        embed                   decigraph.texts, decigraph.model, decigraph.cold
        store.append            decigraph.op, decigraph.seq
        index.dual              decigraph.op, decigraph.seq
          (index.flush > index.chroma   decigraph.action: when ChromaDB is written)
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from graph import tracing
from service.composition import SetupError
from service.settings import Settings

if TYPE_CHECKING:
    from fastapi import FastAPI
    from opentelemetry.sdk.trace.export import SpanExporter

    from .sdk import Tracing

logger = logging.getLogger(__name__)


class _Active:
    """The tracing this process started (``None``: off)."""

    tracing: Tracing | None = None


_active = _Active()


def disabled_by_environment() -> str | None:
    """The standard variable that turns traces off (``OTEL_SDK_DISABLED=true``,
    ``OTEL_TRACES_EXPORTER=none``), as ``NAME=value``, or ``None``."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return "OTEL_SDK_DISABLED=true"
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return "OTEL_TRACES_EXPORTER=none"
    return None


def start_tracing(settings: Settings, exporter: SpanExporter | None = None) -> Tracing | None:
    """Trace this process as ``settings.tracing`` says (``None``: off, nothing imported).

    ``exporter`` replaces the configured one and exports each span as it ends (tests pass the
    SDK's in-memory exporter). Raises :class:`~service.composition.SetupError` when tracing is
    asked for without the ``otel`` extra installed.
    """
    if settings.tracing == "off" and exporter is None:
        return None
    off = disabled_by_environment()
    if off is not None:
        logger.info("tracing off: %s", off)
        return None
    try:
        from .sdk import Tracing
    except ImportError as exc:
        message = (
            f"tracing={settings.tracing} needs the OpenTelemetry SDK ({exc}): "
            "pip install 'decigraph[otel]'"
        )
        raise SetupError(message) from None
    stop_tracing()
    started = _active.tracing = Tracing.start(settings.tracing, exporter)
    tracing.install(started.span)
    return started


def stop_tracing() -> None:
    """Export the spans still queued and stop tracing (nothing when tracing is off)."""
    active, _active.tracing = _active.tracing, None
    if active is None:
        return
    tracing.uninstall()
    active.shutdown()


def instrument_http(api: FastAPI) -> None:
    """Give every HTTP request a server span (the parent of the method spans), if tracing is
    on; otherwise the app is left as it is."""
    active = _active.tracing
    if active is None:
        return
    from .asgi import TracingMiddleware

    api.add_middleware(TracingMiddleware, tracer=active.tracer)


__all__ = ["disabled_by_environment", "instrument_http", "start_tracing", "stop_tracing"]
