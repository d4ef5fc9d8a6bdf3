"""JSON-RPC clients of decigraph: in-process, or over HTTP (the CLI and the analyst API).

Both speak JSON-RPC: in-process through the service's own dispatcher (no HTTP, the same
methods, results and error codes), over HTTP to ``POST /cstp`` with a bearer token. So a
command run beside a server and one run alone answer in the same shape. Graph-wide analyses
read the graph itself: a copy of the live one, or ``GET /graph/export``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Protocol

import httpx
import networkx as nx

from graph.errors import DecigraphError
from graph.lifecycle import stored_attrs
from service.methods import build_registry
from service.rpc.protocol import SESSION_HEADER, CallContext, Dispatcher
from service.usecases import Decigraph
from service.usecases.history import parse_point, resolve
from service.usecases.reads import graph_copy, refresh

ANALYST = "analyst"


class AnalystError(DecigraphError):
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

    def graph(self, as_of: int | str | None = None) -> nx.MultiDiGraph[str]: ...

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

    def __init__(self, app: Decigraph, agent: str = ANALYST, session: str | None = None) -> None:
        self.app = app
        self.read_only = app.read_only
        self.agent = agent
        self.session = session
        role = "read-only" if app.read_only else "writer"
        self.description = f"{app.settings.data_dir} ({role})"
        self._dispatcher = Dispatcher(build_registry(app))
        self._ids = itertools.count(1)

    def call(self, method: str, params: Mapping[str, Any]) -> Any:
        request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        return _unwrap(self._dispatcher.handle(request, CallContext(self.agent, self.session)))

    def graph(self, as_of: int | str | None = None) -> nx.MultiDiGraph[str]:
        if as_of is None:
            return graph_copy(self.app)
        at, _ = resolve(self.app, parse_point(str(as_of)), None)
        return graph_copy(self.app, at)

    def refresh(self) -> int:
        return refresh(self.app)

    def close(self) -> None:
        self.app.close()


class OverHttp:
    """A running server: ``POST /cstp`` and ``GET /graph/export``, with a bearer token."""

    read_only = False

    def __init__(
        self, url: str, token: str | None, timeout: float, session: str | None = None
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if session is not None:
            headers[SESSION_HEADER] = session
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

    def graph(self, as_of: int | str | None = None) -> nx.MultiDiGraph[str]:
        params = {"format": "json"} if as_of is None else {"format": "json", "asOf": str(as_of)}
        doc = self._checked(self._client.get("/graph/export", params=params)).json()
        return graph_from_node_link(doc)

    def refresh(self) -> int:
        return 0  # every call reads the server's current state

    def close(self) -> None:
        self._client.close()


def graph_from_node_link(doc: Mapping[str, Any]) -> nx.MultiDiGraph[str]:
    """The graph of a ``format=json`` export (edge keys are the edge types), as the store keeps
    it: the export's effective ``lifecycle`` is turned back into the stored one."""
    G: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    for node in doc["nodes"]:
        attrs = stored_attrs(node)
        G.add_node(attrs.pop("id"), **attrs)
    for link in doc["links"]:
        attrs = dict(link)
        source, target, kind = attrs.pop("source"), attrs.pop("target"), attrs.pop("type")
        G.add_edge(source, target, key=kind, **attrs)
    return G
