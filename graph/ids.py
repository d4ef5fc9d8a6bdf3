"""Id sources: random by default, seeded for reproducible runs (tests, benchmarks, samples)."""

from __future__ import annotations

import random
import secrets
from collections.abc import Container


class IdSource:
    """Issues node ids (8 hex characters, as CSTP) and event ids (16 hex characters).

    With ``seed`` set, the sequence of ids is reproducible; without, ids come from ``secrets``.
    """

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed) if seed is not None else None

    def _hex(self, nbytes: int) -> str:
        if self._rng is None:
            return secrets.token_hex(nbytes)
        return f"{self._rng.getrandbits(8 * nbytes):0{2 * nbytes}x}"

    def node_id(self, taken: Container[str]) -> str:
        """A fresh node id not in ``taken`` (4 billion ids: collisions are rare but handled)."""
        while True:
            candidate = self._hex(4)
            if candidate not in taken:
                return candidate

    def event_id(self) -> str:
        return self._hex(8)
