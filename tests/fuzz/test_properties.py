"""Property tests over random command sequences: replay is deterministic and the rules hold."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.drafts import DecisionDraft
from graph.enums import EdgeType
from graph.errors import DecigraphError
from graph.eventlog import LogEntry, read_events
from graph.ids import IdSource
from graph.model import refused_character
from graph.state import GraphState, graph_hash
from graph.store import DecisionStore, StoreOptions
from graph.verification import check_invariants
from tests.conftest import TickingClock

EDGE_TYPES = [t.value for t in EdgeType]
index = st.integers(min_value=0, max_value=30)

command = st.one_of(
    st.tuples(
        st.just("record"),  # text a caller may send (controls but tab, LF, CR are refused)
        st.text(min_size=1, max_size=12).filter(lambda t: t.strip() and not refused_character(t)),
    ),
    st.tuples(st.just("link"), index, index, st.sampled_from(EDGE_TYPES)),
    st.tuples(st.just("unlink"), index, index, st.none() | st.sampled_from(EDGE_TYPES)),
    st.tuples(st.just("update"), index, st.floats(min_value=0, max_value=1)),
    st.tuples(st.just("review"), index, st.sampled_from(["success", "partial", "failure"])),
    st.tuples(st.just("lifecycle"), index, st.sampled_from(["proposed", "accepted", "rejected"])),
    st.tuples(st.just("supersede"), index, index),
)


def run(store: DecisionStore, commands: list[tuple[Any, ...]]) -> int:
    """Apply commands, skipping rejected ones; return how many were accepted."""
    accepted = 0
    ids: list[str] = []
    for cmd in commands:
        name = cmd[0]
        pick = (lambda i: ids[i % len(ids)]) if ids else None
        seq, size = store.seq, store.log_path.stat().st_size if store.log_path.exists() else 0
        try:
            if name == "record":
                ids.append(store.record(DecisionDraft(text=cmd[1]), "prop").id)
            elif pick is None:
                continue
            elif name == "link":
                store.link(pick(cmd[1]), pick(cmd[2]), cmd[3], "prop")
            elif name == "unlink":
                store.unlink(pick(cmd[1]), pick(cmd[2]), "prop", cmd[3])
            elif name == "update":
                store.update(pick(cmd[1]), {"confidence": cmd[2]}, "prop")
            elif name == "review":
                store.review(pick(cmd[1]), cmd[2], "prop")
            elif name == "lifecycle":
                store.set_lifecycle(pick(cmd[1]), cmd[2], "prop")
            else:
                store.supersede(pick(cmd[1]), pick(cmd[2]), "prop")
        except DecigraphError:
            # A rejected command writes nothing and changes nothing.
            assert store.seq == seq
            assert store.log_path.stat().st_size == size
            continue
        accepted += store.seq - seq
    return accepted


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands=st.lists(command, min_size=1, max_size=60), snapshot_every=st.integers(0, 9))
def test_replay_is_deterministic_and_rules_hold(
    commands: list[tuple[Any, ...]], snapshot_every: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        opts = StoreOptions(fsync="never", snapshot_every=snapshot_every)
        store = DecisionStore.open(data, opts, clock=TickingClock(), ids=IdSource(3))
        accepted = run(store, commands)
        live = store.graph_hash()
        assert store.seq == accepted
        assert check_invariants(store.graph) == []
        for u, v in store.graph.edges():
            assert "text" in store.graph.nodes[u]
            assert "text" in store.graph.nodes[v]  # no stub nodes

        # Two independent full replays of the log agree with each other and with the live view.
        replays = []
        for _ in range(2):
            state = GraphState()
            for item in read_events(store.log_path):
                assert isinstance(item, LogEntry)
                state.apply(item.event)
            replays.append(graph_hash(state.graph))
        assert replays == [live, live]

        # Snapshot (taken at some point in the run) + tail equals the full replay.
        store._writable = False  # crash: no snapshot on close
        store.log.close()
        store._dir_lock.release()
        reopened = DecisionStore.open(data, opts)
        assert reopened.graph_hash() == live
        reopened.close()
        (data / "snapshot.json").unlink(missing_ok=True)
        full = DecisionStore.open(data, opts)
        assert full.graph_hash() == live
        assert full.verify().ok
        full.close()
