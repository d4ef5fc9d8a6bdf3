"""A local HTTP endpoint that receives webhooks (for the change-feed tests)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """An HTTP endpoint that answers 500 to its first ``fail`` requests, then 200; it keeps
    every attempt and every accepted delivery (headers and body)."""

    def __init__(self, fail: int = 0) -> None:
        self.fail = fail
        self.lock = threading.Lock()
        self.attempts: list[int] = []
        self.accepted: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.attempts.append(int(self.headers["X-Decigraph-Seq"]))
                    failing = receiver.fail > 0
                    if failing:
                        receiver.fail -= 1
                    else:
                        receiver.accepted.append({"headers": dict(self.headers), "body": body})
                self.send_response(500 if failing else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seqs(self) -> list[int]:
        with self.lock:
            return [int(d["headers"]["X-Decigraph-Seq"]) for d in self.accepted]

    def wait_for(self, count: int, timeout: float = 90) -> list[int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.seqs()) >= count:
                return self.seqs()
            time.sleep(0.1)
        raise AssertionError(f"{len(self.seqs())} of {count} deliveries: {self.seqs()}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
