"""Compact attribute dicts (graph.compact) and the embedding matrix's lazily zeroed capacity:
the same graph, hashes, exports and snapshots as plain dicts, in less memory."""

from __future__ import annotations

import pickle
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pytest

import graph.compact as compaction
import retrieval.matrix as matrix_module
from graph.builders import build_graph, raw_adjacency
from graph.canonical import canonical_json
from graph.compact import compact
from graph.drafts import EdgeDraft
from graph.enums import EdgeType
from graph.export import EXPORT_FORMATS, export_graph
from graph.snapshot import SnapshotHeader, read_snapshot, write_snapshot
from graph.state import graph_hash
from graph.store import DecisionStore
from retrieval.matrix import EmbeddingMatrix
from tests.conftest import StoreFactory, decision

A, B, C = "aaaaaaaa", "bbbbbbbb", "cccccccc"
HEADER = SnapshotHeader(seq=3, log_offset=0, last_hash="0" * 64, prefix_sha256="0" * 64)


def sample_graph() -> object:
    nodes = [
        {"id": A, "category": "architecture", "tags": ["db", "ledger"], "confidence": 0.8},
        {"id": B, "context": "Owner: payments", "reasons": [{"type": "analysis", "text": "x"}]},
        C,
    ]
    edges = [(A, B, "relates_to"), (B, C, "depends_on"), (A, C, "contradicts", {"weight": 2.0})]
    return build_graph(nodes, edges)


def plain_and_compact(monkeypatch: pytest.MonkeyPatch, build: Callable[[], object]) -> tuple:
    monkeypatch.setattr(compaction, "ENABLED", False)
    plain = build()
    monkeypatch.setattr(compaction, "ENABLED", True)
    return plain, build()


def test_compact_dicts_are_plain_dicts_with_the_same_items_and_order() -> None:
    attrs = {"text": "Use PostgreSQL", "tags": ["db"], "version": 1, "confidence": 0.5}
    packed = compact(attrs)
    assert type(packed) is dict
    assert packed == attrs
    assert list(packed) == list(attrs)
    assert orjson.dumps(packed) == orjson.dumps(attrs)
    assert canonical_json(packed) == canonical_json(attrs)
    assert pickle.loads(pickle.dumps(packed)) == attrs
    packed["text"] = "changed"  # still a dict: mutating it works as for any dict
    assert packed["text"] == "changed"
    assert attrs["text"] == "Use PostgreSQL"


def traced_bytes(make: Callable[[], object]) -> int:
    """Bytes still allocated by what ``make`` returns (tracemalloc)."""
    tracemalloc.start()
    try:
        kept = make()
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return size


def test_compact_dicts_share_their_keys_and_take_less_memory() -> None:
    keys = [f"field_{i}" for i in range(15)]
    packed = traced_bytes(lambda: [compact(dict.fromkeys(keys, i)) for i in range(500)])
    plain = traced_bytes(lambda: [dict.fromkeys(keys, i) for i in range(500)])
    assert packed < 0.6 * plain  # ~224 against ~470 bytes a dict on CPython 3.11


@pytest.mark.parametrize(
    "attrs",
    [
        {"__class__": 1},  # never set as an attribute
        {"not an identifier": 1},
        {f"k{i}": i for i in range(compaction.MAX_SHARED_KEYS + 1)},
        {},
    ],
)
def test_layouts_it_cannot_share_stay_plain_dicts(attrs: dict[str, int]) -> None:
    packed = compact(attrs)
    assert packed == attrs
    assert type(packed) is dict


def test_switched_off_it_returns_the_dict_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compaction, "ENABLED", False)
    attrs = {"text": "x"}
    assert compact(attrs) is attrs


def test_graphs_hash_and_export_byte_for_byte_as_with_plain_dicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain, packed = plain_and_compact(monkeypatch, sample_graph)
    assert graph_hash(packed) == graph_hash(plain)  # type: ignore[arg-type]
    for fmt in EXPORT_FORMATS:
        assert export_graph(packed, fmt) == export_graph(plain, fmt)  # type: ignore[arg-type]


def test_both_directions_of_a_symmetric_edge_share_one_attribute_dict() -> None:
    G = sample_graph()
    succ = raw_adjacency(G).succ  # type: ignore[arg-type]
    assert succ[A][B]["relates_to"] is succ[B][A]["relates_to"]
    assert succ[A][C]["contradicts"] is succ[C][A]["contradicts"]
    assert succ[A][C]["contradicts"]["weight"] == 2.0


def test_snapshots_round_trip_keeping_hash_and_sharing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain, packed = plain_and_compact(monkeypatch, sample_graph)
    for name, G in (("plain", plain), ("packed", packed)):
        path = tmp_path / f"{name}.snap"
        write_snapshot(path, G, HEADER)  # type: ignore[arg-type]
        loaded = read_snapshot(path)
        assert loaded is not None
        header, restored = loaded
        assert header == HEADER
        assert graph_hash(restored) == graph_hash(plain)  # type: ignore[arg-type]
        assert list(restored.nodes) == list(G.nodes)  # type: ignore[attr-defined]
        assert export_graph(restored, "json") == export_graph(plain, "json")  # type: ignore[arg-type]
        succ = raw_adjacency(restored).succ
        assert succ[A][B]["relates_to"] is succ[B][A]["relates_to"]
        assert succ[B][C]["depends_on"] is raw_adjacency(restored).pred[C][B]["depends_on"]


def test_a_restored_snapshot_holds_compact_dicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodes = [{"id": f"{i:08x}", "tags": ["db"], "context": "Owner: web"} for i in range(400)]
    edges = [(f"{i:08x}", f"{i + 1:08x}", "relates_to") for i in range(399)]
    path = tmp_path / "graph.snap"
    write_snapshot(path, build_graph(nodes, edges), HEADER)
    packed = traced_bytes(lambda: read_snapshot(path))
    monkeypatch.setattr(compaction, "ENABLED", False)
    plain = traced_bytes(lambda: read_snapshot(path))
    assert packed < 0.9 * plain


def grow(store: DecisionStore) -> None:
    first = store.record(decision(tags=["db"], category="architecture"), "agent-a")
    second = store.record(decision("Cache sessions in Redis", context="Owner: web"), "agent-b")
    store.link(first.id, second.id, EdgeType.RELATES_TO, "agent-a")
    store.link_many([EdgeDraft(second.id, first.id, EdgeType.DEPENDS_ON)], "agent-b")
    store.update(second.id, {"tags": ["cache"], "stakes": "high"}, "agent-b")
    store.review(first.id, "success", "agent-c", lessons="held up")
    store.review(first.id, "partial", "agent-c", notes="second look")


def test_writes_through_the_store_replay_and_reopen_identically(
    open_store: StoreFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "ENABLED", False)
    plain_store = open_store(tmp_path / "plain")
    grow(plain_store)
    monkeypatch.setattr(compaction, "ENABLED", True)
    store = open_store(tmp_path / "packed")
    grow(store)
    expected = plain_store.graph_hash()
    assert store.graph_hash() == expected
    node_id = next(iter(store.graph.nodes))
    assert store.get(node_id) == plain_store.get(node_id)
    held = store.graph.nodes[node_id]
    store.update(node_id, {"confidence": 0.3}, "agent-a")
    assert "confidence" not in held  # an update puts a new dict: a held one is not half-changed
    assert store.graph.nodes[node_id]["confidence"] == 0.3
    store.close()
    reopened = open_store(tmp_path / "packed")  # from the snapshot written on close
    replayed = open_store(tmp_path / "packed", read_only=True, use_snapshot=False)
    assert reopened.graph_hash() == replayed.graph_hash() == store.graph_hash()


def test_a_restored_matrix_grows_into_spare_rows_without_copying() -> None:
    m = EmbeddingMatrix(4)
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((100, 4)).astype(np.float32)
    for i, row in enumerate(vectors):
        m.put(f"{i:08x}", row)
    restored = pickle.loads(pickle.dumps(m))
    assert len(restored._rows) >= 2 * len(restored)  # room to grow
    rows = restored._rows
    restored.put("ffffffff", vectors[0])
    assert restored._rows is rows  # no reallocation on the first write after a restart
    query = vectors[1]
    assert restored.nearest(query, 5) == m.nearest(query, 5)
    np.testing.assert_array_equal(restored._rows[len(restored) :], 0.0)


def test_matrix_growth_keeps_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    for enabled in (True, False):
        monkeypatch.setattr(matrix_module, "COMPACT_MEMORY", enabled)
        m = EmbeddingMatrix(3)
        for i in range(200):  # past the initial capacity: grows (at least) twice
            m.put(f"{i:08x}", np.full(3, i, dtype=np.float32))
        assert [float(m.get(f"{i:08x}")[0]) for i in range(200)] == list(range(200))  # type: ignore[index]
        restored = pickle.loads(pickle.dumps(m))
        assert [float(restored.get(f"{i:08x}")[0]) for i in range(200)] == list(range(200))  # type: ignore[index]
