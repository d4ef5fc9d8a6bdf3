"""The light path of commands a running server answers (``decigraph recall``).

An agent hook runs ``decigraph recall`` once per prompt, so its cost is a process start: when a
live server holds the data directory (:func:`~service.cli.address.serving`), the command posts
one JSON-RPC call with the standard library's ``http.client`` and imports nothing of the store,
the indexes, the settings model or the embedding model. It answers exactly what
:class:`service.client.OverHttp` answers (the same result, the same error messages). When no
server holds the directory, or the server cannot be reached, :data:`UNANSWERED` sends the
caller the heavy way (opening the store in-process, or failing with today's clear message).

Of the settings it reads only the data directory (``--data-dir``, else ``DECIGRAPH_DATA_DIR``,
else ``./data``) and the token (``CSTP_TOKEN``, else ``<data-dir>/auth-tokens``): the server has
already validated the rest.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from graph.errors import DecigraphError

from .address import ServerAddressError, serving

#: Seconds a call may take (as the in-process fallback's HTTP client).
TIMEOUT = 60.0

UNANSWERED: Final = object()
"""No server answered: go the heavy way."""


class RemoteError(DecigraphError):
    """A call the server refused; worded as :class:`service.client.AnalystError`."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


def data_dir_of(given: str | None) -> Path:
    """The data directory as :class:`service.settings.Settings` resolves it (the flag, else
    ``DECIGRAPH_DATA_DIR`` in any case, the last one set winning, else ``./data``)."""
    if given is not None:
        return Path(given)
    value = "./data"
    for key, found in os.environ.items():
        if key.lower() == "decigraph_data_dir":
            value = found
    return Path(value)


def token_for(data_dir: Path) -> str | None:
    """The bearer token: ``CSTP_TOKEN``, else the first entry of ``<data-dir>/auth-tokens``."""
    token = os.environ.get("CSTP_TOKEN")
    token_file = data_dir / "auth-tokens"
    if token is None and token_file.exists():
        token = token_file.read_text().splitlines()[0].partition(":")[2].strip()
    return token


def call_server(data_dir: Path, method: str, params: dict[str, Any]) -> Any:
    """``method``'s result from the live server holding ``data_dir``, or :data:`UNANSWERED`."""
    url = serving(data_dir)
    if url is None:
        return UNANSWERED
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None:
        return UNANSWERED
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    token = token_for(data_dir)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT)
    try:
        try:
            connection.connect()
        except OSError:  # refused, unreachable: the heavy way reports it (or finds it free)
            return UNANSWERED
        try:
            connection.request("POST", "/cstp", json.dumps(request).encode(), headers)
            response = connection.getresponse()
            status, body = response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            detail = "timed out" if isinstance(exc, socket.timeout) else str(exc)
            message = f"cannot reach the server at {url}: {detail}"
            raise ServerAddressError(message) from None
    finally:
        connection.close()
    return _result(status, body)


def _result(status: int, body: bytes) -> Any:
    """The answer's result, or the error :class:`service.client.OverHttp` raises for it."""
    if status == 401:
        raise RemoteError(-32001, "the server refused the token (HTTP 401)")
    if status >= 400:
        text = body.decode("utf-8", "replace")
        raise RemoteError(-32603, f"HTTP {status}: {text[:200]}")
    answer = json.loads(body)
    if not isinstance(answer, dict):
        raise RemoteError(-32603, f"unexpected response: {answer!r}")
    if "error" in answer:
        error = answer["error"]
        raise RemoteError(error["code"], error["message"], error.get("data"))
    return answer["result"]
