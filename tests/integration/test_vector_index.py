"""ChromaVectorIndex against an embedded store and against a real ``chroma run`` server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.vector import (
    ChromaVectorIndex,
    VectorHit,
    VectorIndex,
    VectorIndexError,
    Watermark,
)

DIM = 384
CHROMA = Path(sys.executable).parent / "chroma"
SERVER_START_TIMEOUT = 60.0

IndexOpener = Callable[[], ChromaVectorIndex]


def unit_vectors(count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def basis(axis: int, sign: float = 1.0) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[axis] = sign
    return vector


def ids_of(hits: list[VectorHit]) -> list[str]:
    return [hit.id for hit in hits]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Run ``chroma run`` on a free port and wait for its heartbeat; returns (process, url)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = workdir / f"chroma-{port}.log"
    command = [str(CHROMA), "run", "--path", str(workdir / "data"), "--host", "127.0.0.1"]
    with log_path.open("wb") as log:
        process = subprocess.Popen([*command, "--port", str(port)], stdout=log, stderr=log)
    # Bypass any proxy settings: the server is on loopback.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chroma exited with {process.returncode}: {log_path.read_text()}")
        try:
            with opener.open(f"{url}/api/v2/heartbeat", timeout=1) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.1)
    stop_server(process)
    raise RuntimeError(f"chroma did not answer within {SERVER_START_TIMEOUT} s: {log_path}")


def stop_server(process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """Terminate a server process; kill it if it has not exited within ``timeout`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process, url = start_server(tmp_path_factory.mktemp("chroma-server"))
    yield url
    stop_server(process)


@pytest.fixture(params=["persistent", "http"])
def open_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IndexOpener]:
    """Opens (and reopens) one collection; every test gets its own collection name."""
    collection = f"test-{uuid.uuid4().hex[:12]}"
    if request.param == "http":
        url = request.getfixturevalue("chroma_server")  # started only if an http test runs

        def connect() -> ChromaVectorIndex:
            return ChromaVectorIndex.http(url, collection)
    else:

        def connect() -> ChromaVectorIndex:
            return ChromaVectorIndex.persistent(tmp_path / "chroma", collection)

    opened: list[ChromaVectorIndex] = []

    def opener() -> ChromaVectorIndex:
        opened.append(connect())
        return opened[-1]

    yield opener
    for index in opened:
        index.close()


@pytest.fixture
def index(open_index: IndexOpener) -> VectorIndex:
    return open_index()


def fill(index: VectorIndex, vectors: np.ndarray) -> list[str]:
    ids = [f"d{i:02d}" for i in range(len(vectors))]
    index.upsert(ids, vectors, [{"n": i} for i in range(len(vectors))])
    return ids


# -- both backends ----------------------------------------------------------------------------
def test_query_ranks_by_cosine_similarity(index: VectorIndex) -> None:
    vectors = unit_vectors(30)
    ids = fill(index, vectors)
    assert index.count() == 30
    assert index.all_ids() == set(ids)

    hits = index.query(vectors[7], k=5)

    expected = np.argsort(-(vectors @ vectors[7]))[:5]
    assert ids_of(hits) == [ids[i] for i in expected]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert [hit.score for hit in hits] == pytest.approx(
        [float(vectors[i] @ vectors[7]) for i in expected], abs=1e-5
    )


def test_scores_span_minus_one_to_one(index: VectorIndex) -> None:
    index.upsert(
        ["same", "orthogonal", "opposite"],
        np.stack([basis(0), basis(1), basis(0, -1.0)]),
        [{}, {}, {}],
    )
    hits = index.query(basis(0), k=3)
    assert ids_of(hits) == ["same", "orthogonal", "opposite"]
    assert [hit.score for hit in hits] == pytest.approx([1.0, 0.0, -1.0], abs=1e-5)


def test_ties_break_by_ascending_id(index: VectorIndex) -> None:
    vectors = unit_vectors(2, seed=3)
    twins = ["zeta", "alpha", "mu", "beta"]
    index.upsert(
        [*twins, "other"],
        np.stack([vectors[0]] * len(twins) + [vectors[1]]),
        [{} for _ in range(len(twins) + 1)],
    )
    assert ids_of(index.query(vectors[0], k=1)) == ["alpha"]
    assert ids_of(index.query(vectors[0], k=3)) == ["alpha", "beta", "mu"]
    assert ids_of(index.query(vectors[0], k=5)) == ["alpha", "beta", "mu", "zeta", "other"]


def test_k_beyond_count_and_empty_collection(index: VectorIndex) -> None:
    vectors = unit_vectors(3)
    assert index.query(vectors[0], k=5) == []
    assert index.count() == 0
    assert index.all_ids() == set()
    fill(index, vectors)
    assert len(index.query(vectors[0], k=100)) == 3
    assert index.query(vectors[0], k=0) == []
    with pytest.raises(ValueError, match="non-negative"):
        index.query(vectors[0], k=-1)


def test_delete_ignores_unknown_ids(index: VectorIndex) -> None:
    vectors = unit_vectors(4)
    fill(index, vectors)
    index.delete(["d01", "never-stored"])
    index.delete([])
    assert index.all_ids() == {"d00", "d02", "d03"}
    assert index.count() == 3
    assert "d01" not in ids_of(index.query(vectors[1], k=4))


def test_upsert_replaces_vector_and_all_metadata(index: VectorIndex) -> None:
    old, new = unit_vectors(2, seed=5)
    index.upsert(["x"], old[None, :], [{"category": "architecture", "stakes": "high"}])
    index.upsert(["x"], new[None, :], [{"category": "process"}])

    assert index.count() == 1
    np.testing.assert_allclose(index.get_vectors(["x"])["x"], new, atol=1e-6)
    assert index.query(new, k=1)[0].score == pytest.approx(1.0, abs=1e-5)
    # Chroma alone would merge the old "stakes" into the new metadata.
    assert index.query(new, k=1, where={"stakes": "high"}) == []
    assert ids_of(index.query(new, k=1, where={"category": "process"})) == ["x"]
    assert index.query(new, k=1, where={"category": "architecture"}) == []


def test_where_filters_pass_through(index: VectorIndex) -> None:
    vectors = unit_vectors(4, seed=11)
    index.upsert(
        ["a", "b", "c", "d"],
        vectors,
        [
            {"category": "architecture", "confidence": 0.9, "tags": ["db", "infra"]},
            {"category": "architecture", "confidence": 0.4, "tags": ["api"]},
            {"category": "process", "confidence": 0.8, "tags": ["db"]},
            {"category": "process", "confidence": 0.2},
        ],
    )

    def matching(where: Mapping[str, Any] | None) -> set[str]:
        return set(ids_of(index.query(vectors[0], k=10, where=where)))

    assert matching(None) == matching({}) == {"a", "b", "c", "d"}
    assert matching({"category": "architecture"}) == {"a", "b"}
    assert matching({"confidence": {"$gte": 0.8}}) == {"a", "c"}
    both = {"$and": [{"category": "architecture"}, {"confidence": {"$gte": 0.5}}]}
    assert matching(both) == {"a"}
    assert matching({"$or": [{"category": "process"}, {"confidence": {"$gt": 0.85}}]}) == {
        "a",
        "c",
        "d",
    }
    assert matching({"tags": {"$contains": "db"}}) == {"a", "c"}
    assert matching({"tags": {"$contains": "nothing"}}) == set()


def test_none_metadata_values_are_dropped(index: VectorIndex) -> None:
    vectors = unit_vectors(3, seed=2)
    index.upsert(
        ["a", "b", "c"],
        vectors,
        [
            {"category": None, "stakes": "low"},  # type: ignore[dict-item]
            {"category": None, "tags": []},  # type: ignore[dict-item]
            {"category": "process"},
        ],
    )
    assert index.count() == 3
    assert ids_of(index.query(vectors[0], k=3, where={"stakes": "low"})) == ["a"]
    assert ids_of(index.query(vectors[0], k=3, where={"category": "process"})) == ["c"]


def test_dimension_mismatch_is_a_value_error(open_index: IndexOpener) -> None:
    index = open_index()
    fill(index, unit_vectors(2))
    short = np.ones((1, 10), dtype=np.float32)
    with pytest.raises(ValueError, match="dimension 10"):
        index.upsert(["bad"], short, [{}])
    with pytest.raises(ValueError, match="dimension 10"):
        index.query(short[0], k=1)
    # A fresh handle has not seen a vector yet and must learn the dimension from Chroma.
    with pytest.raises(ValueError, match="dimension 10"):
        open_index().query(short[0], k=1)
    assert index.count() == 2


def test_invalid_upserts_are_rejected(index: VectorIndex) -> None:
    vectors = unit_vectors(2)
    with pytest.raises(ValueError, match="one vector row"):
        index.upsert(["a"], vectors, [{}])
    with pytest.raises(ValueError, match="one vector row"):
        index.upsert(["a", "b"], vectors, [{}])
    with pytest.raises(ValueError, match="same id"):
        index.upsert(["a", "a"], vectors, [{}, {}])
    with pytest.raises(ValueError, match="finite"):
        index.upsert(["a"], np.full((1, DIM), np.nan, dtype=np.float32), [{}])
    with pytest.raises(ValueError, match="'owner'"):
        index.upsert(["a"], vectors[:1], [{"owner": {"name": "x"}}])  # type: ignore[dict-item]
    index.upsert([], np.empty((0, DIM), dtype=np.float32), [])
    assert index.count() == 0


def test_get_vectors_returns_float32_for_known_ids(index: VectorIndex) -> None:
    vectors = unit_vectors(5, seed=9)
    ids = fill(index, vectors)
    found = index.get_vectors([ids[4], "missing", ids[1]])
    assert set(found) == {ids[4], ids[1]}
    for position in (1, 4):
        stored = found[ids[position]]
        assert stored.dtype == np.float32
        np.testing.assert_allclose(stored, vectors[position], atol=1e-6)
    assert index.get_vectors([]) == {}


def test_writes_are_split_into_chroma_batches(
    open_index: IndexOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = open_index()
    monkeypatch.setattr(index, "_batch_limit", 3)
    vectors = unit_vectors(10, seed=4)
    ids = fill(index, vectors)
    assert index.count() == 10
    assert set(index.get_vectors(ids)) == set(ids)
    index.upsert(ids, vectors, [{"n": -1} for _ in ids])
    assert len(index.query(vectors[0], k=10, where={"n": -1})) == 10
    index.delete(ids[:7])
    assert index.all_ids() == set(ids[7:])


def test_watermark_survives_reopening(open_index: IndexOpener) -> None:
    index = open_index()
    assert index.watermark() is None
    vectors = unit_vectors(3)
    fill(index, vectors)
    index.set_watermark(Watermark(7, "abc"))
    index.set_watermark(Watermark(12, "def"))
    index.close()

    reopened = open_index()
    assert reopened.watermark() == Watermark(12, "def")
    assert reopened.count() == 3
    # Rewriting the collection metadata must not have lost the cosine space.
    assert reopened.query(-vectors[0], k=3)[-1].score == pytest.approx(-1.0, abs=1e-5)


def test_reset_drops_records_and_watermark(index: VectorIndex) -> None:
    fill(index, unit_vectors(4))
    index.set_watermark(Watermark(3, "h3"))
    index.reset()
    assert index.count() == 0
    assert index.all_ids() == set()
    assert index.watermark() is None
    # The recreated collection is usable and takes whatever dimension comes first.
    index.upsert(["small"], np.ones((1, 8), dtype=np.float32), [{}])
    assert ids_of(index.query(np.ones(8, dtype=np.float32), k=2)) == ["small"]


def test_closed_index_raises(open_index: IndexOpener) -> None:
    index = open_index()
    index.close()
    index.close()
    with pytest.raises(VectorIndexError, match="closed"):
        index.count()


# -- embedded store only ----------------------------------------------------------------------
def test_import_does_not_load_chromadb() -> None:
    probe = "import sys, retrieval.vector; print('chromadb' in sys.modules)"
    cwd = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_collection_in_another_space_is_refused(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(tmp_path), settings=Settings(anonymized_telemetry=False)
    )
    client.get_or_create_collection("euclid", embedding_function=None)
    client.close()  # type: ignore[attr-defined]  # typed as ClientAPI, built as Client
    with pytest.raises(VectorIndexError, match="'l2' distance"):
        ChromaVectorIndex.persistent(tmp_path, "euclid")


# -- server only ------------------------------------------------------------------------------
def test_unreachable_server_raises_vector_index_error() -> None:
    with pytest.raises(VectorIndexError, match="connecting to ChromaDB"):
        ChromaVectorIndex.http(f"http://127.0.0.1:{free_port()}")


def test_server_going_away_raises_vector_index_error(tmp_path: Path) -> None:
    process, url = start_server(tmp_path)
    try:
        index = ChromaVectorIndex.http(url, "vanishing")
    finally:
        stop_server(process)
    with pytest.raises(VectorIndexError, match="count on collection 'vanishing'"):
        index.count()
    with pytest.raises(VectorIndexError, match="vanishing"):
        index.upsert(["a"], unit_vectors(1), [{}])


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:8000", "127.0.0.1:8000", "http://h:1/api"])
def test_malformed_server_url_is_a_value_error(url: str) -> None:
    with pytest.raises(ValueError, match="URL"):
        ChromaVectorIndex.http(url)
