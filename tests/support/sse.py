"""A small server-sent events client over httpx (for the change-feed tests and benchmark):
messages parsed as the SSE spec says, read in the caller's thread or in a background one."""

from __future__ import annotations

import http.client
import queue
import socket
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson


@dataclass
class Message:
    event: str = "message"
    id: str | None = None
    data: str = ""
    comments: list[str] = field(default_factory=list)

    def json(self) -> Any:
        return orjson.loads(self.data)


def messages(lines: Iterable[str], comments: bool = False) -> Iterator[Message]:
    """The messages of an SSE response's lines (comments alone only when ``comments``)."""
    current, data = Message(), []
    for line in lines:
        if line == "":
            if data or current.id is not None or current.event != "message":
                current.data = "\n".join(data)
                yield current
            elif comments and current.comments:
                yield current
            current, data = Message(), []
            continue
        if line.startswith(":"):
            current.comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            current.event = value
        elif name == "id":
            current.id = value


def headers(token: str | None, last_event_id: int | None = None) -> dict[str, str]:
    out = {"Accept": "text/event-stream"}
    if token is not None:
        out["Authorization"] = f"Bearer {token}"
    if last_event_id is not None:
        out["Last-Event-ID"] = str(last_event_id)
    return out


class Reader:
    """``GET /events`` read in a background thread; its messages land in :attr:`received`."""

    def __init__(
        self,
        url: str,
        token: str,
        params: dict[str, Any] | None = None,
        last_event_id: int | None = None,
        comments: bool = False,
    ) -> None:
        self.received: queue.Queue[Message] = queue.Queue()
        self.status: int | None = None
        self.ended = threading.Event()
        self.error: BaseException | None = None
        self._client = httpx.Client(timeout=httpx.Timeout(10.0, read=None), trust_env=False)
        self._args = (url, params or {}, headers(token, last_event_id), comments)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._opened = threading.Event()
        self._thread.start()
        if not self._opened.wait(30):
            raise RuntimeError("the stream did not open")

    def _run(self) -> None:
        url, params, head, comments = self._args
        try:
            with self._client.stream("GET", f"{url}/events", params=params, headers=head) as r:
                self.status = r.status_code
                self._opened.set()
                for message in messages(r.iter_lines(), comments):
                    self.received.put(message)
        except (httpx.HTTPError, RuntimeError) as exc:  # closed by close(), or a failure
            self.error = exc
        finally:
            self._opened.set()
            self.ended.set()

    def take(self, count: int, timeout: float = 60) -> list[Message]:
        """The next ``count`` event messages (not comments), waiting up to ``timeout`` s."""
        got: list[Message] = []
        while len(got) < count:
            message = self.received.get(timeout=timeout)
            if message.id is not None or message.data:
                got.append(message)
        return got

    def close(self) -> None:
        self._client.close()
        self._thread.join(10)


class SlowConnection(http.client.HTTPConnection):
    """A connection whose socket receive buffer is tiny (set before connecting, so the TCP
    window stays small): a reader that stops reading makes the server wait at once."""

    def connect(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(self.timeout if isinstance(self.timeout, float | int) else None)
        sock.connect((self.host, self.port or 80))
        self.sock = sock


def slow_stream(url: str, token: str, path: str) -> tuple[SlowConnection, Iterator[Message]]:
    """``GET path`` over a :class:`SlowConnection`; the connection and its messages."""
    host, port = url.removeprefix("http://").split(":")
    connection = SlowConnection(host, int(port), timeout=120)
    connection.request("GET", path, headers=headers(token))
    response = connection.getresponse()
    assert response.status == 200, response.status
    lines = (raw.decode().rstrip("\r\n") for raw in iter(response.readline, b""))
    return connection, messages(lines)
