"""Property-based fuzzing of every JSON-RPC method's params: never an internal error.

In-process, with the deterministic fakes for the model and ChromaDB (the dispatcher and the
handlers are what is under test; ``test_rpc_e2e.py`` covers the real parts over a socket).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.drafts import DecisionDraft
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions
from retrieval.autoedges import AutoEdgeConfig
from retrieval.index import DualIndex
from service.application import Decigraph
from service.registry import build_registry
from service.rpc import INTERNAL_ERROR, CallContext, Dispatcher
from service.settings import Settings

from .conftest import TickingClock
from .fakes import HashEmbedder, MemoryVectorIndex


@pytest.fixture(scope="module")
def dispatcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Dispatcher, list[str]]]:
    data = tmp_path_factory.mktemp("fuzz") / "data"
    store = DecisionStore.open(
        data, StoreOptions(fsync="never"), clock=TickingClock(), ids=IdSource(2)
    )
    index = DualIndex.open(store, HashEmbedder(), MemoryVectorIndex())
    app = Decigraph(Settings(data_dir=data), store, index, AutoEdgeConfig())
    ids = [store.record(DecisionDraft(text=f"seed decision {i}"), "t").id for i in range(4)]
    yield Dispatcher(build_registry(app)), ids
    index.close()
    store.close()


FIELD_NAMES = [
    "decision",
    "id",
    "decision_id",
    "decisionId",
    "query",
    "limit",
    "filters",
    "retrievalMode",
    "hybridWeight",
    "confidence",
    "category",
    "stakes",
    "reasons",
    "tags",
    "updates",
    "outcome",
    "sourceId",
    "targetId",
    "edgeType",
    "weight",
    "text",
    "kind",
    "occurredAt",
    "intent",
    "nodeId",
    "depth",
    "direction",
    "maxPaths",
    "edgeTypes",
    "status",
    "offset",
    "sort",
    "reviewIn",
    "expectedVersion",
    "hops",
    "entities",
    "externalId",
    "search",
    "dateFrom",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(
        [
            "hybrid",
            "depends_on",
            "success",
            "architecture",
            "high",
            "2w",
            "why",
            "2025-01-01T00:00:00Z",
            "both",
            "0000aaaa",
            "' OR 1=1 --",
            "MATCH (n) DETACH DELETE n",
        ]
    ),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=8), children, max_size=4),
    ),
    max_leaves=12,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
@pytest.mark.parametrize(
    "method",
    [
        "cstp.recordDecision",
        "cstp.getDecision",
        "cstp.queryDecisions",
        "cstp.updateDecision",
        "cstp.reviewDecision",
        "cstp.linkDecisions",
        "cstp.unlinkDecisions",
        "cstp.remember",
        "cstp.recall",
        "cstp.getGraph",
        "cstp.getNeighbors",
        "cstp.findPath",
        "cstp.getAncestors",
        "cstp.getDescendants",
        "cstp.findContradictions",
        "cstp.getBlockedChain",
        "cstp.computeSalience",
        "cstp.getHighSalience",
        "cstp.listDecisions",
        "cstp.getStats",
        "cstp.checkGuardrails",
        "cstp.listGuardrails",
        "cstp.preAction",
        "cstp.ready",
        "cstp.getSessionContext",
    ],
)
def test_no_params_cause_an_internal_error(
    dispatcher: tuple[Dispatcher, list[str]], method: str, data: st.DataObject
) -> None:
    rpc, ids = dispatcher
    spec = rpc.registry.get(method)
    assert spec is not None
    own = sorted(f.alias or name for name, f in spec.params.model_fields.items())
    # Mostly the method's own parameters (so validation passes often and handlers run).
    keys = (
        st.sampled_from(own)
        if own and data.draw(st.integers(0, 3))
        else st.sampled_from(FIELD_NAMES)
    )
    raw: dict[str, Any] = data.draw(st.dictionaries(keys, json_values, max_size=6))
    for key in ("id", "sourceId", "targetId", "nodeId"):
        if key in raw and data.draw(st.booleans()):
            raw[key] = data.draw(st.sampled_from(ids))
    answer = rpc.handle(
        {"jsonrpc": "2.0", "method": method, "params": raw, "id": 1}, CallContext("fuzz")
    )
    assert answer is not None
    if "error" in answer:
        assert answer["error"]["code"] != INTERNAL_ERROR, (method, raw, answer)
        assert "Traceback" not in answer["error"]["message"]


def test_every_registered_method_is_fuzzed(dispatcher: tuple[Dispatcher, list[str]]) -> None:
    rpc, _ = dispatcher
    source = Path(__file__).read_text()
    assert all(f'"{name}"' in source for name in rpc.registry.names())
