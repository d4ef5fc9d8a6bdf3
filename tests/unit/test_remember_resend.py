"""``remember`` of an item that is already stored: identical, a no-op; changed, a logged update
(the new text re-embedded, the old one still in the log); another kind or source, refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from graph.errors import ValidationError
from graph.store import DecisionStore, StoreOptions
from service import usecases
from service.methods import build_registry
from service.methods.memory import RememberParams
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from tests.support.fakes import HashEmbedder, fake_app

OLD = "The ledger migration finished on Tuesday"
NEW = "The ledger migration finished on Thursday after a rollback"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def remember(app: Decigraph, **fields: Any) -> usecases.Remembered:
    return usecases.remember_item(app, RememberParams.model_validate(fields), "agent")


def events(app: Decigraph) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in app.store.log_path.read_bytes().splitlines()]


def test_an_identical_resend_writes_nothing(app: Decigraph) -> None:
    first = remember(app, text=OLD, externalId="m1", source="ops", tags=["ledger"])
    seq = app.store.seq
    again = remember(app, text=OLD, externalId="m1", source="ops", tags=["ledger"])
    assert (again.created, again.updated, again.node.id) == (False, [], first.node.id)
    assert app.store.seq == seq
    assert remember(app, text=OLD, externalId="m1").updated == []  # unstated fields are kept


def test_new_text_under_a_known_external_id_is_a_logged_update(
    app: Decigraph, tmp_path: Path
) -> None:
    first = remember(app, text=OLD, externalId="m1", source="ops")
    again = remember(app, text=NEW, externalId="m1", source="ops")
    assert (again.created, again.updated, again.node.id) == (False, ["text"], first.node.id)
    assert app.store.get(first.node.id).text == NEW
    assert again.node.version == 2
    log = events(app)
    assert log[-1]["op"] == "update"
    assert log[-1]["payload"] == {"id": first.node.id, "changes": {"text": NEW}}
    assert log[-2]["payload"]["node"]["text"] == OLD  # the old version stays recoverable
    app.index.flush()  # re-embedded: the vector is the new text's
    stored = app.index.vectors.rows[first.node.id][0]  # type: ignore[attr-defined]
    assert np.allclose(stored, HashEmbedder().embed([NEW])[0])
    app.store.close()
    with DecisionStore.open(tmp_path / "data", StoreOptions(use_snapshot=False)) as replayed:
        assert replayed.get(first.node.id).text == NEW


def test_other_tags_on_the_same_content_update_them(app: Decigraph) -> None:
    fields = {"text": OLD, "source": "ops", "occurredAt": "2025-03-01T10:00:00Z"}
    first = remember(app, **fields, tags=["ledger"])
    again = remember(app, **fields, tags=["ledger", "migration"])
    assert (again.node.id, again.updated) == (first.node.id, ["tags"])
    assert app.store.get(first.node.id).tags == ["ledger", "migration"]


@pytest.mark.parametrize(("field", "value"), [("kind", "fact"), ("source", "chat")])
def test_a_resend_naming_another_kind_or_source_is_refused(
    app: Decigraph, field: str, value: str
) -> None:
    remember(app, text=OLD, externalId="m1", source="ops")
    seq = app.store.seq
    with pytest.raises(ValidationError) as info:
        remember(app, **{"text": NEW, "externalId": "m1", "source": "ops", field: value})
    assert info.value.field == field
    assert "m1" in info.value.detail
    assert app.store.seq == seq


def call(app: Decigraph, params: dict[str, Any]) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": "cstp.remember", "params": params}
    answer: dict[str, Any] = Dispatcher(build_registry(app)).handle(request, CallContext("a"))
    return answer


def test_over_json_rpc(app: Decigraph) -> None:
    made = call(app, {"text": OLD, "externalId": "m1"})["result"]
    assert (made["created"], made["updated"], made["version"]) == (True, [], 1)
    seq = app.store.seq
    same = call(app, {"text": OLD, "externalId": "m1"})["result"]
    assert (same["id"], same["created"], same["updated"], same["version"]) == (
        made["id"],
        False,
        [],
        1,
    )
    assert app.store.seq == seq
    changed = call(app, {"text": NEW, "externalId": "m1"})["result"]
    assert (changed["id"], changed["created"], changed["updated"], changed["version"]) == (
        made["id"],
        False,
        ["text"],
        2,
    )
    assert app.store.get(made["id"]).text == NEW
    error = call(app, {"text": NEW, "externalId": "m1", "kind": "thought"})["error"]
    assert (error["code"], error["data"]["field"]) == (-32602, "kind")
