"""The application layer: one function per thing a user does.

Every entry point (JSON-RPC methods, the MCP server, the CLI, bulk import, the analyst API)
calls these and nothing else; none of them builds drafts, calls store mutations or composes
indexes. Each use case takes validated input (:mod:`.inputs`) and, for writes, the caller's
identity, and returns a typed result.

- writes (:mod:`.writes`, :mod:`.lifecycle`): :func:`record_decision`,
  :func:`update_decision`, :func:`review_decision`, :func:`set_lifecycle`, :func:`link`,
  :func:`unlink`, :func:`supersede`, :func:`forget`, :func:`remember_item`; bulk
  :func:`import_items`;
- reads (:mod:`.reads`, :mod:`.graphs`, :mod:`.agents`): :func:`recall_items`, :func:`query`,
  graph queries, the work queue and context packs;
- guardrails (:mod:`.guards`, :mod:`.gate`): :func:`check`, :func:`pre_action`.
"""

from .bulk import ImportReport, import_items
from .context import Decigraph
from .guards import PreActionResult, check, pre_action
from .lifecycle import Forgotten, LifecycleSet, forget, set_lifecycle
from .reads import count_decisions, get_node, list_decisions, query, read_node, recall_items
from .rules import GuardrailBlockedError, Verdict
from .writes import (
    Recorded,
    Remembered,
    Updated,
    link,
    record_decision,
    remember_item,
    review_decision,
    supersede,
    unlink,
    update_decision,
)

__all__ = [
    "Decigraph",
    "Forgotten",
    "GuardrailBlockedError",
    "ImportReport",
    "LifecycleSet",
    "PreActionResult",
    "Recorded",
    "Remembered",
    "Updated",
    "Verdict",
    "check",
    "count_decisions",
    "forget",
    "get_node",
    "import_items",
    "link",
    "list_decisions",
    "pre_action",
    "query",
    "read_node",
    "recall_items",
    "record_decision",
    "remember_item",
    "review_decision",
    "set_lifecycle",
    "supersede",
    "unlink",
    "update_decision",
]
