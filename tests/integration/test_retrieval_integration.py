"""The real stack: MiniLM from the bundled package, embedded and HTTP ChromaDB, offline."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graph.drafts import DecisionDraft, MemoryDraft
from graph.store import DecisionStore, StoreOptions
from retrieval.embedder import MiniLMEmbedder
from retrieval.index import DualIndex
from retrieval.query import query_decisions
from retrieval.recall import recall
from retrieval.vector import ChromaVectorIndex
from retrieval.writes import record, remember_many
from tests.integration.test_embedder import _unshare_works
from tests.integration.test_vector_index import start_server, stop_server

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
NOTES = [
    ("ana", "Ana: the payment service kept timing out during the Black Friday load test"),
    ("ben", "Ben: we traced the timeouts to connection pool exhaustion in PostgreSQL"),
    ("ana", "Ana: because of the pool exhaustion we added PgBouncer in front of the database"),
    ("ben", "Ben: my daughter started piano lessons this week"),
    ("ana", "Ana: the mobile team wants dark mode in the next release"),
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process, url = start_server(tmp_path_factory.mktemp("chroma"))
    yield url
    stop_server(process)


def fill(index: DualIndex) -> dict[str, str]:
    drafts = [
        MemoryDraft(
            text=text, source=source, occurred_at=T0 + timedelta(hours=i), external_id=f"n{i}"
        )
        for i, (source, text) in enumerate(NOTES)
    ]
    ids = {r.node.external_id or "": r.node.id for r in remember_many(index, drafts, "it")}
    ids["decision"] = record(
        index,
        DecisionDraft(text="Put PgBouncer in front of PostgreSQL", category="architecture"),
        "it",
    ).node.id
    return ids


@pytest.mark.parametrize("backend", ["persistent", "http"])
def test_write_recall_reopen(
    tmp_path: Path, embedder: MiniLMEmbedder, backend: str, request: pytest.FixtureRequest
) -> None:
    def vectors() -> ChromaVectorIndex:
        if backend == "http":
            return ChromaVectorIndex.http(
                request.getfixturevalue("chroma_url"), f"it-{tmp_path.name}"[:60]
            )
        return ChromaVectorIndex.persistent(tmp_path / "chroma")

    store = DecisionStore.open(tmp_path / "data", StoreOptions(fsync="never"))
    index = DualIndex.open(store, embedder, vectors())
    ids = fill(index)
    answer = recall(index, "why did we add PgBouncer?", 3, now=T0 + timedelta(days=1))
    assert answer.intent.value == "why"
    top = [h.id for h in answer.hits]
    assert ids["n2"] in top
    assert ids["n3"] not in top  # piano lessons have nothing to do with it
    hybrid = query_decisions(index, "connection pooling for the database", "hybrid", 5)
    assert [h.id for h in hybrid.hits] == [ids["decision"]]  # decisions only
    assert index.check_consistency() == []
    before = [(h.id, h.score) for h in answer.hits]
    index.close()
    store.close()

    store = DecisionStore.open(tmp_path / "data", StoreOptions(fsync="never"))
    index = DualIndex.open(store, embedder, vectors())
    try:
        assert index.report.embedded == 0
        assert index.report.reused == store.graph.number_of_nodes()
        again = recall(index, "why did we add PgBouncer?", 3, now=T0 + timedelta(days=1))
        assert [(h.id, h.score) for h in again.hits] == before
    finally:
        index.close()
        store.close()


@pytest.mark.skipif(not _unshare_works(), reason="needs `unshare -n` (a private network namespace)")
def test_the_whole_stack_runs_with_the_network_unreachable(tmp_path: Path) -> None:
    code = f"""
import sys
from pathlib import Path
assert not Path('/proc/net/route').read_text().splitlines()[1:], 'network reachable'
sys.path.insert(0, {str(ROOT)!r})
from graph.drafts import MemoryDraft
from graph.store import DecisionStore, StoreOptions
from retrieval.embedder import MiniLMEmbedder
from retrieval.index import DualIndex
from retrieval.recall import recall
from retrieval.vector import ChromaVectorIndex
from retrieval.writes import remember
root = Path({str(tmp_path)!r})
store = DecisionStore.open(root / 'data', StoreOptions(fsync='never'))
index = DualIndex.open(store, MiniLMEmbedder(), ChromaVectorIndex.persistent(root / 'chroma'))
node = remember(index, MemoryDraft(text='offline memories still work'), 'it').node
hits = recall(index, 'do memories work offline?', 1).hits
assert hits[0].id == node.id, hits
assert index.check_consistency() == []
print('ok')
"""
    result = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")
