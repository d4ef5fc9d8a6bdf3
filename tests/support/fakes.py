"""Test doubles for unit tests of the logic around the real parts (never in integration tests)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval.matrix import Vector
from retrieval.vector import VectorHit, Watermark

if TYPE_CHECKING:
    from service.usecases import Decigraph

DIMENSION = 16


class HashEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words point the same way."""

    model_name = "hash-bow"
    dimension = DIMENSION

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                digest = hashlib.sha256(word.strip(".,!?").encode()).digest()
                out[row, digest[0] % DIMENSION] += 1.0
            norm = float(np.linalg.norm(out[row])) or 1.0
            out[row] /= norm
        return out


class MemoryVectorIndex:
    """Exact in-memory stand-in for the ChromaDB index (``where`` supports ``$and``/``$in``)."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[Vector, dict[str, Any]]] = {}
        self.mark: Watermark | None = None
        self.upserts = 0

    def upsert(
        self, ids: Sequence[str], vectors: Any, metadatas: Sequence[Mapping[str, Any]]
    ) -> None:
        for node_id, vector, meta in zip(ids, vectors, metadatas, strict=True):
            self.upserts += 1
            self.rows[node_id] = (np.asarray(vector, dtype=np.float32), dict(meta))

    def delete(self, ids: Sequence[str]) -> None:
        for node_id in ids:
            self.rows.pop(node_id, None)

    def query(self, vector: Any, k: int, where: Mapping[str, Any] | None = None) -> list[VectorHit]:
        hits = [
            VectorHit(node_id, float(row @ vector))
            for node_id, (row, meta) in self.rows.items()
            if _matches(meta, where)
        ]
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:k]

    def get_vectors(self, ids: Sequence[str]) -> dict[str, Any]:
        return {i: self.rows[i][0] for i in ids if i in self.rows}

    def fingerprints(self, key: str = "fp") -> dict[str, str]:
        return {i: str(meta.get(key, "")) for i, (_, meta) in self.rows.items()}

    def all_ids(self) -> set[str]:
        return set(self.rows)

    def count(self) -> int:
        return len(self.rows)

    def watermark(self) -> Watermark | None:
        return self.mark

    def set_watermark(self, mark: Watermark) -> None:
        self.mark = mark

    def reset(self) -> None:
        self.rows.clear()
        self.mark = None

    def close(self) -> None:
        pass


def _matches(meta: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    if not where:
        return True
    if "$and" in where:
        return all(_matches(meta, clause) for clause in where["$and"])
    ((key, condition),) = where.items()
    value = meta.get(key)
    if not isinstance(condition, dict):
        return bool(value == condition)
    ((op, operand),) = condition.items()
    if value is None:
        return False
    if op == "$in":
        return value in operand
    if op == "$gte":
        return bool(value >= operand)
    if op == "$lte":
        return bool(value <= operand)
    raise ValueError(f"unsupported operator {op}")


class FakePairJudge:
    """A contradiction judge that answers from a table the test fills: ``judge.set(a, b, p)``
    (either order); every other pair gets P(contradicts) 0.01. For tests of the tiers, the
    gate and the write path around the judge, never of judgment itself."""

    version = "fake-judge"

    def __init__(self, block: float = 0.95, review: float = 0.6) -> None:
        from retrieval.contradiction.tiers import Thresholds

        self.thresholds = Thresholds(block=block, review=review)
        self.table: dict[frozenset[str], float] = {}
        self.asked: list[tuple[str, str]] = []

    def set(self, a: str, b: str, p: float) -> None:
        self.table[frozenset((a, b))] = p

    def load(self) -> None:
        return None

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[Any]:
        from retrieval.contradiction.judge import PairScore

        self.asked.extend(pairs)
        out = []
        for a, b in pairs:
            p = self.table.get(frozenset((a, b)), 0.01)
            out.append(PairScore(p, round(1 - p, 6), 0.0, "substitution"))
        return out


@contextmanager
def fake_app(data: Path, seed: int) -> Iterator[Decigraph]:
    """A whole application over a real store, with the hash embedder and in-memory vectors.

    For tests of the service's logic (dispatch, validation, routes) that need no model.
    """
    from graph.ids import IdSource
    from graph.store import DecisionStore, StoreOptions
    from retrieval.index import DualIndex
    from service.settings import Settings
    from service.usecases import Decigraph
    from tests.conftest import TickingClock

    store = DecisionStore.open(
        data, StoreOptions(fsync="never"), clock=TickingClock(), ids=IdSource(seed)
    )
    index = DualIndex.open(store, HashEmbedder(), MemoryVectorIndex())
    try:
        yield Decigraph(Settings(data_dir=data), store, index, pair_judge=FakePairJudge())
    finally:
        index.close()
        store.close()


def rpc_result(app: Decigraph, method: str, params: dict[str, Any]) -> Any:
    """The result of ``cstp.<method>`` dispatched in-process as agent ``agent`` (no error)."""
    from service.methods import build_registry
    from service.rpc.protocol import CallContext, Dispatcher

    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer = Dispatcher(build_registry(app)).handle(request, CallContext("agent"))
    assert answer is not None
    assert "error" not in answer, answer
    return answer["result"]


class InProcessRpc:
    """``cstp.*`` dispatched in-process through the real registry, as agent ``agent``:
    ``call`` returns the JSON-RPC envelope, ``ok`` the result of a call that must succeed."""

    def __init__(self, app: Decigraph, agent: str = "agent") -> None:
        from service.methods import build_registry
        from service.rpc.protocol import Dispatcher

        self.app = app
        self.agent = agent
        self.dispatcher = Dispatcher(build_registry(app))

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from service.rpc.protocol import CallContext

        request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
        answer = self.dispatcher.handle(request, CallContext(self.agent))
        assert answer is not None
        return answer

    def ok(self, method: str, params: dict[str, Any]) -> Any:
        answer = self.call(method, params)
        assert "error" not in answer, (method, params, answer)
        return answer["result"]
