"""What a model reads when it chooses a tool: one or two sentences each (when to use it, what
it returns), and the few property descriptions a name does not make plain. Every byte here is
in every session's context window (the whole tool list stays under 12 KB)."""

from __future__ import annotations

from pydantic import BaseModel

#: How a refused write is resolved, in the arguments' own names.
RESOLVE = (
    "Refused as contradicting decision X? Call again with supersedes:[X] if it replaces X, "
    "compatible_with:[X] if both hold, or override_reason."
)

DESCRIPTIONS: dict[str, str] = {
    "query_decisions": "Search past decisions (before acting, prefer pre_action).",
    "check_action": "Check an action against the guardrails without recording it (prefer "
    "pre_action).",
    "log_decision": f"Record a decision already made (prefer pre_action). {RESOLVE}",
    "review_outcome": "Record how a decision turned out (feeds calibration and lessons).",
    "get_stats": "Calibration of reviewed decisions (Brier score, accuracy).",
    "get_decision": "One decision's full record.",
    "get_reason_stats": "Which reason types go with decisions that worked out.",
    "update_decision": "Change the given fields of a decision (a refusal is resolved as for "
    "log_decision).",
    "record_thought": "Record a reasoning step (on decision_id's decision, else for your next "
    "one).",
    "pre_action": "PRIMARY: call before any significant action: what to know (conflicts, "
    "failures, related decisions), the guardrail verdict, and the action recorded if allowed "
    "(auto_record). Do not proceed when allowed is false.",
    "get_session_context": "PRIMARY: call when starting a task: relevant decisions, "
    "guardrails, calibration, pending work.",
    "ready": "Maintenance due (reviews, stale decisions, drift), most important first.",
    "link_decisions": "Add an edge source->target (supersedes: source replaces target; "
    "depends_on: source needs target).",
    "get_graph": "The subgraph within depth hops of a decision.",
    "get_neighbors": "The decisions linked to one decision.",
    "get_circuit_state": "One circuit breaker's state.",
    "list_breakers": "All circuit breakers.",
    "recall": "Search decisions and memory together (the best general search).",
    "remember": "Keep an observation, fact or thought for recall (not decisions). Re-sending "
    "an id updates it.",
    "unlink": "Remove the edge(s) between two nodes (all types without edge_type).",
    "find_path": "How two decisions are connected.",
    "get_ancestors": "What a decision depends on, transitively.",
    "get_descendants": "What depends on a decision, transitively.",
    "find_contradictions": "Contradicting pairs, most important first.",
    "get_blocked_chain": "Why a decision is blocked (all blocked ones without node_id).",
    "get_high_salience": "The decisions most others rely on.",
    "get_decision_history": "Every change to a decision, oldest first.",
    "list_events": "The log's events after a seq (page on with nextAfter).",
    "set_lifecycle": "Mark a decision proposed, accepted or rejected (reviving a rejected one "
    "may need override_reason).",
    "forget": "Delete a decision or memory item and its edges (history kept).",
    "supersede": "Mark decision id as replaced by decision superseded_by.",
}

#: Descriptions of the properties of decigraph's own tools (by tool property name).
PROPERTY_DESCRIPTIONS: dict[str, str] = {"occurred_at": "ISO 8601."}

#: The tool names of these fields where the method's own name reads badly beside
#: link_decisions (``source`` -> ``source_id``, ...).
EDGE_RENAMES = {"source": "source_id", "target": "target_id", "type": "edge_type"}
PATH_RENAMES = {"source": "source_id", "target": "target_id"}
#: A time-travel read's arguments: accepted, not listed.
PAST = frozenset({"as_of", "valid_at"})

#: Arguments of decigraph's own tools that are accepted but not listed.
DERIVED_HIDDEN: dict[str, frozenset[str]] = {
    "recall": PAST | {"explain", "min_relevance"},
    "remember": frozenset({"external_id", "source", "project"}),
    "find_path": PAST | {"edge_types", "directed", "include_derived", "max_length", "max_paths"},
    "get_ancestors": PAST | {"edge_types"},
    "get_descendants": PAST | {"edge_types"},
    "find_contradictions": PAST,
    "get_blocked_chain": PAST,
    "get_high_salience": PAST,
    "list_events": frozenset({"before", "project", "order"}),
}


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

    return [
        ("recall", "cstp.recall", RecallParams, {}),
        ("remember", "cstp.remember", RememberParams, {}),
        ("unlink", "cstp.unlinkDecisions", UnlinkParams, EDGE_RENAMES),
        ("find_path", "cstp.findPath", PathParams, PATH_RENAMES),
        ("get_ancestors", "cstp.getAncestors", LineageParams, {}),
        ("get_descendants", "cstp.getDescendants", LineageParams, {}),
        ("find_contradictions", "cstp.findContradictions", ContradictionParams, {}),
        ("get_blocked_chain", "cstp.getBlockedChain", BlockedParams, {}),
        ("get_high_salience", "cstp.getHighSalience", HighSalienceParams, {}),
        ("get_decision_history", "cstp.getDecisionHistory", HistoryParams, {}),
        ("list_events", "cstp.listEvents", ListEventsParams, {}),
    ]
