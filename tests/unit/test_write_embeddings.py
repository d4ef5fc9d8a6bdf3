"""What the write paths embed (issue 16): one text per record, nothing for an update that
leaves the embedded text alone, the new text once when it changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.text import compose_embedding_text
from service import usecases
from service.methods.decisions import RecordParams, UpdateParams
from service.usecases import Decigraph
from tests.support.fakes import HashEmbedder, MemoryVectorIndex, fake_app

TEXT = "Use Kafka for payment events"
CONTEXT = "Ordering per key matters"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def embedder(app: Decigraph) -> HashEmbedder:
    found = app.index.embedder
    assert isinstance(found, HashEmbedder)
    return found


def chroma_row(app: Decigraph, node_id: str) -> tuple[Any, dict[str, Any]]:
    vectors = app.index.vectors
    assert isinstance(vectors, MemoryVectorIndex)
    app.index.flush()
    return vectors.rows[node_id]


def record(app: Decigraph) -> str:
    params = RecordParams.model_validate({"decision": TEXT, "context": CONTEXT})
    return usecases.record_decision(app, params, "agent").node.id


def update(app: Decigraph, node_id: str, **changes: Any) -> usecases.Updated:
    cmd = UpdateParams.model_validate({"id": node_id, "updates": changes})
    return usecases.update_decision(app, cmd, "agent")


def test_a_record_embeds_its_stored_text_once_and_nothing_else(app: Decigraph) -> None:
    model = embedder(app)
    calls, texts = model.calls, model.texts
    node_id = record(app)
    assert (model.calls, model.texts) == (calls + 1, texts + 1)  # not the statement as well
    stored = model.embed([compose_embedding_text(TEXT, CONTEXT, None)])[0]
    held = app.index.matrix.get(node_id)
    assert held is not None
    assert np.array_equal(held, stored)


@pytest.mark.parametrize(
    "changes",
    [{"confidence": 0.3}, {"tags": ["payments"]}, {"stakes": "high"}, {"category": "process"}],
)
def test_an_update_of_other_fields_keeps_the_vector_and_embeds_nothing(
    app: Decigraph, changes: dict[str, Any]
) -> None:
    node_id = record(app)
    model = embedder(app)
    before = np.array(app.index.matrix.get(node_id))  # a copy: the matrix reuses its rows
    chroma_before, _ = chroma_row(app, node_id)
    calls, texts = model.calls, model.texts
    result = update(app, node_id, **changes)
    assert result.fields  # something changed and was written
    assert (model.calls, model.texts) == (calls, texts)
    after = app.index.matrix.get(node_id)
    assert after is not None
    assert np.array_equal(before, after)
    chroma_after, meta = chroma_row(app, node_id)
    assert np.array_equal(chroma_before, chroma_after)
    if "confidence" in changes:
        assert meta["confidence"] == pytest.approx(0.3)  # the metadata beside it did change
    assert app.index.check_consistency() == []


def test_an_update_of_the_statement_re_embeds_it_once(app: Decigraph) -> None:
    node_id = record(app)
    model = embedder(app)
    before = np.array(app.index.matrix.get(node_id))  # a copy: the matrix reuses its rows
    calls, texts = model.calls, model.texts
    update(app, node_id, decision="Adopt RabbitMQ queues when refunds stall overnight")
    assert (model.calls, model.texts) == (calls + 1, texts + 1)
    after = app.index.matrix.get(node_id)
    expected = model.embed(
        [
            compose_embedding_text(
                "Adopt RabbitMQ queues when refunds stall overnight", CONTEXT, None
            )
        ]
    )
    assert after is not None
    assert not np.array_equal(before, after)
    assert np.array_equal(after, expected[0])
    assert app.index.check_consistency() == []


def test_an_update_of_the_context_re_embeds_the_stored_text(app: Decigraph) -> None:
    node_id = record(app)
    model = embedder(app)
    calls = model.calls
    update(app, node_id, context="Replays must be possible for 7 days")
    assert model.calls == calls + 1
    held = app.index.matrix.get(node_id)
    stored = compose_embedding_text(TEXT, "Replays must be possible for 7 days", None)
    assert held is not None
    assert np.array_equal(held, model.embed([stored])[0])
