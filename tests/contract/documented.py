"""The contract rows of the methods no shipped CSTP client calls, shaped as the server's
documentation gives them (same syntax and placeholders as :mod:`tests.contract.clients`)."""

from __future__ import annotations

from tests.contract.clients import Row

#: A plain negation of the first seeded decision (``$ID``).
NEGATED = "Do not use PostgreSQL 16 as the primary datastore for the billing service"

# Methods no shipped client calls, as the server's documentation shapes them.
DOCUMENTED = [
    Row(
        "raw",
        "cstp.updateDecision",
        {"id": "$OTHER", "updates": {"confidence": 0.7}},
        ["success=true", "id:string", "updated_fields:list"],
    ),
    # The contradiction guardrail: a plain negation of the seeded PostgreSQL decision is raised
    # (its tier depends on how much relies on it); declared compatible, it is not.
    Row(
        "raw",
        "cstp.checkGuardrails",
        {
            "action": {
                "description": NEGATED,
                "category": "architecture",
                "stakes": "high",
            }
        },
        [
            "allowed:bool",
            "conflicts[].id:string",
            "conflicts[].statement:string",
            "conflicts[].p:number",
            "conflicts[].tier:string",
            "conflicts[].reason:string",
        ],
    ),
    Row(
        "raw",
        "cstp.checkGuardrails",
        {
            "action": {
                "description": NEGATED,
                "category": "architecture",
                "stakes": "high",
                "compatibleWith": ["$ID"],
            }
        },
        ["allowed=true", "violations:list", "warnings:list"],
    ),
    Row(
        "raw",
        "cstp.recordDecision",
        {
            "decision": "Archive paid invoices to cold storage after seven years",
            "category": "architecture",
            "compatibleWith": ["$OTHER"],
        },
        ["success=true", "id:string", "guardrail_warnings:list", "guardrail_override=false"],
    ),
    Row(
        "raw",
        "cstp.updateDecision",
        {"id": "$PENDING", "compatibleWith": ["$OTHER"]},
        ["success=true", "id:string"],
        "compatibleWith alone, without updates",
    ),
    Row(
        "raw",
        "cstp.findContradictions",
        {"status": "all"},
        ["contradictions:list", "contradictions[]?.status:string", "total:number"],
    ),
    Row(
        "raw",
        "cstp.recordThought",
        {"text": "Batch size should follow the region count"},
        ["success=true", 'mode="pre-decision"', "tracker_key:string", "agent_id:string"],
    ),
    Row(
        "raw",
        "cstp.recordThought",
        {"text": "Considering partitioning", "agentId": "planner", "decisionId": "inv-7"},
        ["success=true", 'mode="pre-decision"', "tracker_key:string"],
    ),
    Row(
        "raw",
        "cstp.recordThought",
        {"id": "$OTHER", "text": "Partitioning would halve it"},
        ["success=true", 'mode="post-decision"', "decision_id:string", "step_number:number"],
    ),
    Row(
        "raw",
        "cstp.preAction",
        {
            "action": {
                "description": "Switch invoice PDFs to server-side rendering",
                "category": "architecture",
                "stakes": "medium",
                "confidence": 0.7,
            },
            "options": {"queryLimit": 3, "autoRecord": False},
        },
        [
            "allowed:bool",
            "decisionId?",
            "relevantDecisions:list",
            "guardrailResults:list",
            "calibrationContext.reviewedDecisions:number",
            "patternsSummary:list",
            "queryTimeMs:number",
        ],
    ),
    Row(
        "raw",
        "cstp.getSessionContext",
        {"taskDescription": "Speed up invoice generation", "format": "json"},
        [
            "agentProfile.totalDecisions:number",
            "relevantDecisions:list",
            "activeGuardrails:list",
            "calibrationByCategory:object",
            "readyQueue:list",
            "confirmedPatterns:list",
            "queryTimeMs:number",
        ],
    ),
    Row(
        "raw",
        "cstp.getSessionContext",
        {"format": "markdown"},
        ["markdown:string", "queryTimeMs:number"],
    ),
    Row("raw", "cstp.ready", {}, ["actions:list", "total:number", "filtered:number"]),
    Row(
        "raw",
        "cstp.ready",
        {"minPriority": "high", "actionTypes": ["stale_pending"], "limit": 5},
        ["actions:list", "total:number"],
    ),
    Row(
        "raw",
        "cstp.linkDecisions",
        {"sourceId": "$OTHER", "targetId": "$ID", "edgeType": "depends_on", "weight": 0.8},
        ["success=true", "edge.sourceId:string", 'edge.edgeType="depends_on"'],
    ),
    Row(
        "raw",
        "cstp.getGraph",
        {"nodeId": "$ID", "depth": 2},
        ["centerId:string", "depth:number", "nodes[].id:string", "edges:list"],
    ),
    Row(
        "raw",
        "cstp.compact",
        {"dryRun": True},
        [
            "compacted:number",
            "preserved:number",
            "levels.full:number",
            "levels.wisdom:number",
            "dryRun=true",
        ],
    ),
    Row(
        "raw",
        "cstp.getCompacted",
        {"limit": 10},
        ["decisions[].id:string", "decisions[].level:string", "total:number", "levels:object"],
    ),
    Row(
        "raw",
        "cstp.setPreserve",
        {"decisionId": "$ID", "preserve": True},
        ["success=true", "decisionId:string", "preserve=true"],
    ),
    Row(
        "raw",
        "cstp.getWisdom",
        {"minDecisions": 1},
        ["wisdom:list", "totalDecisions:number", "categoriesAnalyzed:number"],
    ),
    Row(
        "raw",
        "cstp.attributeOutcomes",
        {"project": "billing", "dryRun": True},
        [
            "processed:number",
            "attributed.stable:number",
            "attributed.skipped:number",
            "decisions:list",
        ],
    ),
    Row(
        "raw",
        "cstp.ingestEvidence",
        {
            "source": "github",
            "events": [
                {
                    "event_type": "pr_opened",
                    "payload": {"pr_number": 412, "is_agent_authored": True},
                },
                {
                    "event_type": "pr_merged",
                    "payload": {"pr_number": 412, "human_approval_count": 0},
                },
            ],
        },
        ["ingested=2", "head_hash:string", "first_seq:number"],
    ),
    Row(
        "raw",
        "cstp.linkEvidence",
        {"decision_id": "$ID", "event_seqs": ["$SEQ"]},
        ["linked=1", "decision_id:string", "attested_seq:number"],
    ),
    Row(
        "raw",
        "cstp.mapControls",
        {},
        [
            "coverage.observed.total_events:number",
            "coverage.attested.total_events:number",
            "mappings:list",
            "insufficient_evidence:list",
            "insufficient_evidence_count:number",
            "unmapped:list",
            "attested_only_controls:list",
        ],
    ),
    Row(
        "raw",
        "cstp.exportEvidenceBundle",
        {},
        ["chain_head_hash:string", "chain_intact=true", "coverage:object", "json_path:string"],
    ),
    Row(
        "raw",
        "cstp.verifyEvidenceChain",
        {},
        ["intact=true", "broken_at_seq?", "head_hash:string", "tail_check:bool"],
    ),
    Row(
        "raw",
        "cstp.reindex",
        {},
        [
            "success=true",
            "decisionsIndexed:number",
            "errors:number",
            "durationMs:number",
            "message:string",
        ],
    ),
]
