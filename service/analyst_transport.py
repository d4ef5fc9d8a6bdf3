"""How an :class:`~service.analyst.Analyst` reaches decigraph: in-process, or over HTTP.

Both speak JSON-RPC: in-process through the service's own dispatcher (no HTTP, the same
methods and error codes), over HTTP to ``POST /cstp`` with a bearer token. Graph-wide analyses
read the graph itself: a copy of the live one, or ``GET /graph/export``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Protocol

import httpx
import networkx as nx

from .application import Decigraph
from .registry import build_registry
from .rpc import CallContext, Dispatcher

ANALYST = "analyst"


class AnalystError(Exception):
    """A call the service refused: the JSON-RPC ``code``, its ``message`` and ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class Transport(Protocol):
    """How an :class:`Analyst` reaches the service."""

    description: str
    read_only: bool

    def call(self, method: str, params: Mapping[str, Any]) -> Any: ...

    def graph(self) -> nx.MultiDiGraph[str]: ...

    def refresh(self) -> int: ...

    def close(self) -> None: ...


def _unwrap(answer: Any) -> Any:
    if not isinstance(answer, dict):
        raise AnalystError(-32603, f"unexpected response: {answer!r}")
    if "error" in answer:
        error = answer["error"]
        raise AnalystError(error["code"], error["message"], error.get("data"))
    return answer["result"]


class InProcess:
    """The service's dispatcher over an application opened in this process."""

    def __init__(self, app: Decigraph, read_only: bool) -> None:
        self.app = app
        self.read_only = read_only
        self.description = f"{app.settings.data_dir} ({'read-only' if read_only else 'writer'})"
        self._dispatcher = Dispatcher(build_registry(app))
        self._ids = itertools.count(1)

    def call(self, method: str, params: Mapping[str, Any]) -> Any:
        request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        return _unwrap(self._dispatcher.handle(request, CallContext(ANALYST)))

    def graph(self) -> nx.MultiDiGraph[str]:
        with self.app.store.lock:
            return self.app.store.graph.copy()

    def refresh(self) -> int:
        if not self.read_only:
            return 0
        with self.app.store.lock:
            count = self.app.store.refresh()
            self.app.index.flush()
            return count

    def close(self) -> None:
        self.app.close()


class OverHttp:
    """A running server: ``POST /cstp`` and ``GET /graph/export``, with a bearer token."""

    read_only = False

    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.description = url
        self._client = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)
        self._ids = itertools.count(1)

    def _checked(self, response: httpx.Response) -> httpx.Response:
        if response.status_code == 401:
            raise AnalystError(-32001, "the server refused the token (HTTP 401)")
        if response.status_code >= 400:
            raise AnalystError(-32603, f"HTTP {response.status_code}: {response.text[:200]}")
        return response

    def call(self, method: str, params: Mapping[str, Any]) -> Any:
        request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        return _unwrap(self._checked(self._client.post("/cstp", json=request)).json())

    def graph(self) -> nx.MultiDiGraph[str]:
        doc = self._checked(self._client.get("/graph/export", params={"format": "json"})).json()
        return graph_from_node_link(doc)

    def refresh(self) -> int:
        return 0  # every call reads the server's current state

    def close(self) -> None:
        self._client.close()


def graph_from_node_link(doc: Mapping[str, Any]) -> nx.MultiDiGraph[str]:
    """The graph of a ``format=json`` export (edge keys are the edge types)."""
    G: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    for node in doc["nodes"]:
        attrs = dict(node)
        G.add_node(attrs.pop("id"), **attrs)
    for link in doc["links"]:
        attrs = dict(link)
        source, target, kind = attrs.pop("source"), attrs.pop("target"), attrs.pop("type")
        G.add_edge(source, target, key=kind, **attrs)
    return G
