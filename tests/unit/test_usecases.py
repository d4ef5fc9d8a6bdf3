"""The application layer with fakes: one gate for check, preAction and every write that can
create a contradiction; gate and append in one critical section."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph.enums import EdgeType
from graph.model import Node
from retrieval.contradiction.llm import LLMVerdict
from service import usecases
from service.methods.decisions import RecordParams, UpdateParams
from service.methods.guardrails import ActionParams
from service.usecases import Decigraph, graphs
from service.usecases.inputs import LinkDecisions
from service.usecases.rules import GuardrailBlockedError, load_rules
from tests.support.fakes import FakePairJudge, fake_app

RULES = """
- id: no-mongodb
  description: MongoDB is not allowed for new services
  conditions: [{field: decision, op: matches, value: "(?i)mongodb"}]
  action: block
  message: "MongoDB is not allowed"
"""
POSTGRES = "Use PostgreSQL as the primary datastore for the payments ledger"
MYSQL = "Use MySQL as the primary datastore for the payments ledger"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    with fake_app(tmp_path / "data", 7) as made:
        made.rules = load_rules([rules])
        judge(made).set(POSTGRES, MYSQL, 0.99)
        judge(made).set("Retire PostgreSQL for the payments ledger", MYSQL, 0.99)
        yield made


def judge(app: Decigraph) -> FakePairJudge:
    assert isinstance(app.pair_judge, FakePairJudge)
    return app.pair_judge


def record(app: Decigraph, text: str, **fields: object) -> str:
    params = RecordParams.model_validate({"decision": text, **fields})
    return usecases.record_decision(app, params, "agent").node.id


def salient_postgres(app: Decigraph) -> str:
    """PostgreSQL that four decisions depend on: the most salient decision in the store."""
    return make_salient(app, record(app, POSTGRES, category="architecture"))


def make_salient(app: Decigraph, node_id: str) -> str:
    """Four decisions depend on ``node_id``: the most salient decision in the store."""
    for name in ("ledger service", "billing jobs", "refund worker", "audit export"):
        dependent = record(app, f"The {name} stores its rows in the primary datastore")
        link = LinkDecisions(source=dependent, target=node_id, type=EdgeType.DEPENDS_ON)
        usecases.link(app, link, "agent")
    return node_id


def verdicts(app: Decigraph, text: str, **fields: object) -> tuple[bool, bool, bool]:
    """(checkGuardrails, preAction, recordDecision) allowed? for the same statement."""
    action = ActionParams.model_validate({"description": text, **fields})
    checked = usecases.check(app, action).allowed
    pre = usecases.pre_action(app, action, "agent", query_limit=0).verdict.allowed
    try:
        record(app, text, **fields)
        recorded = True
    except GuardrailBlockedError:
        recorded = False
    return checked, pre, recorded


def test_a_rule_on_the_decision_field_gives_one_verdict_everywhere(app: Decigraph) -> None:
    assert verdicts(app, "Use MongoDB for the catalogue service") == (False, False, False)
    assert verdicts(app, "Use PostgreSQL for the catalogue service") == (True, True, True)
    # `decision` and `description` name the statement alike, whichever the caller sent.
    action = ActionParams.model_validate({"decision": "Store carts in MongoDB"})
    assert usecases.check(app, action).violations[0].guardrail_id == "no-mongodb"


def test_the_graph_constraint_gives_one_verdict_everywhere(app: Decigraph) -> None:
    salient_postgres(app)
    assert verdicts(app, MYSQL, category="architecture") == (False, False, False)


def test_an_update_of_the_statement_is_gated_like_a_record(app: Decigraph) -> None:
    pg = salient_postgres(app)
    other = record(app, "Run the nightly report at 02:00 UTC", category="architecture")
    before = app.store.seq
    update = UpdateParams.model_validate({"id": other, "updates": {"decision": MYSQL}})
    with pytest.raises(GuardrailBlockedError, match=pg):
        usecases.update_decision(app, update, "agent")
    assert app.store.seq == before  # nothing written
    forced = UpdateParams.model_validate(
        {"id": other, "updates": {"decision": MYSQL}, "override": {"reason": "agreed in ADR-7"}}
    )
    made = usecases.update_decision(app, forced, "agent")
    assert made.overridden
    assert made.node.text == MYSQL
    rule = UpdateParams.model_validate(
        {"id": other, "updates": {"decision": "Keep the ledger in MongoDB"}}
    )
    with pytest.raises(GuardrailBlockedError, match="MongoDB is not allowed"):
        usecases.update_decision(app, rule, "agent")


def test_an_update_of_other_fields_is_not_gated(app: Decigraph) -> None:
    salient_postgres(app)
    mysql = record(app, MYSQL, category="architecture", override={"reason": "legacy"})
    update = UpdateParams.model_validate({"id": mysql, "updates": {"confidence": 0.4}})
    assert usecases.update_decision(app, update, "agent").verdict is None


def test_superseding_what_it_contradicts_passes_in_one_call(app: Decigraph) -> None:
    pg = salient_postgres(app)
    made = usecases.record_decision(
        app,
        RecordParams.model_validate(
            {"decision": MYSQL, "category": "architecture", "supersedes": [pg]}
        ),
        "agent",
    )
    assert made.verdict.allowed
    assert app.store.graph.has_edge(made.node.id, pg, EdgeType.SUPERSEDES.value)


def test_pre_action_auto_record_keeps_links_and_override(app: Decigraph) -> None:
    pg = salient_postgres(app)
    action = ActionParams.model_validate(
        {
            "description": MYSQL,
            "category": "architecture",
            "contradicts": [pg],
            "override": {"reason": "migration approved in ADR-9"},
            "tags": ["storage"],
        }
    )
    result = usecases.pre_action(app, action, "agent", auto_record=True)
    assert result.recorded is not None
    assert result.recorded.overridden
    node = result.recorded.node
    assert node.tags == ["storage"]
    assert app.store.graph.has_edge(node.id, pg, EdgeType.CONTRADICTS.value)
    blocked = usecases.pre_action(
        app,
        ActionParams.model_validate({"description": MYSQL, "category": "architecture"}),
        "agent",
        auto_record=True,
    )
    assert blocked.recorded is None
    assert not blocked.verdict.allowed


def test_record_embeds_once_per_call(app: Decigraph) -> None:
    embedder = app.index.embedder
    calls = embedder.calls  # type: ignore[attr-defined]
    record(app, "Use Kafka for payment events", context="Ordering per key matters")
    assert embedder.calls == calls + 1  # type: ignore[attr-defined]


def test_no_write_gets_between_the_gate_and_the_append(app: Decigraph) -> None:
    """The race: a second writer tries to get in after the first was judged."""
    pg = salient_postgres(app)
    other_done = threading.Event()
    seen: list[bool] = []
    second: list[str] = []

    def second_writer() -> None:
        second.append(record(app, "Retire PostgreSQL for the payments ledger", supersedes=[pg]))
        other_done.set()

    def between() -> None:
        app.on_gated = None
        thread = threading.Thread(target=second_writer)
        thread.start()
        seen.append(other_done.wait(0.5))  # blocked on the store lock until we append

    app.on_gated = between
    with pytest.raises(GuardrailBlockedError):
        # Blocked: judged on the graph as it is; the hook runs only after a verdict passes.
        record(app, MYSQL, category="architecture")
    assert seen == []
    app.on_gated = between
    first = record(app, "Add a read replica for reporting queries")
    assert seen == [False]  # the second writer could not write in between
    assert other_done.wait(10)
    nodes = app.store.graph.nodes
    assert nodes[first]["created_at"] < nodes[second[0]]["created_at"]  # it landed after


def test_the_store_keeps_exactly_what_the_edge_validated(app: Decigraph) -> None:
    """Validated once at the edge, not again on the way in; replay still checks everything."""
    params = RecordParams.model_validate(
        {
            "decision": "  Use Kafka for payment events  ",
            "tags": [" payments ", "payments", ""],
            "reasons": [{"type": "analysis", "text": "ordering per key", "strength": 0.9}],
            "reviewIn": "2w",
        }
    )
    node = usecases.record_decision(app, params, "agent").node
    stored = Node.from_attrs(node.id, dict(app.store.graph.nodes[node.id]))
    assert stored == node
    assert node.text == "Use Kafka for payment events"
    assert node.tags == ["payments"]
    assert node.review_by is not None
    assert app.store.verify().problems == []


def test_an_update_embeds_once_and_never_under_the_lock(app: Decigraph) -> None:
    node_id = record(app, "Use Kafka for payment events", context="Ordering per key matters")
    embedder = app.index.embedder
    calls = embedder.calls  # type: ignore[attr-defined]
    original = embedder.embed
    locked: list[bool] = []

    def watching(texts: list[str]) -> object:
        # RLock has no public "held by me"; a non-blocking acquire from another thread tells.
        probe: list[bool] = []

        def try_lock() -> None:
            got = app.store.lock.acquire(blocking=False)
            probe.append(got)
            if got:
                app.store.lock.release()

        thread = threading.Thread(target=try_lock)
        thread.start()
        thread.join()
        locked.append(not probe[0])
        return original(texts)

    embedder.embed = watching  # type: ignore[method-assign]
    update = UpdateParams.model_validate(
        {"id": node_id, "updates": {"decision": "Use Kafka for all payment events"}}
    )
    usecases.update_decision(app, update, "agent")
    context = UpdateParams.model_validate(
        {"id": node_id, "updates": {"context": "Replays must be possible for 7 days"}}
    )
    usecases.update_decision(app, context, "agent")
    assert embedder.calls == calls + 2  # type: ignore[attr-defined]
    assert locked == [False, False]
    assert app.index.check_consistency() == []


def test_pre_action_embeds_once_for_the_query_the_gate_and_the_record(app: Decigraph) -> None:
    embedder = app.index.embedder
    action = ActionParams.model_validate(
        {"description": "Use Kafka for payment events", "context": "Ordering per key matters"}
    )
    for auto_record in (False, True):
        calls = embedder.calls  # type: ignore[attr-defined]
        usecases.pre_action(app, action, "agent", query_limit=5, auto_record=auto_record)
        assert embedder.calls == calls + 1  # type: ignore[attr-defined]


LONG_CONTEXT = " ".join(
    [
        "The ledger needs serialisable transactions for double-entry postings.",
        "We benchmarked three engines on a copy of last quarter's traffic.",
        "Logical replication feeds the reporting warehouse every five minutes.",
        "The team has run this engine in production for six years.",
        "Point-in-time recovery must cover at least thirty days.",
        "Row-level security keeps each merchant's entries apart.",
        "Connection pooling goes through a sidecar in each pod.",
        "Schema migrations run in the deploy pipeline, never by hand.",
        "Backups are encrypted and copied to a second region nightly.",
        "Auditors asked for immutable history of every balance change.",
    ]
    * 3
)


@pytest.mark.parametrize("context", ["", "Chosen at the Q2 architecture review.", LONG_CONTEXT])
def test_a_long_context_does_not_hide_a_contradiction(app: Decigraph, context: str) -> None:
    """The stored decision's context (here up to 30 sentences) never reaches the judge: it
    reads the two statements, and the statement's words still find the decision."""
    statement = "Use PostgreSQL 16 as the primary datastore for the payments ledger"
    judge(app).set(statement, MYSQL, 0.99)
    pg = make_salient(app, record(app, statement, context=context or None))
    assert verdicts(app, MYSQL, context="Our DBAs know it best.") == (False, False, False)
    assert (statement, MYSQL) in judge(app).asked
    assert all(context not in a for a, _ in judge(app).asked if context)
    (conflict,) = usecases.check(app, ActionParams.model_validate({"description": MYSQL})).conflicts
    assert (conflict.target, conflict.tier) == (pg, "block")


def test_tiers_block_only_what_others_rely_on(app: Decigraph) -> None:
    pg = salient_postgres(app)
    alone = record(app, "Use Redis for the rate limiter")
    judge(app).set("Use Redis for the rate limiter", "Use Memcached for the rate limiter", 0.99)
    judge(app).set(POSTGRES, "Use CockroachDB for the payments ledger", 0.7)
    judge(app).set(POSTGRES, "Use PostgreSQL 16 for the payments ledger", 0.3)

    def tiers(text: str) -> list[tuple[str, str]]:
        checked = usecases.check(app, ActionParams.model_validate({"description": text}))
        return [(c.target, c.tier) for c in checked.conflicts]

    assert tiers(MYSQL) == [(pg, "block")]
    assert tiers("Use Memcached for the rate limiter") == [(alone, "review")]  # nothing relies
    assert tiers("Use CockroachDB for the payments ledger") == [(pg, "review")]  # unsure
    assert tiers("Use PostgreSQL 16 for the payments ledger") == []


def test_a_review_is_written_and_kept_as_a_suspected_contradiction(app: Decigraph) -> None:
    alone = record(app, "Use Redis for the rate limiter")
    judge(app).set("Use Redis for the rate limiter", "Use Memcached for the rate limiter", 0.99)
    params = RecordParams.model_validate({"decision": "Use Memcached for the rate limiter"})
    made = usecases.record_decision(app, params, "agent")
    assert made.verdict.allowed
    assert [w.severity for w in made.verdict.warnings] == ["warn"]
    attrs = app.store.graph.get_edge_data(made.node.id, alone, key="contradicts")
    assert attrs is not None
    assert attrs["meta"]["signal"] == "suspected"
    found, _ = graphs.contradictions(app, False, 100)
    assert [(c.a, c.b, c.edge.signal) for c in found] == [
        (min(made.node.id, alone), max(made.node.id, alone), "suspected")
    ]
    # Declared compatible afterwards: the suspected edge goes, and it is never raised again.
    update = UpdateParams.model_validate({"id": made.node.id, "compatibleWith": [alone]})
    usecases.update_decision(app, update, "agent")
    assert not app.store.graph.has_edge(made.node.id, alone, "contradicts")
    assert graphs.contradictions(app, False, 100)[0] == []
    again = ActionParams.model_validate({"description": "Use Memcached for the rate limiter"})
    assert usecases.check(app, again).conflicts == []


def test_each_resolution_passes_a_block_in_one_call(app: Decigraph) -> None:
    pg = salient_postgres(app)
    with pytest.raises(GuardrailBlockedError) as blocked:
        record(app, MYSQL, category="architecture")
    suggestion = blocked.value.verdict.violations[0].suggestion or ""
    assert all(word in suggestion for word in ("supersedes", "compatibleWith", "override"))
    compatible = record(app, MYSQL, compatibleWith=[pg])
    attrs = app.store.graph.get_edge_data(compatible, pg, key="relates_to")
    assert attrs is not None
    assert attrs["meta"] == {"signal": "compatible"}
    assert not app.store.graph.has_edge(compatible, pg, "contradicts")
    mariadb = "Use MariaDB as the primary datastore for the payments ledger"
    judge(app).set(POSTGRES, mariadb, 0.99)
    overridden = usecases.record_decision(
        app,
        RecordParams.model_validate({"decision": mariadb, "override": {"reason": "ADR-12"}}),
        "agent",
    )
    assert overridden.overridden
    edge = app.store.graph.get_edge_data(overridden.node.id, pg, key="contradicts")
    assert edge is not None
    assert edge["meta"]["tier"] == "block"  # kept as a suspected contradiction
    # Linking the pair confirms it.
    usecases.link(
        app,
        LinkDecisions(source=overridden.node.id, target=pg, type=EdgeType.CONTRADICTS),
        "agent",
    )
    edge = app.store.graph.get_edge_data(overridden.node.id, pg, key="contradicts")
    assert edge is not None
    assert edge["meta"] == {}
    # The same statement, declared compatible once, is not raised again.
    assert usecases.check(app, ActionParams.model_validate({"description": MYSQL})).allowed
    superseding = record(app, mariadb, supersedes=[pg])
    assert app.store.graph.has_edge(superseding, pg, "supersedes")


class FakeLLM:
    """A second-opinion judge answering from a table (the real client is tested against a
    local HTTP server in tests/integration/test_llm_judge.py)."""

    version = "llm:fake"

    def __init__(self, answers: dict[str, str | None]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str]] = []

    def verdicts(self, pairs: list[tuple[str, str]]) -> list[LLMVerdict | None]:
        self.asked.extend(pairs)
        out: list[LLMVerdict | None] = []
        for earlier, _ in pairs:
            label = self.answers.get(earlier)
            out.append(None if label is None else LLMVerdict(label, "fake"))  # type: ignore[arg-type]
        return out


def test_the_llm_is_asked_about_review_pairs_only_and_its_verdict_applies(app: Decigraph) -> None:
    pg = salient_postgres(app)
    cache = record(app, "Cache product pages in Redis")
    queue = record(app, "Queue emails with Celery")
    judge(app).set(POSTGRES, "Use CockroachDB for the payments ledger", 0.99)  # block: not asked
    judge(app).set("Cache product pages in Redis", "Cache product pages in Varnish", 0.7)
    judge(app).set("Queue emails with Celery", "Queue emails with RQ", 0.7)
    llm = FakeLLM({"Cache product pages in Redis": "compatible", POSTGRES: "compatible"})
    app.llm_judge = llm  # type: ignore[assignment]

    def tiers(text: str) -> list[tuple[str, str]]:
        checked = usecases.check(app, ActionParams.model_validate({"description": text}))
        return [(c.target, c.tier) for c in checked.conflicts]

    assert tiers("Use CockroachDB for the payments ledger") == [(pg, "block")]
    assert llm.asked == []  # a block is the local judge's call
    assert tiers("Cache product pages in Varnish") == []  # the LLM reads them as compatible
    assert llm.asked == [("Cache product pages in Redis", "Cache product pages in Varnish")]
    assert tiers("Queue emails with RQ") == [(queue, "review")]  # no answer: the local verdict
    del cache
