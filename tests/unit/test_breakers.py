"""Circuit breakers (CSTP F030): ``listBreakers``, ``getCircuitState``, ``resetCircuit``, and
the breaker findings of ``checkGuardrails``, ``preAction`` and the gated writes.

The state is derived from the log (reviews in review-time order, resets as ledger events)
and the store's clock, so these tests move a clock they hold and reopen the store to show
the state survives a restart (the half-open probe, kept in memory, is re-armed).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graph.algorithms.breakers import (
    BreakerConfig,
    OutcomeEvent,
    ResetEvent,
    Subject,
    replay,
    scope_matches,
)
from graph.events import Operation
from graph.ids import IdSource
from graph.state import ledger
from graph.store import DecisionStore, StoreOptions
from retrieval.index import DualIndex
from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.settings import Settings
from service.usecases import Decigraph
from service.usecases.breaker_model import DEFAULT_BREAKERS, BreakerRuntime, load_breakers
from service.usecases.breakers import open_breakers
from service.usecases.rules import GuardrailConfigError, load_rules
from tests.conftest import TickingClock
from tests.support.fakes import FakePairJudge, HashEmbedder, MemoryVectorIndex
from tests.support.rpc import written

pytestmark = pytest.mark.unit

HOUR = timedelta(hours=1)


@contextmanager
def clocked_app(
    data: Path, clock: TickingClock, configs: tuple[BreakerConfig, ...] = DEFAULT_BREAKERS
) -> Iterator[Decigraph]:
    """:func:`tests.support.fakes.fake_app` with a clock the test moves and given breakers."""
    store = DecisionStore.open(data, StoreOptions(fsync="never"), clock=clock, ids=IdSource(3))
    index = DualIndex.open(store, HashEmbedder(), MemoryVectorIndex())
    try:
        yield Decigraph(
            Settings(data_dir=data),
            store,
            index,
            breakers=BreakerRuntime(configs),
            pair_judge=FakePairJudge(),
        )
    finally:
        index.close()
        store.close()


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock()


@pytest.fixture
def app(tmp_path: Path, clock: TickingClock) -> Iterator[Decigraph]:
    with clocked_app(tmp_path / "data", clock) as made:
        yield made


def call(app: Decigraph, method: str, params: Any, agent: str = "platform-bot") -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer: dict[str, Any] | None = Dispatcher(build_registry(app)).handle(
        request, CallContext(agent)
    )
    assert answer is not None
    return answer


def ok(app: Decigraph, method: str, params: Any, agent: str = "platform-bot") -> dict[str, Any]:
    answer = call(app, method, params, agent)
    assert "error" not in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def error(app: Decigraph, method: str, params: Any, agent: str = "platform-bot") -> dict[str, Any]:
    answer = call(app, method, params, agent)
    assert "error" in answer, answer
    err: dict[str, Any] = answer["error"]
    return err


# High-stakes changes a platform team made one week; each one went wrong when reviewed.
RISKY = [
    "Migrate the orders database from MySQL 5.7 to Aurora PostgreSQL over a weekend",
    "Switch the edge proxy from NGINX to Envoy for all public traffic at once",
    "Rotate the root CA used by every internal mTLS connection",
    "Move session storage from Redis Cluster to DynamoDB without a dual-write phase",
]
SAFE = "Rename the staging Grafana folder to match the team name"


def record(app: Decigraph, text: str, stakes: str = "high", **fields: Any) -> str:
    result = ok(app, "recordDecision", {"decision": text, "stakes": stakes, **fields})
    node_id: str = result["id"]
    return node_id


def review(app: Decigraph, node_id: str, outcome: str) -> None:
    ok(app, "reviewDecision", {"id": node_id, "outcome": outcome, "actualResult": "see ticket"})


def action(text: str, stakes: str = "high", **extra: Any) -> dict[str, Any]:
    return {"action": {"description": text, "category": "architecture", "stakes": stakes, **extra}}


def trip_high(app: Decigraph) -> list[str]:
    """Record three high-stakes decisions, then review them as failures: ``stakes:high`` opens."""
    ids = [record(app, text) for text in RISKY[:3]]
    for node_id in ids:
        review(app, node_id, "failure")
    return ids


def rows(app: Decigraph) -> dict[str, dict[str, Any]]:
    return {row["scope"]: row for row in ok(app, "listBreakers", {})["breakers"]}


def test_the_shipped_breakers_are_listed_closed_in_cstp_shape(app: Decigraph) -> None:
    breakers = ok(app, "listBreakers", {})["breakers"]
    assert [b["scope"] for b in breakers] == ["stakes:critical", "stakes:high"]
    assert breakers[1] == {
        "scope": "stakes:high",
        "state": "closed",
        "failure_count": 0,
        "failure_threshold": 3,
        "window_ms": 86_400_000,
        "cooldown_ms": 3_600_000,
        "cooldown_remaining_ms": None,
        "from_config": True,
    }
    assert breakers[0]["failure_threshold"] == 2
    assert breakers[0]["cooldown_ms"] == 7_200_000
    assert open_breakers(app) == []


def test_failed_reviews_open_the_breaker_and_block_checks_and_records(app: Decigraph) -> None:
    ids = trip_high(app)
    row = rows(app)["stakes:high"]
    assert row["state"] == "open"
    assert row["failure_count"] == 3
    assert 0 < row["cooldown_remaining_ms"] <= 3_600_000
    assert rows(app)["stakes:critical"]["state"] == "closed"

    state = ok(app, "getCircuitState", {"scope": "stakes:high"})
    assert state["state"] == "open"
    assert (state["failureCount"], state["failureThreshold"]) == (3, 3)
    assert (state["windowMs"], state["cooldownMs"]) == (86_400_000, 3_600_000)
    assert isinstance(state["openedAt"], str)
    assert float(state["openedAt"]) > 1.7e9
    assert 0 < state["cooldownRemainingMs"] <= 3_600_000
    assert [f["decisionId"] for f in state["failures"]] == ids
    closed = ok(app, "getCircuitState", {"scope": "stakes:critical"})
    assert "openedAt" not in closed
    assert "cooldownRemainingMs" not in closed

    checked = ok(app, "checkGuardrails", action(RISKY[3]))
    assert checked["allowed"] is False
    (violation,) = checked["violations"]
    assert violation["guardrailId"] == "circuit_breaker:stakes:high"
    assert violation["name"] == "Circuit breaker (stakes:high)"
    assert violation["severity"] == "block"
    assert violation["type"] == "circuit_breaker"
    assert violation["state"] == "open"
    assert violation["failureRate"] == 1.0
    assert violation["resetAt"].endswith("Z")
    assert checked["evaluated"] == 1  # the graph guardrail; breakers are not counted (CSTP)

    # Other stakes pass; the breaker's scope is the action's stakes.
    assert ok(app, "checkGuardrails", action(SAFE, stakes="low"))["allowed"] is True
    # No stakes is CSTP's default, medium.
    assert ok(app, "checkGuardrails", {"action": {"description": SAFE}})["allowed"] is True

    pre = ok(app, "preAction", action(RISKY[3]))
    assert pre["allowed"] is False
    assert pre["blockReasons"] == [violation["message"]]
    assert pre["guardrailResults"][0]["guardrailId"] == "circuit_breaker:stakes:high"
    assert pre["decisionId"] is None

    # Recording through a tripped breaker is refused like any block rule; an override records.
    refused = error(app, "recordDecision", {"decision": RISKY[3], "stakes": "high"})
    assert refused["data"]["violations"][0]["guardrailId"] == "circuit_breaker:stakes:high"
    made = ok(
        app,
        "recordDecision",
        {
            "decision": RISKY[3],
            "stakes": "high",
            "override": {"reason": "incident INC-4411 needs the session move tonight"},
        },
    )
    assert made["guardrail_override"] is True

    (opened,) = open_breakers(app)
    assert opened.pop("cooldown_remaining_ms") > 3_500_000
    assert opened == {
        "scope": "stakes:high",
        "state": "open",
        "failure_count": 3,
        "failure_threshold": 3,
    }


def test_a_success_clears_a_closed_breaker_and_old_failures_leave_the_window(
    app: Decigraph, clock: TickingClock
) -> None:
    a, b, c, d = (record(app, text) for text in RISKY)
    review(app, a, "failure")
    review(app, b, "abandoned")  # abandoned counts as a failure (CSTP)
    review(app, c, "partial")  # partial counts as a success: the failures are cleared
    assert rows(app)["stakes:high"]["failure_count"] == 0
    review(app, d, "failure")
    assert rows(app)["stakes:high"]["failure_count"] == 1
    clock.now += 25 * HOUR  # past the 24 h window
    assert rows(app)["stakes:high"]["failure_count"] == 0
    e = record(app, SAFE + " and the prod one", stakes="high")
    f = record(app, "Retire the legacy cron host and move its jobs to Kubernetes CronJobs")
    review(app, e, "failure")
    review(app, f, "failure")
    row = rows(app)["stakes:high"]
    assert (row["state"], row["failure_count"]) == ("closed", 2)  # d fell out of the window


def test_the_cooldown_half_opens_and_one_probe_passes(tmp_path: Path, clock: TickingClock) -> None:
    with clocked_app(tmp_path / "data", clock) as app:
        probe_id = _take_the_probe(app, clock)
    # A restart keeps the derived state and re-arms the probe (it lives in memory).
    with clocked_app(tmp_path / "data", clock) as again:
        assert rows(again)["stakes:high"]["state"] == "half_open"
        assert ok(again, "checkGuardrails", action(RISKY[3]), agent="other")["allowed"] is True
        review(again, probe_id, "success")
        assert rows(again)["stakes:high"]["state"] == "closed"
        assert rows(again)["stakes:high"]["failure_count"] == 0
        assert ok(again, "checkGuardrails", action(RISKY[3]))["allowed"] is True


def _take_the_probe(app: Decigraph, clock: TickingClock) -> str:
    trip_high(app)
    probe_action = "Re-run the Aurora cutover rehearsal against the staging copy"
    clock.now += HOUR
    assert rows(app)["stakes:high"]["state"] == "half_open"
    assert rows(app)["stakes:high"]["cooldown_remaining_ms"] is None
    state = ok(app, "getCircuitState", {"scope": "stakes:high"})
    assert "openedAt" in state
    assert "cooldownRemainingMs" not in state
    assert state["probeInFlight"] is False

    assert ok(app, "checkGuardrails", action(probe_action))["allowed"] is True  # the probe
    assert ok(app, "getCircuitState", {"scope": "stakes:high"})["probeInFlight"] is True
    blocked = ok(app, "checkGuardrails", action(RISKY[3]))
    assert blocked["allowed"] is False
    assert blocked["violations"][0]["state"] == "half_open"
    assert "resetAt" not in blocked["violations"][0]
    # Another agent asking about the same statement is a second action: blocked too.
    assert ok(app, "checkGuardrails", action(probe_action), agent="other")["allowed"] is False
    # The agent that took the probe may ask again and record what it checked.
    assert ok(app, "checkGuardrails", action(probe_action))["allowed"] is True
    return record(app, probe_action)


def test_the_breaker_follows_updates_and_forgets_of_reviewed_decisions(app: Decigraph) -> None:
    ids = trip_high(app)
    assert rows(app)["stakes:high"]["state"] == "open"
    # Re-rated as medium stakes, the decision no longer counts for stakes:high.
    app.store.update(ids[0], {"stakes": "medium"}, "platform-lead")
    row = rows(app)["stakes:high"]
    assert (row["state"], row["failure_count"]) == ("closed", 2)
    app.store.forget(ids[1], "platform-lead", reason="duplicate of an older decision")
    assert rows(app)["stakes:high"]["failure_count"] == 1
    app.store.update(ids[0], {"stakes": "high"}, "platform-lead")
    state = ok(app, "getCircuitState", {"scope": "stakes:high"})
    assert [f["decisionId"] for f in state["failures"]] == [ids[0], ids[2]]


def test_a_failed_probe_reopens_the_breaker(app: Decigraph, clock: TickingClock) -> None:
    trip_high(app)
    clock.now += HOUR
    probe_id = record(app, RISKY[3])  # the first action through a half-open breaker
    review(app, probe_id, "failure")
    state = ok(app, "getCircuitState", {"scope": "stakes:high"})
    assert state["state"] == "open"
    assert state["failureCount"] == 4
    assert 3_590_000 < state["cooldownRemainingMs"] <= 3_600_000  # a new cooldown


def test_reset_closes_an_open_breaker_and_is_logged(app: Decigraph) -> None:
    closed = error(app, "resetCircuit", {"scope": "stakes:high"})
    assert closed["code"] == -32602
    assert "Can only reset OPEN breakers, current state: closed" in closed["message"]
    assert closed["data"]["field"] == "scope"
    trip_high(app)
    result = ok(app, "resetCircuit", {"scope": "stakes:high"}, agent="oncall-lead")
    assert written(result) == {
        "scope": "stakes:high",
        "previousState": "open",
        "newState": "closed",
        "message": "Circuit breaker stakes:high reset: open -> closed",
        "previous_state": "open",
        "new_state": "closed",
    }
    assert rows(app)["stakes:high"]["state"] == "closed"
    assert rows(app)["stakes:high"]["failure_count"] == 0
    with app.store.lock:
        (entry,) = ledger(app.store.graph, Operation.CIRCUIT)
    assert entry["actor"] == "oncall-lead"
    assert entry["payload"] == {
        "kind": "reset",
        "scope": "stakes:high",
        "probeFirst": False,
        "previousState": "open",
        "newState": "closed",
    }
    assert app.store.verify().ok


def test_reset_with_probe_first_half_opens(app: Decigraph) -> None:
    trip_high(app)
    result = ok(app, "resetCircuit", {"scope": "stakes:high", "probe_first": True})
    assert (result["previousState"], result["newState"]) == ("open", "half_open")
    state = ok(app, "getCircuitState", {"scope": "stakes:high"})
    assert state["state"] == "half_open"
    assert state["failureCount"] == 3  # failures and openedAt are kept (CSTP)
    assert "openedAt" in state
    assert ok(app, "checkGuardrails", action(RISKY[3]))["allowed"] is True
    assert ok(app, "checkGuardrails", action(SAFE))["allowed"] is False
    again = error(app, "resetCircuit", {"scope": "stakes:high", "probeFirst": True})
    assert "current state: half_open" in again["message"]


@pytest.mark.parametrize(
    ("method", "params", "field", "needle"),
    [
        ("getCircuitState", {}, "scope", "required"),
        ("getCircuitState", {"scope": 7}, "scope", ""),
        ("getCircuitState", {"scope": ""}, "scope", ""),
        ("getCircuitState", {"scope": "x" * 5000}, "scope", ""),
        ("getCircuitState", {"scope": "stakes:trivial"}, "scope", "No circuit breaker found"),
        ("getCircuitState", {"scope": ["stakes:high"]}, "scope", ""),
        ("resetCircuit", {}, "scope", "required"),
        ("resetCircuit", {"scope": "category:nope"}, "scope", "No circuit breaker found"),
        ("resetCircuit", {"scope": "stakes:high", "probeFirst": "yes"}, "probeFirst", ""),
        ("resetCircuit", {"scope": "stakes:high", "probeFirst": 1}, "probeFirst", ""),
        ("resetCircuit", {"scope": {"$ne": None}}, "scope", ""),
    ],
)
def test_hostile_params_are_refused_naming_the_field(
    app: Decigraph, method: str, params: dict[str, Any], field: str, needle: str
) -> None:
    err = error(app, method, params)
    assert err["code"] == -32602, err
    assert err["data"]["field"] == field, err
    assert needle in err["message"]


def test_params_that_are_not_an_object_are_refused(app: Decigraph) -> None:
    assert error(app, "listBreakers", ["stakes:high"])["code"] in (-32600, -32602)


def test_scopes_by_category_agent_and_tag(tmp_path: Path, clock: TickingClock) -> None:
    configs = (
        BreakerConfig("agent:deploy-bot", failure_threshold=2),
        BreakerConfig("category:security", failure_threshold=1),
        BreakerConfig("global", failure_threshold=10),
        BreakerConfig("tag:payments", failure_threshold=2),
    )
    with clocked_app(tmp_path / "data", clock, configs) as app:
        a = record(app, "Disable TLS 1.0 on the payments gateway", "low", tags=["payments"])
        b = record(app, "Cache card BIN lookups for 10 minutes", "low", tags=["payments"])
        c = ok(
            app,
            "recordDecision",
            {"decision": "Allow deploys on Fridays after 3pm", "category": "process"},
            agent="deploy-bot",
        )["id"]
        d = ok(
            app,
            "recordDecision",
            {"decision": "Skip canaries for config-only changes", "category": "process"},
            agent="deploy-bot",
        )["id"]
        e = record(app, "Store API keys hashed with SHA-256", "medium", category="security")
        for node_id in (a, b, c, d, e):
            review(app, node_id, "failure")
        states = {scope: row["state"] for scope, row in rows(app).items()}
        assert states == {
            "agent:deploy-bot": "open",
            "category:security": "open",
            "global": "closed",
            "tag:payments": "open",
        }
        assert rows(app)["global"]["failure_count"] == 5

        def blocked_by(act: dict[str, Any], agent: str = "platform-bot") -> list[str]:
            result = ok(app, "checkGuardrails", {"action": act}, agent=agent)
            return [v["guardrailId"] for v in result["violations"]]

        plain = {"description": "Bump the Helm chart of the docs site", "category": "process"}
        assert blocked_by(plain) == []
        assert blocked_by(plain, agent="deploy-bot") == ["circuit_breaker:agent:deploy-bot"]
        assert blocked_by({**plain, "tags": ["payments"]}) == ["circuit_breaker:tag:payments"]
        assert blocked_by({**plain, "category": "security"}) == [
            "circuit_breaker:category:security"
        ]


def test_replay_is_deterministic_and_orders_by_time() -> None:
    config = BreakerConfig(
        "stakes:high", failure_threshold=2, window_ms=3_600_000, cooldown_ms=60_000
    )
    t0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    high = Subject(stakes="high")
    events = [
        OutcomeEvent(t0 + timedelta(minutes=m), failed, f"d{m:02d}", high)
        for m, failed in [(0, True), (1, True), (3, False), (4, True), (5, True)]
    ]
    reset = ResetEvent(t0 + timedelta(seconds=90), 9, "stakes:high", probe_first=False)
    now = t0 + timedelta(minutes=5, seconds=30)
    first = replay(config, events, [reset], now)
    assert first == replay(config, list(reversed(events)), [reset], now)
    # d00, d01 open it; the reset at 1:30 closes it; d03 succeeds; d04, d05 open it again.
    assert first.state == "open"
    assert [f[1] for f in first.failures] == ["d04", "d05"]
    assert first.opened_at == t0 + timedelta(minutes=5)
    # Without the reset: open at 1 min, half open at 2 min, the success at 3 closes it.
    assert replay(config, events, [], now).opened_at == t0 + timedelta(minutes=5)
    # Events after ``now`` do not count.
    assert replay(config, events, [], t0 + timedelta(seconds=30)).failure_count == 1
    assert scope_matches("global", Subject())
    assert not scope_matches("project:x", Subject(category="project"))


def test_breakers_load_from_the_rule_files(tmp_path: Path) -> None:
    rules_dir = tmp_path / "guardrails"
    rules_dir.mkdir()
    assert load_breakers([rules_dir, tmp_path / "missing.yaml"]) == DEFAULT_BREAKERS
    (rules_dir / "circuit_breakers.yaml").write_text(
        "circuit_breakers:\n"
        "  - scope: category:security\n"
        "    failure_threshold: 2\n"
        "  - {scope: 'stakes:high', failure_threshold: 4, window_ms: 7200000, notify: false}\n"
    )
    (rules_dir / "rules.yaml").write_text(
        "- id: no-friday-deploys\n  action: warn\n  message: not on Fridays\n"
    )
    loaded = load_breakers([rules_dir])
    assert [c.scope for c in loaded] == ["category:security", "stakes:high"]
    assert loaded[0] == BreakerConfig("category:security", failure_threshold=2)
    assert loaded[1].window_ms == 7_200_000
    assert loaded[1].notify is False
    # The breaker file adds no guardrail rule (CSTP loaded it as a rule "unknown").
    assert [r.id for r in load_rules([rules_dir])] == ["no-friday-deploys"]
    (rules_dir / "circuit_breakers.yaml").write_text("circuit_breakers: []\n")
    assert load_breakers([rules_dir]) == ()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("circuit_breakers: {scope: global}\n", "must be a list"),
        ("circuit_breakers:\n  - scope: project:x\n", "field scope"),
        ("circuit_breakers:\n  - {scope: global, failure_threshold: 0}\n", "failure_threshold"),
        ("circuit_breakers:\n  - {scope: global, failure_threshold: '3'}\n", "failure_threshold"),
        ("circuit_breakers:\n  - {scope: global, windw_ms: 5}\n", "windw_ms"),
        ("circuit_breakers:\n  - {scope: global}\n  - {scope: global}\n", "defined twice"),
    ],
)
def test_bad_breaker_files_are_refused_naming_the_problem(
    tmp_path: Path, text: str, needle: str
) -> None:
    file = tmp_path / "circuit_breakers.yaml"
    file.write_text(text)
    with pytest.raises(GuardrailConfigError, match=needle) as caught:
        load_breakers([file])
    assert str(file) in str(caught.value)
