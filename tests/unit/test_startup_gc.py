"""Start-up and GC pauses without a model: the model loads while the store opens and a request
that embeds meanwhile waits for it (never fails, never sees half a model); ``/ready`` says
``loading`` until it is warm; what a server loads is frozen out of the collector's reach
(``gc.freeze``), again after a rebuild of the store, and each past graph too, which reference
counting alone then frees."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from fastapi.testclient import TestClient

from graph import gcpause
from graph.drafts import DecisionDraft
from graph.state import GraphState
from graph.timetravel import PastGraph
from retrieval import minilm
from retrieval.embedder import MiniLMEmbedder, bundled_model_path
from service.composition import Timeline, Warmup, _freeze_loaded, readiness
from service.http.app import create_app
from service.http.auth import TokenTable
from service.usecases import Decigraph
from tests.support.fakes import HashEmbedder, fake_app

TOKEN = "startup-token-0123456789abcdef"


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    """Whatever a test froze is unfrozen after it (the rest of the session collects as usual)."""
    yield
    gc.unfreeze()


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 3) as made:
        yield made


class SlowModel(MiniLMEmbedder):
    """The real embedder's loading and locking, with a fake model that takes ``delay`` s to
    load (and records how many times it was loaded)."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.opened = 0
        self.started = threading.Event()

    def _open(self, path: Path) -> Any:
        self.started.set()
        time.sleep(self.delay)
        self.opened += 1
        self._model = object()
        fake = HashEmbedder()
        return fake.embed


def test_a_request_before_the_model_is_loaded_waits_for_it() -> None:
    model = SlowModel(0.4)
    warmup = Warmup(model)
    warmup.start()
    assert model.started.wait(5)
    assert warmup.state == "loading"
    vectors = model.embed(["a request that arrives while the model loads"])  # waits, then answers
    assert warmup.done.wait(5)
    assert warmup.state == "warm"
    assert model.opened == 1  # loaded once, by whoever came first
    expected = HashEmbedder().embed(["a request that arrives while the model loads"])
    np.testing.assert_array_equal(vectors, expected)


def test_ready_says_loading_until_the_early_model_is_warm(app: Decigraph) -> None:
    model = SlowModel(0.5)
    app.index.embedder = model
    warmup = Warmup(model)
    http = TestClient(create_app(app, TokenTable({TOKEN: "ops"}), warmup))
    warmup.start()
    assert model.started.wait(5)
    early = http.get("/ready")
    assert early.status_code == 503
    assert early.json()["model"] == "loading"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "cstp.recall", "params": {"query": "kafka"}}
    answer = http.post("/cstp", json=body, headers=headers).json()  # sent while loading
    assert "result" in answer, answer
    assert warmup.done.wait(5)
    assert http.get("/ready").status_code == 200
    assert readiness(app, warmup).model == "warm"


def test_the_warm_up_freezes_once_warm_and_not_when_it_failed() -> None:
    before = gcpause.counts.freezes
    Warmup(HashEmbedder(), freeze=True).run()
    assert gcpause.counts.freezes == before + 1
    assert gc.get_freeze_count() > 0

    class Broken:
        model_name, dimension = "broken", 16

        def embed(self, texts: Sequence[str]) -> Any:
            raise RuntimeError("no model files")

    failed = Warmup(Broken(), freeze=True)
    failed.run()
    assert failed.state == "failed"
    assert failed.done.is_set()
    assert gcpause.counts.freezes == before + 1


def test_a_loaded_app_is_frozen_and_refrozen_after_a_reset(app: Decigraph) -> None:
    before = gcpause.counts.freezes
    _freeze_loaded(app)
    assert gcpause.counts.freezes == before + 1
    assert gc.get_freeze_count() > 0
    assert app.past.freeze
    assert app.store.reset_listeners[-1] is gcpause.refreeze_heap  # after the rebuilds
    for listener in app.store.reset_listeners:  # what a reset from a shared log runs
        listener()
    assert gcpause.counts.freezes == before + 2


def test_the_setting_turns_freezing_off(app: Decigraph) -> None:
    app.settings.gc_freeze = False
    before = gcpause.counts.freezes
    _freeze_loaded(app)
    assert gcpause.counts.freezes == before
    assert gcpause.refreeze_heap not in app.store.reset_listeners


def test_a_frozen_past_graph_is_freed_by_reference_counting(app: Decigraph) -> None:
    for text in ("Use Kafka", "Use Postgres", "Use Redis"):
        app.store.record(DecisionDraft(text=text), "t")
    app.past.freeze, app.past.cache_size = True, 0
    before = gcpause.counts.freezes
    past = app.past.at(2)
    assert gcpause.counts.freezes == before + 1
    G = past.graph
    assert G.number_of_nodes() == 2
    assert dict(G.degree) == dict.fromkeys(G, 0)  # the views still work, made afresh
    assert list(G.edges) == []
    gc.disable()  # only reference counting may free it
    try:
        ref = weakref.ref(G)
        del G, past
        assert ref() is None
    finally:
        gc.enable()


def test_a_past_graph_holds_no_reference_cycle() -> None:
    state = GraphState()
    state.graph.add_edge("a", "b", key="depends_on")
    state.seq = 2
    past = PastGraph(state)
    G = past.graph
    _ = G.edges, G.degree, G.in_edges, G.out_degree, G.nodes, G.pred, G.succ
    assert all(referent is not G for v in vars(G).values() for referent in gc.get_referents(v))
    assert state.graph is not G  # the state (a cycle of bound methods) lets go of it
    assert past.seq == 2


def test_the_timeline_marks_seconds_since_the_process_started() -> None:
    timeline = Timeline()
    timeline.mark("imports")
    timeline.mark("store")
    assert 0 < timeline.marks["imports"] <= timeline.marks["store"]
    assert timeline.line().startswith("imports ")
    assert ", store " in timeline.line()


def test_the_lean_runtime_takes_the_bundled_model_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DECIGRAPH_MODEL_RUNTIME", raising=False)
    assert minilm.supported(bundled_model_path())
    assert not minilm.supported(tmp_path)
    assert MiniLMEmbedder().runtime == "lean"
    assert MiniLMEmbedder(runtime="sentence-transformers").runtime == "sentence-transformers"


def test_what_writes_add_is_frozen_every_so_many_events(
    app: Decigraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.composition import _Refreezer

    monkeypatch.setattr(_Refreezer, "EVERY", 2)
    _freeze_loaded(app)
    before = gcpause.counts.freezes
    for text in ("Use Kafka", "Use Postgres", "Use Redis", "Use Vault"):
        app.store.record(DecisionDraft(text=text), "t")
    assert gcpause.counts.freezes == before + 2


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_refreeze_collects_new_garbage_cycles_before_freezing() -> None:
    """Frozen garbage is never freed: :func:`gcpause.freeze_new` collects first."""
    cycle = _Cycle()
    alive = weakref.ref(cycle)
    del cycle  # garbage now, but only the collector can free a cycle
    assert alive() is not None
    gcpause.freeze_new()
    assert alive() is None
    kept = _Cycle()  # still referenced: frozen, not freed
    gcpause.freeze_new()
    assert kept.me is kept
    assert gc.get_freeze_count() > 0


class _Probe:
    """Records whether the collector ran while it was unpickled."""

    seen: ClassVar[list[bool]] = []

    def __init__(self) -> None:
        self.value = 1  # some state, so unpickling calls __setstate__

    def __setstate__(self, state: object) -> None:
        _Probe.seen.append(gc.isenabled())


def test_the_index_snapshot_loads_with_the_collector_paused(tmp_path: Path) -> None:
    from retrieval import memsnap
    from retrieval.vector import Watermark

    mark = Watermark(3, "abc")
    memsnap.save(tmp_path / "memory.pickle", mark, {"probe": _Probe()})
    _Probe.seen.clear()
    state = memsnap.load(tmp_path / "memory.pickle", mark)
    assert state is not None
    assert _Probe.seen == [False]
    assert gc.isenabled()


def test_a_past_graph_is_built_with_the_collector_paused_throughout(
    app: Decigraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    for text in ("Use Kafka", "Use Postgres"):
        app.store.record(DecisionDraft(text=text), "t")
    seen: list[bool] = []
    start = app.past._start

    def probed(seq: int) -> Any:
        seen.append(gc.isenabled())  # the checkpoint's load
        return start(seq)

    monkeypatch.setattr(app.past, "_start", probed)
    app.past.cache_size = 0
    app.past.at(1)
    assert seen == [False]
    assert gc.isenabled()
