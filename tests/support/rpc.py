"""A JSON-RPC client for the e2e tests, and a served data directory that yields one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_serve import start_serve, stop_serve


class Rpc:
    """``POST /cstp`` with a bearer token: ``call`` returns the envelope, ``ok`` the result."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.client = httpx.Client(timeout=60, headers={"Authorization": f"Bearer {token}"})

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer: dict[str, Any] = self.client.post(f"{self.url}/cstp", json=body).json()
        return answer

    def ok(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.call(method, params)
        assert "error" not in answer, (method, params, answer)
        result: dict[str, Any] = answer["result"]
        return result


@contextmanager
def serving(data: Path, token: str, log: Path | None = None) -> Iterator[Rpc]:
    """``decigraph serve`` on ``data`` (token for agent ``agent-a``, no fsync), as a client
    (the server's output written to ``log`` when given)."""
    env = {**os.environ, "CSTP_AUTH_TOKENS": f"agent-a:{token}", "DECIGRAPH_FSYNC": "never"}
    proc, url = start_serve(data, env, log=log)
    try:
        yield Rpc(url, token)
    finally:
        stop_serve(proc)


def written(result: dict[str, Any]) -> dict[str, Any]:
    """A write's answer without the ``seq`` every write carries (checked to be a seq)."""
    seq = result.get("seq")
    assert isinstance(seq, int), result
    assert not isinstance(seq, bool), result
    assert seq >= 0, result
    return {k: v for k, v in result.items() if k != "seq"}
