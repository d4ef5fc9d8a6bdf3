"""The contract with CSTP's clients, as a table: every request shape a shipped client sends
(the CLI ``scripts/cstp.py``, the dashboard ``dashboard/cstp_client.py``) or that the server's
documentation gives for a method no client calls, and every response field that client reads.

Taken from the wire reference (``shared/reference/cstp-wire-reference.md`` sections 4 and 9).
``tests/contract/test_contract.py`` sends each row to a real server and checks the fields.

Field paths: ``a.b`` (a key under a key), ``a[].b`` (``a`` is a non-empty list whose every item
has ``b``), ``a[]?.b`` (the same, but the list may be empty), ``a|b`` (either spelling),
a suffix ``:number``, ``:string``, ``:bool``, ``:list``, ``:object`` checks the type, ``=v``
the value (as JSON text), ``?`` at the end means "may be absent or null".
Placeholders in params: ``$ID`` (a reviewed decision), ``$PENDING`` (a pending one), ``$OTHER``
(a third decision), ``$SCOPE`` (an open breaker), ``$SEQ`` (an ingested evidence seq), ``$TODAY``
and ``$WEEK_AGO`` (UTC timestamps as the dashboard sends them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Row:
    client: str
    method: str
    params: dict[str, Any]
    reads: list[str] = field(default_factory=list)
    note: str = ""


SUMMARY = [
    "decisions[].id:string",
    "decisions[].title:string",
    "decisions[].category",
    "decisions[].stakes",
    "decisions[].confidence",
    "decisions[].distance:number",
]
ROW_FIELDS = [  # the dashboard's Decision model, on getDecision/listDecisions items
    "id:string",
    "summary|decision:string",
    "category",
    "stakes",
    "confidence",
    "created_at|date:string",
    "reviewed_at?",
    "context?",
    "reasons:list",
    "outcome?",
    "actual_result?",
    "lessons?",
    "tags:list",
    "pattern?",
    "agent_id|recorded_by:string",
    "project_context?",
    "quality?",
    "deliberation?",
    "bridge?",
]
CALIBRATION_OVERALL_CLI = [
    "overall.total_decisions:number",
    "overall.reviewed_decisions:number",
    "overall.accuracy:number",
    "overall.brier_score:number",
    "overall.interpretation:string",
    "recommendations[]?.message:string",
]
CALIBRATION_DASHBOARD = [
    "overall.totalDecisions|total_decisions:number",
    "overall.reviewedDecisions|reviewed_decisions:number",
    "overall.brierScore|brier_score:number",
    "overall.accuracy:number",
    "overall.interpretation:string",
    "recommendations[]?.message:string",
    "confidenceStats.mean:number",
    "confidenceStats.stdDev:number",
    "confidenceStats.min:number",
    "confidenceStats.max:number",
    "confidenceStats.count:number",
    "confidenceStats.bucketCounts:object",
    "byConfidenceBucket[]?.bucket:string",
    "byConfidenceBucket[]?.decisions:number",
    "byConfidenceBucket[]?.successRate:number",
    "byConfidenceBucket[]?.expectedRate:number",
    "byConfidenceBucket[]?.gap:number",
    "byConfidenceBucket[]?.interpretation:string",
    "by_category:list",
]

CLI = [
    Row(
        "cli",
        "cstp.queryDecisions",
        {
            "query": "primary database for the billing service",
            "limit": 5,
            "retrievalMode": "hybrid",
            "filters": {"category": "architecture", "project": "billing"},
        },
        ["total:number", *SUMMARY],
        "query --category architecture --project billing",
    ),
    Row(
        "cli",
        "cstp.queryDecisions",
        {"query": "PostgreSQL", "limit": 5, "retrievalMode": "keyword"},
        ["total:number", *SUMMARY],
        "query --mode keyword: CSTP's keyword mode sent distance null, which crashed the CLI",
    ),
    Row(
        "cli",
        "cstp.queryDecisions",
        {
            "query": "keep invoices consistent",
            "limit": 5,
            "retrievalMode": "semantic",
            "bridgeSide": "function",
        },
        ["total:number", *SUMMARY, "decisions[].bridge.function:string"],
        "query --bridge-side function",
    ),
    Row(
        "cli",
        "cstp.listGuardrails",
        {},
        [
            "guardrails[].id:string",
            "guardrails[].action:string",
            "guardrails[].description",
            "guardrails[].scope:list",
            "guardrails[]?.conditions:list",
        ],
    ),
    Row("cli", "cstp.listGuardrails", {"scope": "billing"}, ["guardrails:list", "count:number"]),
    Row(
        "cli",
        "cstp.checkGuardrails",
        {
            "action": {
                "description": "Deploy the billing service on Friday afternoon",
                "category": "process",
                "stakes": "medium",
                "confidence": 0.8,
            }
        },
        [
            "allowed:bool",
            "violations[]?.name:string",
            "violations[]?.message:string",
            "warnings[]?.name:string",
            "warnings[]?.message:string",
        ],
    ),
    Row(
        "cli",
        "cstp.recordDecision",
        {
            "decision": "Run invoice generation as an idempotent nightly batch job",
            "confidence": 0.85,
            "category": "architecture",
            "stakes": "high",
            "context": "Invoices were duplicated twice last quarter when the cron job retried.",
            "project_context": {"project": "billing", "pr": 412},
            "reasons": [
                {"type": "empirical", "text": "Two duplicate-invoice incidents", "strength": 0.9},
                {"type": "analysis", "text": "Idempotency keys make retries safe"},
            ],
            "bridge": {
                "structure": "A batch job keyed by invoice period",
                "function": "Bill every customer exactly once",
                "tolerance": ["a delay of up to one hour"],
                "enforcement": ["unique index on (customer, period)"],
                "prevention": ["no ad-hoc invoice runs"],
            },
        },
        [
            "id:string",
            "indexed:bool",
            "deliberation_auto:bool",
            "deliberation_inputs_count:number",
            "bridge_auto:bool",
            "related_count:number",
        ],
        "record --project billing --pr 412 -r ... --structure ... --tolerance ...",
    ),
    Row(
        "cli",
        "cstp.getDecision",
        {"id": "$ID"},
        [
            "found=true",
            "decision.id:string",
            "decision.decision|summary:string",
            "decision.category",
            "decision.stakes",
            "decision.confidence",
            "decision.date:string",
            "decision.context?",
            "decision.reasons[].type:string",
            "decision.reasons[].text:string",
            "decision.bridge.structure?",
            "decision.bridge.function?",
            "decision.related_to?",
            "decision.deliberation?",
            "decision.outcome:string",
        ],
    ),
    Row(
        "cli",
        "cstp.reviewDecision",
        {
            "decision_id": "$OTHER",
            "outcome": "partial",
            "actual_result": "Worked, but the first run took 40 minutes",
            "lessons": "Partition the batch by region",
        },
        ["success=true"],
        "review sends decision_id, which CSTP refuses",
    ),
    Row(
        "cli",
        "cstp.getCalibration",
        {"project": "billing"},
        CALIBRATION_OVERALL_CLI,
        "calibration --project: CSTP ignores the project and sends camelCase only",
    ),
    Row(
        "cli",
        "cstp.getReasonStats",
        {"minReviewed": 3, "filters": {"category": "architecture"}},
        [
            "totalDecisions:number",
            "reviewedDecisions:number",
            "byReasonType[].reasonType:string",
            "byReasonType[].totalUses:number",
            "byReasonType[].reviewedUses:number",
            "byReasonType[].successRate:number",
            "byReasonType[].avgConfidence:number",
            "byReasonType[].brierScore?",
            "diversity.avgTypesPerDecision:number",
            "diversity.avgReasonsPerDecision:number",
            "diversity.diversityBuckets[].distinctReasonTypes:number",
            "diversity.diversityBuckets[].totalDecisions:number",
            "diversity.diversityBuckets[].reviewedDecisions:number",
            "diversity.diversityBuckets[].successRate?",
            "diversity.diversityBuckets[].brierScore?",
            "recommendations[]?.severity:string",
            "recommendations[]?.message:string",
        ],
    ),
]

DASHBOARD = [
    Row("dashboard", "cstp.getCalibration", {}, CALIBRATION_DASHBOARD, "overview"),
    Row(
        "dashboard",
        "cstp.getStats",
        {"dateFrom": "$WEEK_AGO", "dateTo": "$TODAY"},
        [
            "byCategory:object",
            "byStakes:object",
            "byStatus:object",
            "topTags[].tag:string",
            "topTags[].count:number",
            "total:number",
        ],
    ),
    Row("dashboard", "cstp.getStats", {}, ["total:number", "byCategory:object"]),
    Row(
        "dashboard",
        "cstp.listDecisions",
        {"limit": 50, "offset": 0, "dateFrom": "$WEEK_AGO", "dateTo": "$TODAY"},
        ["total:number", *(f"decisions[].{f}" for f in ROW_FIELDS)],
    ),
    Row(
        "dashboard",
        "cstp.listDecisions",
        {
            "limit": 20,
            "offset": 0,
            "category": "architecture",
            "sort": "confidence",
            "order": "asc",
        },
        ["total:number", "decisions[].id:string", "decisions[].confidence"],
    ),
    Row(
        "dashboard",
        "cstp.listDecisions",
        {"limit": 20, "offset": 0, "status": "reviewed", "sort": "created_at", "order": "asc"},
        ["total:number", 'decisions[].status="reviewed"'],
    ),
    Row(
        "dashboard",
        "cstp.queryDecisions",
        {"query": "database", "limit": 200, "category": "architecture"},
        ["total:number", "decisions[].id:string", 'decisions[].category="architecture"'],
        "search box: top-level category (ignored by CSTP), limit 200 (clamped)",
    ),
    Row(
        "dashboard",
        "cstp.getDecision",
        {"id": "$ID"},
        ["found=true", *(f"decision.{f}" for f in ROW_FIELDS)],
    ),
    Row(
        "dashboard",
        "cstp.getNeighbors",
        {"nodeId": "$ID", "direction": "both", "limit": 20},
        [
            "neighbors[].node.id:string",
            "neighbors[].node.summary:string",
            "neighbors[].node.category?",
            "neighbors[].node.stakes?",
            "neighbors[].node.date:string",
            "neighbors[].edge.sourceId:string",
            "neighbors[].edge.edgeType:string",
            "neighbors[].edge.weight:number",
        ],
    ),
    Row(
        "dashboard",
        "cstp.reviewDecision",
        {"id": "$PENDING", "outcome": "success", "actual_result": "Shipped on time"},
        ['status="reviewed"'],
    ),
    Row(
        "dashboard",
        "cstp.debugTracker",
        {"includeConsumed": True},
        ["sessions:list", "sessionCount:number", "detail:object"],
    ),
    Row(
        "dashboard",
        "cstp.listBreakers",
        {},
        [
            "breakers[].scope:string",
            "breakers[].state:string",
            "breakers[].failure_count:number",
            "breakers[].failure_threshold:number",
            "breakers[].window_ms:number",
            "breakers[].cooldown_ms:number",
            "breakers[].cooldown_remaining_ms?",
            "breakers[].from_config:bool",
        ],
    ),
    Row(
        "dashboard",
        "cstp.getCircuitState",
        {"scope": "$SCOPE"},
        ["scope:string", 'state="open"', "failureCount:number", "failureThreshold:number"],
    ),
    Row(
        "dashboard",
        "cstp.resetCircuit",
        {"scope": "$SCOPE", "probeFirst": True},
        ['previous_state="open"', 'new_state="half_open"', "previousState", "newState"],
        "the dashboard reads snake_case; CSTP sends camelCase only",
    ),
    Row(
        "dashboard",
        "cstp.getCalibration",
        {"project": "billing", "window": "30d"},
        ["overall?", "recommendations:list"],
    ),
    Row(
        "dashboard",
        "cstp.checkDrift",
        {"thresholdBrier": 0.2, "thresholdAccuracy": 0.15, "project": "billing"},
        [
            "driftDetected:bool",
            "alerts:list",
            "recent?",
            "historical?",
            "recommendations[]?.message:string",
        ],
    ),
]

# Imported here, after Row is defined: the documented-only rows use it.
from tests.contract.documented import DOCUMENTED  # noqa: E402

ROWS = [*CLI, *DASHBOARD, *DOCUMENTED]

#: CSTP's 34 methods (the reference's registration order).
CSTP_METHODS = [
    f"cstp.{name}"
    for name in [
        "queryDecisions",
        "checkGuardrails",
        "listGuardrails",
        "recordDecision",
        "updateDecision",
        "recordThought",
        "getDecision",
        "reviewDecision",
        "getCalibration",
        "attributeOutcomes",
        "checkDrift",
        "reindex",
        "getReasonStats",
        "preAction",
        "getSessionContext",
        "ready",
        "linkDecisions",
        "getGraph",
        "getNeighbors",
        "compact",
        "getCompacted",
        "setPreserve",
        "getWisdom",
        "listDecisions",
        "getStats",
        "listBreakers",
        "getCircuitState",
        "resetCircuit",
        "debugTracker",
        "ingestEvidence",
        "linkEvidence",
        "mapControls",
        "exportEvidenceBundle",
        "verifyEvidenceChain",
    ]
]
