"""The OpenTelemetry SDK behind :func:`graph.tracing.span` (imported only when tracing is on).

Everything but the switch comes from the standard variables, read by the SDK itself:
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (default
``http://localhost:4318``), ``..._HEADERS``, ``..._TIMEOUT``, ``..._COMPRESSION``,
``..._CERTIFICATE``, ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf``; ``grpc`` when
``opentelemetry-exporter-otlp-proto-grpc`` is installed), ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES`` (``service.name`` defaults to ``decigraph``),
``OTEL_TRACES_SAMPLER`` / ``OTEL_TRACES_SAMPLER_ARG`` and the batch processor's
``OTEL_BSP_SCHEDULE_DELAY``, ``OTEL_BSP_MAX_QUEUE_SIZE``, ``OTEL_BSP_EXPORT_TIMEOUT``...

The provider is this module's own, not OpenTelemetry's global one: starting and stopping
tracing (a server, then a test) never fights over the process-wide provider.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from importlib.metadata import version

from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import Span as OtelSpan
from opentelemetry.trace import Status, StatusCode, Tracer

from graph.errors import DecigraphError
from graph.tracing import Attribute, Span

SCOPE = "decigraph"
#: How long a stopping server waits for its last spans to be exported.
SHUTDOWN_SECONDS = 5.0
#: Attribute names without a dot are decigraph's own: exported under this prefix.
PREFIX = "decigraph."


class TracingConfigError(DecigraphError):
    """An ``OTEL_*`` setting tracing cannot start with (the message names it)."""


def attribute_name(key: str) -> str:
    """``seq`` -> ``decigraph.seq``; a dotted (standard) name as it is."""
    return key if "." in key else PREFIX + key


class _Named:
    """An SDK span that names attributes as :func:`graph.tracing.span` documents."""

    __slots__ = ("_span",)

    def __init__(self, span: OtelSpan) -> None:
        self._span = span

    def set_attribute(self, key: str, value: Attribute) -> None:
        self._span.set_attribute(attribute_name(key), value)

    def fail(self, description: str) -> None:
        self._span.set_status(Status(StatusCode.ERROR, description))


def resource() -> Resource:
    """``service.name`` from ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``, else
    ``decigraph``; ``service.version``, decigraph's."""
    found = Resource.create({SERVICE_VERSION: version("decigraph")})
    if str(found.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        found = found.merge(Resource({SERVICE_NAME: "decigraph"}))
    return found


def otlp_exporter() -> SpanExporter:
    """The OTLP exporter for the protocol the environment names (``http/protobuf`` unless
    ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL`` says ``grpc``)."""
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcExporter,
            )
        except ImportError:
            raise TracingConfigError(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs opentelemetry-exporter-otlp-proto-grpc"
            ) from None
        return GrpcExporter()
    if protocol != "http/protobuf":
        raise TracingConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: decigraph exports http/protobuf or grpc"
        )
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise TracingConfigError(
            "OTLP over HTTP needs opentelemetry-exporter-otlp-proto-http: "
            "pip install 'decigraph[otel]'"
        ) from None
    return OTLPSpanExporter()


class Tracing:
    """A tracer provider with its exporter, and the span factory installed behind
    :func:`graph.tracing.span`."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer: Tracer = provider.get_tracer(SCOPE, version("decigraph"))

    @classmethod
    def start(cls, kind: str, exporter: SpanExporter | None = None) -> Tracing:
        """``kind`` ``otlp`` (batched) or ``console``; a given ``exporter`` instead gets each
        span as it ends."""
        processor: SpanProcessor
        if exporter is not None:
            processor = SimpleSpanProcessor(exporter)
        elif kind == "console":
            processor = SimpleSpanProcessor(ConsoleSpanExporter())
        else:
            processor = BatchSpanProcessor(otlp_exporter())
        provider = TracerProvider(resource=resource())  # the sampler: OTEL_TRACES_SAMPLER
        provider.add_span_processor(processor)
        return cls(provider)

    def span(self, name: str, attributes: Mapping[str, Attribute]) -> AbstractContextManager[Span]:
        """The factory :func:`graph.tracing.install` takes: a span, current inside the block."""
        return self._span(name, {attribute_name(k): v for k, v in attributes.items()})

    @contextmanager
    def _span(self, name: str, attributes: dict[str, Attribute]) -> Iterator[Span]:
        with self.tracer.start_as_current_span(name, attributes=attributes) as current:
            yield _Named(current)

    def flush(self, timeout_millis: int = 30_000) -> bool:
        return self.provider.force_flush(timeout_millis)

    def shutdown(self, timeout: float = SHUTDOWN_SECONDS) -> bool:
        """Export what is queued, then stop, waiting at most ``timeout`` seconds: a collector
        that does not answer (the exporter retries for ``OTEL_EXPORTER_OTLP_TIMEOUT``) must
        not hold a stopping server. ``False``: the rest was dropped."""
        stopping = threading.Thread(
            target=self.provider.shutdown, name="decigraph-tracing-shutdown", daemon=True
        )
        stopping.start()
        stopping.join(timeout)
        return not stopping.is_alive()
