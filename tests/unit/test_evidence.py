"""The evidence chain (CSTP's F055) through the dispatcher, with fakes for the model: records
hashed exactly as CSTP hashes them, batches all or nothing, attested links checked against the
chain, control mapping per class, bundles confined to ``<data-dir>/bundles``, verification
against checkpoints, and every hostile input refused with ``-32602`` naming the field."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import stat
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from graph.events import Operation
from graph.evidence import (
    Checkpoint,
    EvidenceState,
    check_chain,
    record_hash,
    verify_at_checkpoint,
)
from graph.evidence_rules import Condition, apply_rules, load_rules
from graph.state import ledger
from service.methods import build_registry
from service.rpc.protocol import CallContext, Dispatcher
from service.usecases import Decigraph
from tests.support.fakes import fake_app
from tests.support.rpc import written

pytestmark = pytest.mark.unit

INVALID_PARAMS = -32602


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Decigraph]:
    with fake_app(tmp_path / "data", 7) as made:
        yield made


def call(app: Decigraph, method: str, params: Any, agent: str = "release-bot") -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
    answer: dict[str, Any] | None = Dispatcher(build_registry(app)).handle(
        request, CallContext(agent)
    )
    assert answer is not None
    return answer


def ok(app: Decigraph, method: str, params: Any, agent: str = "release-bot") -> dict[str, Any]:
    answer = call(app, method, params, agent)
    assert "error" not in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def refused(app: Decigraph, method: str, params: Any) -> dict[str, Any]:
    """The error of a refused call: always -32602 naming a field, and nothing written."""
    before = len(ledger(app.store.graph))
    answer = call(app, method, params)
    assert "result" not in answer, answer
    error: dict[str, Any] = answer["error"]
    assert error["code"] == INVALID_PARAMS, error
    assert error["data"]["field"], error
    assert len(ledger(app.store.graph)) == before
    return error


def cstp_hash(record: dict[str, Any]) -> str:
    """The hash as CSTP's own verifier computes it (written from its documentation)."""
    preimage = {k: record[k] for k in ("seq", "ts", "event_type", "evidence_class", "payload")}
    preimage["prev_hash"] = record["prev_hash"]
    text = json.dumps(preimage, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def records(app: Decigraph) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for entry in ledger(app.store.graph, Operation.EVIDENCE):
        out.extend(entry["payload"].get("records", []))
    return out


# A week of pull requests on a payments service: an agent's migration reviewed by a human, an
# agent's hotfix approved only by a bot and merged anyway, a human's docs change, a CI run.
WEEK: list[dict[str, Any]] = [
    {
        "event_type": "pr_opened",
        "ts": "2026-02-23T09:14:05+00:00",
        "payload": {
            "pr_number": 412,
            "title": "Add idempotency keys to the refunds table",
            "is_agent_authored": True,
            "actor_is_human": False,
        },
    },
    {
        "event_type": "pr_review_approved",
        "ts": "2026-02-23T15:40:00+00:00",
        "payload": {"pr_number": 412, "reviewer": "mkowalski", "actor_is_human": True},
    },
    {
        "event_type": "pr_merged",
        "ts": "2026-02-24T08:02:11+00:00",
        "payload": {"pr_number": 412, "is_agent_authored": True, "human_approval_count": 1},
    },
    {
        "event_type": "pr_opened",
        "ts": "2026-02-25T22:47:30+00:00",
        "payload": {
            "pr_number": 415,
            "title": "Hotfix: retry Stripe webhooks on 429",
            "is_agent_authored": True,
        },
    },
    {
        "event_type": "pr_review_approved",
        "ts": "2026-02-25T22:49:02+00:00",
        "payload": {"pr_number": 415, "reviewer": "merge-queue[bot]", "actor_is_human": False},
    },
    {
        "event_type": "pr_merged",
        "ts": "2026-02-25T22:51:40+00:00",
        "payload": {"pr_number": 415, "is_agent_authored": True, "human_approval_count": 0},
    },
    {
        "event_type": "pr_merged",
        "ts": "2026-02-26T11:00:00+00:00",
        "payload": {"pr_number": 417, "title": "Document the refund runbook (Zürich on-call)"},
    },
    {"event_type": "ci_check_passed", "payload": {"pr_number": 417, "suite": "unit", "ms": 0.5}},
]


def ingest_week(app: Decigraph) -> dict[str, Any]:
    return ok(app, "ingestEvidence", {"events": WEEK, "source": "github:acme/payments"})


# -- ingest -------------------------------------------------------------------------------------
def test_ingest_appends_one_hash_chained_batch_as_cstp_hashes_it(app: Decigraph) -> None:
    result = ingest_week(app)
    chain = records(app)
    assert written(result) == {"ingested": 8, "head_hash": chain[-1]["hash"], "first_seq": 1}
    assert len(ledger(app.store.graph, Operation.EVIDENCE)) == 1  # one log event, all records
    assert [r["seq"] for r in chain] == list(range(1, 9))
    assert chain[0]["prev_hash"] == ""
    for before, after in itertools.pairwise(chain):
        assert after["prev_hash"] == before["hash"]
    for record in chain:
        assert record["hash"] == cstp_hash(record)
        assert record["evidence_class"] == "observed"
        assert record["source"] == "github:acme/payments"
    assert chain[0]["ts"] == "2026-02-23T09:14:05+00:00"  # the caller's ts, verbatim
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", chain[-1]["ts"])


def test_batches_continue_the_chain_and_sources_default(app: Decigraph) -> None:
    first = ingest_week(app)
    second = ok(
        app,
        "ingestEvidence",
        {
            "events": [
                {"event_type": "pr_opened", "payload": {"pr_number": 420}},
                {"event_type": "deploy_finished", "source": "argo-cd", "payload": {"env": "prod"}},
            ]
        },
    )
    assert second["first_seq"] == 9
    chain = records(app)
    assert chain[8]["prev_hash"] == first["head_hash"]
    assert [chain[8]["source"], chain[9]["source"]] == ["external", "argo-cd"]
    assert second["head_hash"] == chain[-1]["hash"]


def test_hash_matches_cstp_for_non_ascii_floats_and_nested_keys() -> None:
    payload = {"z": {"b": 1e-05, "a": "Zürich — 東京"}, "a": [3.0, 1e16, None, True]}
    digest = record_hash(3, "2026-02-23T09:14:05Z", "pr_merged", "observed", payload, "ab" * 32)
    record = {
        "seq": 3,
        "ts": "2026-02-23T09:14:05Z",
        "event_type": "pr_merged",
        "evidence_class": "observed",
        "payload": payload,
        "prev_hash": "ab" * 32,
    }
    assert digest == cstp_hash(record)
    relabelled = record_hash(3, "2026-02-23T09:14:05Z", "pr_merged", "attested", payload, "ab" * 32)
    assert relabelled != digest  # the class is hashed: relabelling breaks the chain


def test_a_bad_event_anywhere_refuses_the_whole_batch(app: Decigraph) -> None:
    batch = [*WEEK[:3], {"event_type": "pr_merged", "payload": ["not", "an", "object"]}]
    error = refused(app, "ingestEvidence", {"events": batch})
    assert error["message"] == "events.3: Event payload must be a dict, got: list"
    assert records(app) == []
    assert ingest_week(app)["first_seq"] == 1


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({}, "events", "'events' must be a non-empty list"),
        ({"events": []}, "events", "'events' must be a non-empty list"),
        ({"events": "pr_opened"}, "events", "'events' must be a non-empty list"),
        ({"events": [7]}, "events.0", "Each event must be a dict"),
        ({"events": [{"payload": {}}]}, "events.0", "Each event must have 'event_type'"),
        ({"events": [{"event_type": ""}]}, "events.0", "Each event must have 'event_type'"),
        ({"events": [{"event_type": 42}]}, "events.0", "must be a string, got: int"),
        ({"events": [{"event_type": "x", "payload": "{}"}]}, "events.0", "got: str"),
        ({"events": [{"event_type": "x", "ts": 1767225600}]}, "events.0", "'ts' must be"),
        ({"events": [{"event_type": "x" * 201}]}, "events.0", "at most 200 characters"),
        ({"events": [{"event_type": "x", "payload": {"n": 2**70}}]}, "events.0", "64-bit"),
        ({"events": [{"event_type": "x", "source": ["gh"]}]}, "events.0", "must be a string"),
        ({"events": [{"event_type": "x"}], "source": 3}, "source", ""),
        ({"events": [{"event_type": "x"}], "source": "s" * 201}, "source", ""),
    ],
)
def test_hostile_ingests_are_refused_naming_the_field(
    app: Decigraph, params: dict[str, Any], field: str, message: str
) -> None:
    error = refused(app, "ingestEvidence", params)
    assert error["data"]["field"] == field
    assert message in error["message"]


# -- link ---------------------------------------------------------------------------------------
def test_link_appends_an_attested_record_for_the_agent(app: Decigraph) -> None:
    ingest_week(app)
    result = ok(
        app,
        "linkEvidence",
        {"decision_id": "9f3c2a1b", "event_seqs": [4, 5, 6], "stakes": "high"},
        agent="payments-agent",
    )
    assert written(result) == {"linked": 3, "decision_id": "9f3c2a1b", "attested_seq": 9}
    claim = records(app)[-1]
    assert claim["evidence_class"] == "attested"
    assert claim["event_type"] == "cstp_decision_linked"
    assert claim["source"] == "cstp:payments-agent"
    assert claim["payload"] == {
        "decision_id": "9f3c2a1b",
        "event_seqs": [4, 5, 6],
        "has_outcome": False,
        "stakes": "high",
    }
    assert claim["hash"] == cstp_hash(claim)
    empty = ok(app, "linkEvidence", {"decision_id": "9f3c2a1b", "event_seqs": []})
    assert written(empty) == {"linked": 0, "decision_id": "9f3c2a1b", "attested_seq": 10}


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"event_seqs": [1]}, "decision_id", "'decision_id' is required"),
        ({"decision_id": "", "event_seqs": [1]}, "decision_id", "'decision_id' is required"),
        ({"decision_id": 5}, "decision_id", ""),
        ({"decision_id": "d1", "event_seqs": "1,2"}, "event_seqs", "'event_seqs' must be a list"),
        ({"decision_id": "d1", "event_seqs": None}, "event_seqs", "'event_seqs' must be a list"),
        ({"decision_id": "d1", "event_seqs": ["1"]}, "event_seqs.0", "must be an integer"),
        ({"decision_id": "d1", "event_seqs": [True]}, "event_seqs.0", "must be an integer"),
        (
            {"decision_id": "d1", "event_seqs": [1, 2, 1]},
            "event_seqs",
            "event_seqs contains duplicate sequence number: 1",
        ),
        (
            {"decision_id": "d1", "event_seqs": [2, 99, 2**80]},
            "event_seqs",
            f"event_seqs references nonexistent sequences: [99, {2**80}]",
        ),
        (
            {"decision_id": "d1", "event_seqs": [1, 9]},
            "event_seqs",
            "event_seqs must only reference observed events; "
            "sequences with wrong evidence_class: [9]",
        ),
        ({"decision_id": "d1", "has_outcome": "true"}, "has_outcome", ""),
        ({"decision_id": "d1", "stakes": {"level": "high"}}, "stakes", ""),
    ],
)
def test_hostile_links_are_refused_naming_the_field(
    app: Decigraph, params: dict[str, Any], field: str, message: str
) -> None:
    ingest_week(app)
    ok(app, "linkEvidence", {"decision_id": "9f3c2a1b", "event_seqs": [1]})  # seq 9: attested
    error = refused(app, "linkEvidence", params)
    assert error["data"]["field"] == field
    assert message in error["message"]


# -- mapping ------------------------------------------------------------------------------------
def test_map_controls_reports_mappings_gaps_and_coverage_per_class(app: Decigraph) -> None:
    ingest_week(app)
    ok(
        app,
        "linkEvidence",
        {"decision_id": "9f3c2a1b", "event_seqs": [1, 2, 3], "has_outcome": True},
    )
    ok(app, "linkEvidence", {"decision_id": "c41d0e77", "event_seqs": [4, 6], "stakes": "critical"})
    result = ok(app, "mapControls", {})
    assert result["coverage"] == {
        "observed": {
            "total_events": 8,
            "mapped_events": 6,
            "unmapped_events": 2,
            "coverage_pct": 75.0,
        },
        "attested": {
            "total_events": 2,
            "mapped_events": 2,
            "unmapped_events": 0,
            "coverage_pct": 100.0,
        },
    }
    assert [(u["seq"], u["event_type"], u["pr_number"]) for u in result["unmapped"]] == [
        (7, "pr_merged", 417),
        (8, "ci_check_passed", 417),
    ]
    gaps = {(g["seq"], g["rule_id"]) for g in result["insufficient_evidence"]}
    assert gaps == {
        (5, "SR117-VAL-GAP-01"),  # approved by a bot
        (6, "SR117-IMP-GAP-01"),  # agent-authored, merged without a human approval
        (6, "NIST-MAP-3.5-GAP"),
        (10, "CSTP-ATT-GAP-01"),  # a critical decision with no reviewed outcome
    }
    assert result["insufficient_evidence_count"] == 4
    assert all(
        g["type"] == "INSUFFICIENT_EVIDENCE" and g["reason"]
        for g in result["insufficient_evidence"]
    )
    merged = [m for m in result["mappings"] if m["seq"] == 3]
    assert {m["rule_id"] for m in merged} == {"SR117-IMP-01", "NIST-MAP-3.5"}
    # Only the agent's word covers outcome analysis: an auditor must see it apart.
    assert result["attested_only_controls"] == ["SR11-7 VI.outcome-analysis"]
    flagged = {m["rule_id"] for m in result["mappings"] if m.get("attested_only")}
    assert flagged == {"CSTP-ATT-02"}
    stretch = next(m for m in result["mappings"] if m["rule_id"] == "NIST-GOV-1.6")
    assert stretch["stretch"] is True
    assert stretch["confidence"] == "low"
    keys = {"seq", "event_type", "pr_number", "rule_id", "framework", "stage", "function_id"}
    assert keys | {"control_name", "ts", "evidence_class", "type", "description"} <= set(merged[0])


def test_empty_chain_maps_to_zero_coverage(app: Decigraph) -> None:
    result = ok(app, "mapControls", {})
    zero = {"total_events": 0, "mapped_events": 0, "unmapped_events": 0, "coverage_pct": 0.0}
    assert result["coverage"] == {"observed": zero, "attested": zero}
    assert result["mappings"] == result["unmapped"] == result["attested_only_controls"] == []


def test_conditions_compare_numbers_only_and_take_one_operator() -> None:
    more = Condition.model_validate({"field": "human_approval_count", "gt": 0})
    assert more.holds({"human_approval_count": 2})
    assert not more.holds({"human_approval_count": "2"})  # a string is not a count
    assert not more.holds({"human_approval_count": True})
    assert not more.holds({})
    absent = Condition.model_validate({"field": "human_approval_count", "equals": None})
    assert absent.holds({})
    assert not absent.holds({"human_approval_count": 0})
    among = Condition.model_validate({"field": "stakes", "in": ["high", "critical"]})
    assert among.holds({"stakes": "critical"})
    assert not among.holds({"stakes": "low"})
    present = Condition.model_validate({"field": "pr_number"})
    assert present.holds({"pr_number": 0})
    assert not present.holds({"pr_number": None})
    with pytest.raises(ValueError, match="one operator"):
        Condition.model_validate({"field": "x", "gt": 1, "lt": 5})
    with pytest.raises(ValueError, match="needs a value"):
        Condition.model_validate({"field": "x", "gt": None})


def test_mappings_dir_is_read_only_inside_the_data_directory(app: Decigraph) -> None:
    ingest_week(app)
    custom = app.store.data_dir / "controls" / "soc2"
    custom.mkdir(parents=True)
    (custom / "soc2.yaml").write_text(
        "framework: SOC 2\nevidence_class: observed\nrules:\n"
        "  - id: CC8.1-merge\n    function_id: CC8.1\n"
        "    control_name: Changes are authorized before deployment\n"
        "    match:\n      event_type: pr_merged\n      conditions:\n"
        "        - field: human_approval_count\n          gt: 0\n",
        encoding="utf-8",
    )
    result = ok(app, "mapControls", {"mappings_dir": "soc2"})
    assert [(m["seq"], m["rule_id"]) for m in result["mappings"]] == [(3, "CC8.1-merge")]
    absolute = ok(app, "mapControls", {"mappings_dir": str(custom)})
    assert absolute["mappings"] == result["mappings"]
    for hostile in ("/etc", "../", "soc2/../../..", str(app.store.data_dir)):
        error = refused(app, "mapControls", {"mappings_dir": hostile})
        assert error["data"]["field"] == "mappings_dir"
    (custom / "broken.yaml").write_text("framework: X\nrules:\n  - id: 1\n", encoding="utf-8")
    error = refused(app, "mapControls", {"mappings_dir": "soc2"})
    assert "broken.yaml" in error["message"]
    assert (
        refused(app, "mapControls", {"mappings_dir": "missing"})["data"]["field"] == "mappings_dir"
    )


# -- export -------------------------------------------------------------------------------------
def test_export_writes_a_private_bundle_and_trusts_the_head(app: Decigraph) -> None:
    week = ingest_week(app)
    result = ok(app, "exportEvidenceBundle", {"format": "JSON"})
    path = Path(result["json_path"])
    assert path.parent == app.store.data_dir / "bundles"
    assert re.fullmatch(r"bundle_\d{8}T\d{6}_\d{6}_[0-9a-f]{8}Z\.json", path.name)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert result["chain_head_hash"] == week["head_hash"]
    assert result["chain_intact"] is True
    assert result["insufficient_evidence_count"] == 3
    assert set(result) == {
        "seq",
        "chain_head_hash",
        "chain_intact",
        "coverage",
        "insufficient_evidence_count",
        "attested_only_controls",
        "json_path",
    }
    bundle = json.loads(path.read_text(encoding="utf-8"))
    assert bundle["version"] == "1.0"
    assert bundle["tool_version"] == "cstp-f055"
    assert bundle["total_events"] == 8
    assert bundle["coverage"] == result["coverage"]
    assert list(bundle["events"][0]) == [
        "seq", "ts", "source", "event_type", "evidence_class", "prev_hash", "hash", "payload"
    ]  # fmt: skip
    assert all(event["hash"] == cstp_hash(event) for event in bundle["events"])
    assert "Zürich" in path.read_text(encoding="utf-8")  # non-ASCII written raw
    checkpoint = ledger(app.store.graph, Operation.EVIDENCE)[-1]["payload"]
    assert checkpoint["kind"] == "checkpoint"
    assert (checkpoint["head_seq"], checkpoint["head_hash"]) == (8, week["head_hash"])


def test_output_dir_stays_under_bundles(app: Decigraph, tmp_path: Path) -> None:
    ingest_week(app)
    root = app.store.data_dir / "bundles"
    assert (
        Path(ok(app, "exportEvidenceBundle", {"output_dir": "bundles"})["json_path"]).parent == root
    )
    nested = ok(app, "exportEvidenceBundle", {"output_dir": "2026-q1/payments"})["json_path"]
    assert Path(nested).parent == root / "2026-q1" / "payments"
    (root / "escape").symlink_to(tmp_path)
    for hostile in ("/tmp/loot", "../events", "a/../../b", "escape", "C:\\bundles", "..\\x"):
        error = refused(app, "exportEvidenceBundle", {"output_dir": hostile})
        assert error["data"]["field"] == "output_dir"
    assert not list(tmp_path.glob("bundle_*"))


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        (
            {"format": "xml"},
            "format",
            "Unsupported bundle format: 'xml'. Must be 'json', 'pdf', or 'both'.",
        ),
        ({"format": "PDF"}, "format", "'pdf' needs a PDF renderer"),
        ({"format": "both"}, "format", "'both' needs a PDF renderer"),
        ({"format": 1}, "format", ""),
        ({"output_dir": ["bundles"]}, "output_dir", ""),
        ({"output_dir": "x" * 1001}, "output_dir", ""),
        ({"mappings_dir": "/etc"}, "mappings_dir", "controls"),
    ],
)
def test_hostile_exports_are_refused_before_anything_is_written(
    app: Decigraph, params: dict[str, Any], field: str, message: str
) -> None:
    error = refused(app, "exportEvidenceBundle", params)
    assert error["data"]["field"] == field
    assert message in error["message"]
    assert not (app.store.data_dir / "bundles").exists()


# -- verify -------------------------------------------------------------------------------------
def test_verify_an_empty_chain(app: Decigraph) -> None:
    assert ok(app, "verifyEvidenceChain", {}) == {
        "intact": True,
        "broken_at_seq": None,
        "head_hash": None,
        "expected_hash": None,
        "tail_check": False,
        "log_intact": True,
    }


def test_verify_uses_the_callers_hash_then_the_checkpoint(app: Decigraph) -> None:
    week = ingest_week(app)
    internal = ok(app, "verifyEvidenceChain", {})
    assert (internal["intact"], internal["tail_check"], internal["expected_hash"]) == (
        True,
        False,
        None,
    )
    ok(app, "exportEvidenceBundle", {})
    ok(app, "linkEvidence", {"decision_id": "9f3c2a1b", "event_seqs": [3]})  # growth is allowed
    trusted = ok(app, "verifyEvidenceChain", {})
    assert trusted["intact"] is True
    assert trusted["tail_check"] is True
    assert trusted["expected_hash"] == week["head_hash"]
    assert trusted["head_hash"] == records(app)[-1]["hash"]
    assert trusted["log_intact"] is True
    earlier = records(app)[2]["hash"]
    assert ok(app, "verifyEvidenceChain", {"expected_head_hash": earlier})["intact"] is True
    unknown = ok(app, "verifyEvidenceChain", {"expected_head_hash": "0" * 64})
    assert (unknown["intact"], unknown["broken_at_seq"], unknown["tail_check"]) == (False, 0, True)
    assert refused(app, "verifyEvidenceChain", {"expected_head_hash": 5})["data"]["field"] == (
        "expected_head_hash"
    )


def test_a_tampered_record_is_found_and_never_trusted(app: Decigraph) -> None:
    ingest_week(app)
    ok(app, "exportEvidenceBundle", {})
    checkpoints = len(ledger(app.store.graph, Operation.EVIDENCE))
    # Rewrite history in memory: PR 415 "had" a human approval.
    records(app)[5]["payload"]["human_approval_count"] = 1
    result = ok(app, "verifyEvidenceChain", {})
    assert (result["intact"], result["broken_at_seq"]) == (False, 6)
    assert result["log_intact"] is False  # decigraph's own log disagrees with the graph too
    export = ok(app, "exportEvidenceBundle", {})
    assert export["chain_intact"] is False
    assert len(ledger(app.store.graph, Operation.EVIDENCE)) == checkpoints  # nothing trusted


def test_a_cut_tail_and_a_relabelled_record_break_the_chain(app: Decigraph) -> None:
    ingest_week(app)
    chain = records(app)
    head = Checkpoint("2026-03-01T09:00:00Z", 8, chain[-1]["hash"], "json")
    assert check_chain(EvidenceState(tuple(chain), (head,))).intact
    cut = check_chain(EvidenceState(tuple(chain[:6]), (head,)))
    assert (cut.intact, cut.broken_at_seq, cut.tail_check) == (False, 0, True)
    relabelled = [dict(r) for r in chain]
    relabelled[2]["evidence_class"] = "attested"
    assert verify_at_checkpoint(relabelled, 8, chain[-1]["hash"]) == 3
    mangled = [dict(r) for r in chain]
    mangled[4] = {"seq": "five"}
    assert check_chain(EvidenceState(tuple(mangled))).broken_at_seq == 5


def test_the_chain_survives_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with fake_app(data, 7) as first:
        week = ingest_week(first)
        ok(
            first,
            "linkEvidence",
            {"decision_id": "9f3c2a1b", "event_seqs": [1], "has_outcome": True},
        )
        ok(first, "exportEvidenceBundle", {})
        mapped = ok(first, "mapControls", {})
    with fake_app(data, 7) as second:
        result = ok(second, "verifyEvidenceChain", {})
        assert result["intact"] is True
        assert result["log_intact"] is True
        assert result["expected_hash"] == records(second)[-1]["hash"]
        assert ok(second, "mapControls", {}) == mapped
        more = ok(second, "ingestEvidence", {"events": [{"event_type": "pr_opened"}]})
        assert more["first_seq"] == 10
        assert records(second)[0]["hash"] == records(second)[1]["prev_hash"]
        assert week["head_hash"] == records(second)[7]["hash"]


def test_shipped_rules_load_and_cover_both_classes() -> None:
    rules = load_rules()
    assert {r.framework for r in rules} == {"SR 11-7", "NIST AI RMF", "CSTP Attested"}
    assert {r.evidence_class for r in rules if r.framework == "CSTP Attested"} == {"attested"}
    assert len({r.id for r in rules}) == len(rules)
    assert apply_rules([], rules).to_dict()["insufficient_evidence_count"] == 0


def test_concurrent_batches_never_fork_the_chain(app: Decigraph) -> None:
    def push(worker: int) -> None:
        batch = [
            {"event_type": "pr_opened", "payload": {"pr_number": worker * 100 + n}}
            for n in range(5)
        ]
        ok(app, "ingestEvidence", {"events": batch, "source": f"runner-{worker}"})

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(push, range(8)))
    chain = records(app)
    assert [r["seq"] for r in chain] == list(range(1, 41))
    assert ok(app, "verifyEvidenceChain", {})["intact"] is True


def test_exporting_an_empty_chain_trusts_nothing(app: Decigraph) -> None:
    result = ok(app, "exportEvidenceBundle", {})
    assert (result["chain_head_hash"], result["chain_intact"]) == (None, True)
    assert Path(result["json_path"]).is_file()
    assert ledger(app.store.graph, Operation.EVIDENCE) == []
