"""The tracing hook: where the domain marks a span, with no tracing library behind it.

The domain and retrieval layers wrap the steps worth timing (the log append, the embedding,
an index update) in :func:`span`. Until something :func:`install`-s a span factory, ``span``
returns one shared no-op context manager: no tracing library is imported and a span costs a
function call and an empty ``with`` (README "Tracing" gives the measured figure).
``service.telemetry`` installs an OpenTelemetry factory when ``DECIGRAPH_TRACING`` asks for it.

>>> with span("store.append", seq=1) as current:
...     current.set_attribute("op", "record")
>>> enabled()
False
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Protocol

#: The values a span attribute may take (OpenTelemetry's scalar attribute types).
Attribute = str | bool | int | float


class Span(Protocol):
    """What code inside a span may do with it: add what it learned along the way."""

    def set_attribute(self, key: str, value: Attribute) -> object: ...

    def fail(self, description: str) -> object:
        """Mark the span as failed though no exception leaves it (an error was answered)."""
        ...


#: Opens a span named ``name`` with ``attributes``; the context manager yields the span, and
#: an exception leaving it marks the span as failed.
SpanFactory = Callable[[str, Mapping[str, Attribute]], AbstractContextManager[Span]]


class _NoSpan(AbstractContextManager[Span]):
    """The span when tracing is off: it records nothing, and one instance serves every call
    (it holds no state, so any thread may enter it any number of times)."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None

    def set_attribute(self, key: str, value: Attribute) -> None:
        return None

    def fail(self, description: str) -> None:
        return None


NO_SPAN = _NoSpan()


class _Hook:
    """Where the installed factory is kept (one per process)."""

    __slots__ = ("factory",)

    def __init__(self) -> None:
        self.factory: SpanFactory | None = None


_hook = _Hook()


def span(name: str, /, **attributes: Attribute) -> AbstractContextManager[Span]:
    """A span around the ``with`` block: a real one once a factory is installed, else
    :data:`NO_SPAN`.

    A plain attribute name is decigraph's own (``seq=5`` is exported as ``decigraph.seq``); a
    dotted one is a standard name and kept (``**{"rpc.method": name}``). The same holds for
    :meth:`Span.set_attribute`.
    """
    factory = _hook.factory
    if factory is None:
        return NO_SPAN
    return factory(name, attributes)


def install(factory: SpanFactory) -> None:
    """Send every :func:`span` from now on to ``factory`` (the process's one tracer)."""
    _hook.factory = factory


def uninstall() -> None:
    """Back to the no-op span (spans already open finish normally)."""
    _hook.factory = None


def enabled() -> bool:
    """Whether a span factory is installed."""
    return _hook.factory is not None
