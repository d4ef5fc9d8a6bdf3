"""Request counts and latency histograms per JSON-RPC method, in Prometheus text format."""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict

#: Histogram bucket upper bounds, seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str], int] = defaultdict(int)
        self._buckets: dict[str, list[int]] = {}
        self._sums: dict[str, float] = defaultdict(float)

    def observe(self, method: str, seconds: float, outcome: str) -> None:
        """Count one call of ``method`` (``outcome``: ok or an error code) taking ``seconds``."""
        with self._lock:
            self._calls[(method, outcome)] += 1
            counts = self._buckets.setdefault(method, [0] * (len(BUCKETS) + 1))
            counts[bisect.bisect_left(BUCKETS, seconds)] += 1
            self._sums[method] += seconds

    def render(self) -> str:
        with self._lock:
            lines = [
                "# HELP decigraph_rpc_requests_total JSON-RPC calls by method and outcome.",
                "# TYPE decigraph_rpc_requests_total counter",
            ]
            for (method, outcome), count in sorted(self._calls.items()):
                lines.append(
                    f'decigraph_rpc_requests_total{{method="{method}",outcome="{outcome}"}} {count}'
                )
            lines += [
                "# HELP decigraph_rpc_duration_seconds JSON-RPC call latency by method.",
                "# TYPE decigraph_rpc_duration_seconds histogram",
            ]
            for method, counts in sorted(self._buckets.items()):
                running = 0
                for bound, count in zip((*BUCKETS, float("inf")), counts, strict=True):
                    running += count
                    label = "+Inf" if bound == float("inf") else repr(bound)
                    lines.append(
                        f'decigraph_rpc_duration_seconds_bucket{{method="{method}",le="{label}"}} '
                        f"{running}"
                    )
                total = self._sums[method]
                lines.append(f'decigraph_rpc_duration_seconds_sum{{method="{method}"}} {total:.6f}')
                lines.append(f'decigraph_rpc_duration_seconds_count{{method="{method}"}} {running}')
            return "\n".join(lines) + "\n"
