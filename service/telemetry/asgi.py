"""The HTTP request span: an ASGI middleware (added only when tracing is on).

One server span per HTTP request, named ``<method> <route>`` (``POST /cstp``) once the router
has matched, with the standard attributes ``http.request.method``, ``http.route``, ``url.path``
and ``http.response.status_code``; a 5xx marks it as failed. A ``traceparent`` header (W3C
trace context, or whatever ``OTEL_PROPAGATORS`` names) makes it the child of the caller's span.
The method spans run in a worker thread under it: Starlette hands the worker the request's
context, so they nest without further wiring.
"""

from __future__ import annotations

from opentelemetry.propagate import extract
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class TracingMiddleware:
    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self.app = app
        self.tracer = tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = str(scope.get("method", "GET"))
        carrier = {
            key.decode("latin-1"): value.decode("latin-1")
            for key, value in scope.get("headers", ())
        }
        status: list[int] = []

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        attributes = {"http.request.method": method, "url.path": str(scope.get("path", ""))}
        with self.tracer.start_as_current_span(
            method, context=extract(carrier), kind=SpanKind.SERVER, attributes=attributes
        ) as span:
            try:
                await self.app(scope, receive, sending)
            finally:
                route = route_of(scope)
                if route is not None:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
                if status:
                    span.set_attribute("http.response.status_code", status[0])
                    if status[0] >= 500:
                        span.set_status(Status(StatusCode.ERROR))


def route_of(scope: Scope) -> str | None:
    """The path template the router matched (``/cstp``, ``/graph/export``), or ``None``."""
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) else None
