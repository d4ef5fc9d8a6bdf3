"""The contract with MCP clients: every tool called with arguments shaped as its input schema
(CSTP's 17 tools as the reference's section 8.4 gives them, then decigraph's own), and the
result fields a client (CSTP's demo agent, a model) reads. Same path syntax and placeholders
as :mod:`tests.contract.clients`."""

from __future__ import annotations

from tests.contract.clients import Row

TOOL_ROWS = [
    Row(
        "mcp",
        "query_decisions",
        {
            "query": "primary database for billing",
            "limit": 5,
            "retrieval_mode": "semantic",
            "filters": {"category": "architecture", "project": "billing", "min_confidence": 0.5},
        },
        [
            "decisions[].id:string",
            "decisions[].title:string",
            "decisions[].distance:number",
            "total:number",
            'retrievalMode="semantic"',
        ],
    ),
    Row(
        "mcp",
        "check_action",
        {
            "description": "Rotate the database password by hand",
            "category": "security",
            "stakes": "critical",
            "confidence": 0.9,
        },
        [
            "allowed:bool",
            "violations[]?.guardrail_id:string",
            "violations[]?.message:string",
            "warnings:list",
            "evaluated:number",
        ],
    ),
    Row(
        "mcp",
        "log_decision",
        {
            "decision": "Retry failed card payments three times with exponential backoff",
            "confidence": 0.8,
            "category": "integration",
            "stakes": "medium",
            "reasons": [{"type": "empirical", "text": "Most card declines clear within a minute"}],
            "tags": ["payments"],
            "project": "billing",
            "pr": 415,
            "bridge": {"structure": "A retry queue", "function": "Recover transient declines"},
        },
        ["success=true", "id:string", "quality.score:number"],
    ),
    # The contradiction guardrail's resolutions, taken by every tool that can write or check.
    Row(
        "mcp",
        "check_action",
        {
            "description": "Keep PostgreSQL 16 for billing and Redis for exchange rates",
            "category": "architecture",
            "compatible_with": ["$ID"],
            "supersedes": ["$OTHER"],
        },
        ["allowed=true", "violations:list", "warnings:list", "evaluated:number"],
    ),
    Row(
        "mcp",
        "log_decision",
        {
            "decision": "Archive paid invoices to cold storage after seven years",
            "confidence": 0.7,
            "category": "architecture",
            "compatible_with": ["$ID"],
            "override_reason": "Retention policy RP-7",
        },
        ["success=true", "id:string", "guardrail_override:bool"],
    ),
    Row(
        "mcp",
        "review_outcome",
        {
            "id": "$PENDING",
            "outcome": "partial",
            "actual_result": "Adopted by two of three teams",
            "lessons": "Pair the rollout with training",
        },
        ["success=true", 'status="reviewed"'],
    ),
    Row(
        "mcp",
        "get_stats",
        {"project": "billing", "window": "all"},
        ["overall.brierScore:number", "recommendations:list"],
    ),
    Row(
        "mcp",
        "get_decision",
        {"id": "$ID"},
        ["found=true", "decision.id:string", "decision.decision:string"],
    ),
    Row("mcp", "get_decision", {"id": "0000dead"}, ["found=false", "error:string"]),
    Row(
        "mcp",
        "get_reason_stats",
        {"filters": {"category": "architecture"}, "min_reviewed": 1},
        ["byReasonType[].reasonType:string", "totalDecisions:number"],
    ),
    Row(
        "mcp",
        "update_decision",
        {"id": "$OTHER", "confidence": 0.7, "tags": ["pdf", "fonts"]},
        ["success=true", "updated_fields:list"],
    ),
    Row(
        "mcp",
        "update_decision",
        {"id": "$OTHER", "confidence": 0.72, "compatible_with": ["$ID"]},
        ["success=true", "updated_fields:list"],
    ),
    Row(
        "mcp",
        "pre_action",
        {
            "action": {
                "description": "Serve invoice PDFs from a CDN",
                "category": "architecture",
                "compatible_with": ["$ID"],
            },
            "options": {"query_limit": 2, "auto_record": False},
        },
        ["allowed=true", "relevantDecisions:list", "decisionId?"],
    ),
    Row(
        "mcp",
        "record_thought",
        {"text": "The retry budget should follow the card network"},
        ["success=true", 'mode="pre-decision"', "tracker_key:string"],
    ),
    Row(
        "mcp",
        "record_thought",
        {"text": "Region partitioning halves it", "decision_id": "$OTHER"},
        ["success=true", 'mode="post-decision"', "step_number:number"],
    ),
    Row(
        "mcp",
        "pre_action",
        {
            "action": {
                "description": "Move invoice storage to S3 with object lock",
                "category": "architecture",
                "stakes": "high",
                "confidence": 0.75,
            },
            "options": {"query_limit": 3, "auto_record": False},
        },
        [
            "allowed:bool",
            "relevantDecisions:list",
            "calibrationContext:object",
            "patternsSummary:list",
            "decisionId?",
        ],
    ),
    Row(
        "mcp",
        "get_session_context",
        {"task_description": "Speed up invoicing"},
        ["markdown:string", "queryTimeMs:number"],
    ),
    Row(
        "mcp",
        "get_session_context",
        {"format": "json", "include": ["decisions", "ready"]},
        ["agentProfile:object", "readyQueue:list"],
    ),
    Row("mcp", "ready", {"min_priority": "low", "limit": 10}, ["actions:list", "total:number"]),
    Row(
        "mcp",
        "link_decisions",
        {"source_id": "$OTHER", "target_id": "$ID", "edge_type": "relates_to", "weight": 0.5},
        ["success=true", 'edge.edgeType="relates_to"'],
    ),
    Row(
        "mcp",
        "get_graph",
        {"node_id": "$ID", "depth": 2, "direction": "both"},
        ["centerId:string", "nodes[].id:string", "edges:list"],
    ),
    Row(
        "mcp",
        "get_neighbors",
        {"node_id": "$ID", "limit": 10},
        ["neighbors[].node.id:string", "neighbors[].edge.edgeType:string", "total:number"],
    ),
    Row(
        "mcp",
        "get_circuit_state",
        {"scope": "stakes:critical"},
        [
            "scope:string",
            "state:string",
            "failure_count:number",
            "failure_threshold:number",
            "window_ms:number",
            "cooldown_ms:number",
            "probe_in_flight:bool",
            "from_config:bool",
        ],
    ),
    Row(
        "mcp",
        "list_breakers",
        {},
        ["breakers[].scope:string", "breakers[].failure_count:number", "total:number"],
    ),
    Row(
        "mcp",
        "recall",
        {"query": "why integer cents for money?", "limit": 5},
        [
            "results[].id:string",
            "results[].why:string",
            "results[].relevance:number",
            "intent:string",
        ],
    ),
    Row(
        "mcp",
        "remember",
        {"text": "Finance asked for invoice totals to match the ledger to the cent"},
        ["id:string"],
    ),
    Row(
        "mcp",
        "find_path",
        {"source_id": "$OTHER", "target_id": "$ID"},
        ["found=true", "path:list", "edges[].edgeType:string", "length:number"],
    ),
    Row("mcp", "get_ancestors", {"node_id": "$OTHER"}, ["nodeId:string", "nodes:list"]),
    Row("mcp", "get_descendants", {"node_id": "$ID"}, ["nodeId:string", "nodes[].id:string"]),
    Row("mcp", "find_contradictions", {}, ["contradictions:list"]),
    Row("mcp", "get_blocked_chain", {}, ["blocked:list"]),
    Row("mcp", "get_high_salience", {"limit": 5}, ["decisions:list"]),
    Row(
        "mcp",
        "get_decision_history",
        {"id": "$ID"},
        ["id:string", "exists=true", "events[].seq:number", "events[].action:string"],
    ),
    Row("mcp", "get_high_salience", {"limit": 5, "as_of": 1}, ["decisions:list", "asOf:object"]),
    Row(
        "mcp",
        "list_events",
        {"limit": 5, "ops": ["record"]},
        ["events[].seq:number", "events[].summary:string", "head:number", "nextAfter:number"],
    ),
    Row("mcp", "unlink", {"source_id": "$OTHER", "target_id": "$ID"}, ["success=true"]),
    # Every edge type cstp.linkDecisions takes (CSTP's enum had three), then the lifecycle tools.
    Row(
        "mcp",
        "link_decisions",
        {"source_id": "$OTHER", "target_id": "$PENDING", "edge_type": "contradicts"},
        ["success=true", 'edge.edgeType="contradicts"'],
    ),
    Row(
        "mcp",
        "link_decisions",
        {"source_id": "$PENDING", "target_id": "$ID", "edge_type": "caused_by"},
        ["success=true", 'edge.edgeType="caused_by"'],
    ),
    Row(
        "mcp",
        "set_lifecycle",
        {"id": "$PENDING", "lifecycle": "proposed", "reason": "Waiting for the finance review"},
        ["success=true", 'lifecycle="proposed"', 'previousLifecycle="accepted"'],
    ),
    Row(
        "mcp",
        "supersede",
        {"id": "$PENDING", "superseded_by": "$OTHER", "reason": "The ledger replaced it"},
        ["success=true", 'edge.edgeType="supersedes"', "edge.sourceId:string"],
    ),
    Row(
        "mcp",
        "forget",
        {"id": "$PENDING", "reason": "Recorded by mistake"},
        ["success=true", "id:string", "edgesRemoved:number"],
    ),
]
