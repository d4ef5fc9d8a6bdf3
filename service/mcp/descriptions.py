"""What a model reads when it chooses a tool: one description per tool (when to use it, what
it returns, what to prefer), and the property descriptions of decigraph's own tools, whose
schemas derive from the ``cstp.*`` params (so their limits are declared once, in the method)."""

from __future__ import annotations

from pydantic import BaseModel

DESCRIPTIONS: dict[str, str] = {
    "query_decisions": (
        "Search past decisions by meaning and keywords (low-level; prefer pre_action before "
        "acting, or recall for decisions and memory together). Returns "
        "{decisions: [{id, title, category, confidence, stakes, status, date, distance, score, "
        "outcome, tags, pattern}], total, query, retrievalMode}."
    ),
    "check_action": (
        "Check a proposed action against the guardrails without recording anything "
        "(low-level what-if; prefer pre_action, which also finds similar decisions). Returns "
        "{allowed, violations, warnings, evaluated}; each finding is "
        "{guardrail_id, name, message, severity}."
    ),
    "log_decision": (
        "Record a decision you already made (low-level; prefer pre_action with auto_record, "
        "which checks the guardrails first). Give typed reasons and tags: they raise the quality "
        "score and make it findable. Returns {success, id, quality, guardrail_warnings, ...}. "
        "A decision that contradicts a recorded one is refused (error guardrail_blocked)."
    ),
    "review_outcome": (
        "Record how a decision turned out (success, partial, failure, abandoned) so calibration "
        "and the ready queue learn from it. Returns {success, id, status, reviewedAt}; an "
        "unknown id gives {success: false, status: not_found}."
    ),
    "get_stats": (
        "Calibration of reviewed decisions: Brier score, accuracy, confidence buckets and "
        "recommendations, optionally for one category, project or time window. Use it to "
        "judge how far to trust your confidence."
    ),
    "get_decision": (
        "Fetch one decision's full record by id (statement, reasons, context, outcome, "
        "lifecycle). Returns {found: true, decision} or {found: false, error}."
    ),
    "get_reason_stats": (
        "Which kinds of reasons (analysis, empirical, authority, ...) go with decisions that "
        "worked out, from reviewed decisions. Use it to pick the kinds of evidence to gather."
    ),
    "update_decision": (
        "Change fields of a recorded decision (statement, confidence, context, tags, pattern); "
        "only the fields given change. Returns {success, id, updated_fields}. To record an "
        "outcome use review_outcome instead."
    ),
    "record_thought": (
        "Record one reasoning step. With decision_id naming a recorded decision it is appended "
        "to that decision's deliberation; otherwise it is kept for the next decision you record "
        "(scoped by agent_id / decision_id)."
    ),
    "pre_action": (
        "PRIMARY: call before any significant action. In one call: similar past decisions (and "
        "their outcomes), the guardrail verdict, and, when allowed and auto_record is true (the "
        "default), the action recorded as a decision. Returns {allowed, relevantDecisions, "
        "guardrailResults, decisionId, blockReasons?}. Do not proceed when allowed is false."
    ),
    "get_session_context": (
        "PRIMARY: call at the start of a task. Relevant past decisions, active guardrails, "
        "calibration and pending work in one pack, as markdown (default) or json."
    ),
    "ready": (
        "PRIMARY: maintenance work that needs attention, most important first: decisions to "
        "review, stale pending decisions, calibration drift. Returns {actions: [{type, "
        "priority, reason, suggestion, decisionId}]}."
    ),
    "link_decisions": (
        "Create a typed edge between two recorded decisions: relates_to, supersedes (source "
        "replaces target) or depends_on (source needs target). Returns {success, edge}."
    ),
    "get_graph": (
        "The subgraph around a decision, up to depth hops: nodes (with salience) and edges. "
        "Use it to see what a decision is connected to; get_neighbors for one hop."
    ),
    "get_neighbors": (
        "The decisions directly linked to one decision, with the linking edge, strongest first. "
        "Returns {nodeId, neighbors: [{node, direction, edge}], total}."
    ),
    "get_circuit_state": (
        "One circuit breaker's state by scope (e.g. stakes:high): closed, open or half_open, "
        "failure counts and the remaining cooldown. Read-only."
    ),
    "list_breakers": (
        "Every circuit breaker with its state and failure counts, and their total. Read-only."
    ),
    "recall": (
        "Intent-aware recall over decisions AND memory items (observations, facts, thoughts): "
        "the best general search. The intent (why, when, entity, general) is detected from the "
        "query or given. Returns {intent, preset, results: [{id, kind, text, score, ...}]}."
    ),
    "remember": (
        "Store a conversational memory item (an observation, fact or thought) so recall finds "
        "it later; it is linked to related decisions automatically. Use log_decision or "
        "pre_action for decisions. Re-sending the same id updates it."
    ),
    "unlink": (
        "Remove the edge(s) between two nodes (one edge_type, or every type when omitted). "
        "Returns {success, sourceId, targetId}."
    ),
    "find_path": (
        "How two decisions are connected: the shortest path(s) of edges between them "
        "(max_paths > 1 for alternatives). Returns {found, path, edges, length}."
    ),
    "get_ancestors": (
        "Everything a decision depends on, transitively (depends_on edges unless edge_types "
        "says otherwise), with the depth and the edge each was reached by."
    ),
    "get_descendants": (
        "Everything that depends on a decision, transitively: what a change to it affects."
    ),
    "find_contradictions": (
        "Pairs of decisions that contradict each other, most important (salience at stake) "
        "first. Use it to find conflicts to resolve (supersede one, or reject it)."
    ),
    "get_blocked_chain": (
        "Why a decision is blocked: the chain of unresolved blockers behind it. Without node_id, "
        "every blocked decision with its blockers."
    ),
    "get_high_salience": (
        "The most important decisions in the graph (salience: how much else depends on or "
        "refers to them), most salient first."
    ),
    "get_decision_history": (
        "Every change to one decision, oldest first: recorded, updated (each field before and "
        "after), reviewed, lifecycle changes, links and unlinks from either end, supersession, "
        "forget; each with seq, time and actor. Works for forgotten decisions too."
    ),
    "list_events": (
        "What changed: the log's events after a seq (oldest first; order=desc for the newest "
        "first), optionally only some operations, one node's or one project's. Each event has "
        "its seq, time, actor, op, the node ids it names and a one-line summary. Returns "
        "{events, head, nextAfter}: pass nextAfter as after to read on (done at head)."
    ),
}

#: Descriptions of the properties of decigraph's own tools (by tool property name).
PROPERTY_DESCRIPTIONS: dict[str, str] = {
    "query": "What to look for, in natural language.",
    "limit": "Most results to return.",
    "intent": "why, when, entity or general (default: detected from the query).",
    "filters": "Restrict the results (category, stakes, project, tags, kind, dates, ...).",
    "include_reasons": "Include each decision's reasons.",
    "text": "The item's text.",
    "kind": "observation, fact or thought.",
    "id": "Your id for the item (8 hex characters); re-sending it updates the item.",
    "source": "Where the item came from (a conversation, a document, ...).",
    "occurred_at": "When it happened (ISO 8601; default: now).",
    "entities": "Names of the people, systems or things it is about.",
    "tags": "Tags for finding it later.",
    "project": "The project it belongs to.",
    "external_id": "An id in another system, to update the same item on re-import.",
    "source_id": "The node the edge starts from.",
    "target_id": "The node the edge points to.",
    "edge_type": "The edge type (omit to remove every type between the two).",
    "edge_types": "Only follow these edge types.",
    "max_paths": "How many alternative paths to return.",
    "max_length": "Longest path, in edges.",
    "directed": "Follow edges only in their direction.",
    "include_derived": "Also walk derived edges (temporal, entity, semantic, causal).",
    "node_id": "The decision's id (8 hex characters).",
    "max_depth": "How many hops to follow at most (default: all).",
    "status": "active (default: only unresolved) or all.",
    "active_only": "Only decisions still in force (not rejected or superseded).",
    "as_of": (
        "Answer as the store stood then: a seq (integer) or an ISO 8601 time (default: now)."
    ),
    "valid_at": "Only what was in force at this ISO 8601 time (valid time).",
    "after": "Only events after this seq (default 0: from the start of the log).",
    "before": "Only events before this seq (paging back with order=desc: nextBefore).",
    "order": "asc (default): oldest first; desc: newest first.",
    "ops": "Only these operations (record, update, review, link, unlink, forget, ...).",
}

#: The tool names of these fields where the method's own name reads badly beside
#: link_decisions (``source`` -> ``source_id``, ...).
EDGE_RENAMES = {"source": "source_id", "target": "target_id", "type": "edge_type"}


def derived_tools() -> list[tuple[str, str, type[BaseModel], dict[str, str]]]:
    """decigraph's own tools: (tool name, method, its params model, property renames)."""
    from service.methods.events import ListEventsParams
    from service.methods.graph import (
        BlockedParams,
        ContradictionParams,
        HighSalienceParams,
        LineageParams,
        PathParams,
        UnlinkParams,
    )
    from service.methods.history import HistoryParams
    from service.methods.memory import RecallParams, RememberParams

    path_renames = {"source": "source_id", "target": "target_id"}
    return [
        ("recall", "cstp.recall", RecallParams, {}),
        ("remember", "cstp.remember", RememberParams, {}),
        ("unlink", "cstp.unlinkDecisions", UnlinkParams, EDGE_RENAMES),
        ("find_path", "cstp.findPath", PathParams, path_renames),
        ("get_ancestors", "cstp.getAncestors", LineageParams, {}),
        ("get_descendants", "cstp.getDescendants", LineageParams, {}),
        ("find_contradictions", "cstp.findContradictions", ContradictionParams, {}),
        ("get_blocked_chain", "cstp.getBlockedChain", BlockedParams, {}),
        ("get_high_salience", "cstp.getHighSalience", HighSalienceParams, {}),
        ("get_decision_history", "cstp.getDecisionHistory", HistoryParams, {}),
        ("list_events", "cstp.listEvents", ListEventsParams, {}),
    ]
