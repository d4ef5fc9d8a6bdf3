"""The in-memory indexes' compact layouts: the matrix's sign sketches and the write's neighbour
pool (``nearest_sketched``), shared key strings."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import numpy as np
import pytest

from retrieval.autoedges import AutoEdgeConfig
from retrieval.matrix import EmbeddingMatrix, sign_sketch


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def clustered(n: int, dimension: int, seed: int) -> np.ndarray:
    """Vectors around 40 centres: each has close neighbours, like texts on a few topics."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dimension))
    picks = rng.integers(0, 40, n)
    return unit(centres[picks] + 0.45 * rng.standard_normal((n, dimension)))


def filled(vectors: np.ndarray, order: list[int] | None = None) -> EmbeddingMatrix:
    matrix = EmbeddingMatrix(vectors.shape[1])
    for n in order if order is not None else range(len(vectors)):
        matrix.put(f"n{n:07d}", vectors[n])
    return matrix


def test_sketch_sets_one_bit_per_positive_component_and_pads_the_last_word() -> None:
    vector = np.array([1.0 if n % 3 == 0 else -1.0 for n in range(70)], dtype=np.float32)
    sketch = sign_sketch(vector)
    assert sketch.shape == (1, 2)
    bits = np.unpackbits(sketch.view(np.uint8))
    assert bits[:70].tolist() == [1 if n % 3 == 0 else 0 for n in range(70)]
    assert not bits[70:].any()  # padding never adds distance


def test_a_pool_covering_every_row_is_the_exact_scan() -> None:
    vectors = clustered(300, 48, seed=1)
    matrix = filled(vectors)
    for query in vectors[:20]:
        assert matrix.nearest_sketched(query, 16, pool=300) == matrix.nearest(query, 16)
        assert matrix.nearest_sketched(query, 16, pool=500) == matrix.nearest(query, 16)
        assert matrix.nearest_sketched(query, 16, pool=0) == matrix.nearest(query, 16)


def test_close_neighbours_are_found_as_the_exact_scan_finds_them() -> None:
    vectors = clustered(6000, 96, seed=2)
    matrix = filled(vectors[:5800])
    threshold = 0.6
    close_total = 0
    for query in vectors[5800:]:
        exact = matrix.nearest(query, 16)
        pooled = matrix.nearest_sketched(query, 16, pool=256)
        close = [hit for hit in exact if hit[1] >= threshold]
        close_total += len(close)
        # Same neighbours, same order; a cosine may differ in its last bit (a product over
        # gathered rows rounds differently from one over the whole matrix).
        assert [hit[0] for hit in pooled[: len(close)]] == [hit[0] for hit in close]
        assert [hit[1] for hit in pooled[: len(close)]] == pytest.approx([c for _, c in close])
    assert close_total > 200  # the data really has close neighbours to miss


def test_the_answer_depends_on_the_vectors_not_on_their_rows() -> None:
    vectors = clustered(3000, 64, seed=3)
    order = list(range(3000))
    random.Random(4).shuffle(order)
    first = filled(vectors)
    second = filled(vectors, order)
    # Removals move the last row into the gap: the sketches must move with their rows.
    for n in range(0, 3000, 7):
        first.remove(f"n{n:07d}")
        second.remove(f"n{n:07d}")
    for query in clustered(50, 64, seed=5):
        assert first.nearest_sketched(query, 16, 128) == second.nearest_sketched(query, 16, 128)
    moved = vectors[2999]  # the last row, moved into the first gap
    assert first.nearest_sketched(moved, 1, 64)[0][0] == "n0002999"


def test_sketches_survive_growth_pickling_and_overwrites() -> None:
    vectors = clustered(1000, 32, seed=6)
    matrix = filled(vectors)  # grown from 64 rows several times
    matrix.put("n0000000", -vectors[0])  # an overwrite re-sketches its row
    restored = pickle.loads(pickle.dumps(matrix))
    for query in (vectors[0], -vectors[0], vectors[500]):
        assert restored.nearest_sketched(query, 8, 100) == matrix.nearest_sketched(query, 8, 100)
    assert matrix.nearest_sketched(-vectors[0], 1, 100)[0][0] == "n0000000"
    restored.put("extra000", vectors[1])  # room to grow after a restore
    assert restored.nearest_sketched(vectors[1], 2, 100)[0][1] == pytest.approx(1.0, abs=1e-5)


def test_edge_config_defaults_to_a_pool_and_zero_means_exact() -> None:
    assert AutoEdgeConfig().semantic_scan_pool == 512
    assert AutoEdgeConfig(semantic_scan_pool=0).semantic_scan_pool == 0
    with pytest.raises(ValueError, match="semantic_scan_pool"):
        AutoEdgeConfig(semantic_scan_pool=-1)


def test_the_application_takes_its_pool_from_settings(tmp_path: Path) -> None:
    from graph.store import DecisionStore, StoreOptions
    from retrieval.index import DualIndex
    from service.settings import Settings
    from service.usecases import Decigraph
    from tests.support.fakes import HashEmbedder, MemoryVectorIndex

    store = DecisionStore.open(tmp_path, StoreOptions(fsync="never"))
    index = DualIndex.open(store, HashEmbedder(), MemoryVectorIndex())
    try:
        exact = Decigraph(Settings(data_dir=tmp_path, neighbour_pool=0), store, index)
        assert exact.auto_edges.semantic_scan_pool == 0
        assert Decigraph(Settings(data_dir=tmp_path), store, index).auto_edges == AutoEdgeConfig()
    finally:
        index.close()


def test_entity_and_statement_keys_are_shared_strings_not_copies() -> None:
    from retrieval.structures import EntityIndex

    index = EntityIndex()
    # Keys built at run time (as f-strings are): equal, but distinct objects.
    index.put("a0000000", ["".join(["t:", "ledger"]), "p:db"], ("2026", "2026", "a0000000"))
    index.put("b0000000", ["".join(["t:", "ledger"])], ("2026", "2026", "b0000000"))
    assert index.keys_of("a0000000")[0] is index.keys_of("b0000000")[0]
    assert index.latest("t:ledger", 5) == ["b0000000", "a0000000"]
