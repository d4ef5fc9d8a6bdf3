"""Mutation events: the unit of the append-only log.

An event line is canonical JSON with the keys ``seq, id, ts, actor, op, payload,
expectedVersion (optional), prev, hash``. ``hash`` is the SHA-256 of the canonical JSON of every
other key, and ``prev`` is the previous event's ``hash`` (:data:`GENESIS_HASH` for the first), so
changing, dropping or reordering any event breaks the chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from .canonical import canonical_json, sha256_hex

GENESIS_HASH = "0" * 64


class Operation(StrEnum):
    RECORD = "record"
    REMEMBER = "remember"
    UPDATE = "update"
    REVIEW = "review"
    SET_LIFECYCLE = "set_lifecycle"
    LINK = "link"
    UNLINK = "unlink"
    SUPERSEDE = "supersede"
    FORGET = "forget"
    IMPORT = "import"
    #: Ledger operations: records beside the graph (evidence, circuit-breaker resets) that
    #: change no node or edge; the hash chain covers them like every other event.
    EVIDENCE = "evidence"
    CIRCUIT = "circuit"


#: The operations whose events are kept in the graph's ledger (``G.graph["ledger"]``).
LEDGER_OPERATIONS = frozenset({Operation.EVIDENCE, Operation.CIRCUIT})


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    id: str
    ts: str
    actor: str
    op: Operation
    payload: dict[str, Any]
    prev: str
    hash: str
    expected_version: int | None = None

    def body(self) -> dict[str, Any]:
        """Every field but ``hash``, under its wire name."""
        out: dict[str, Any] = {
            "seq": self.seq,
            "id": self.id,
            "ts": self.ts,
            "actor": self.actor,
            "op": self.op.value,
            "payload": self.payload,
            "prev": self.prev,
        }
        if self.expected_version is not None:
            out["expectedVersion"] = self.expected_version
        return out

    def to_line(self) -> bytes:
        return canonical_json({**self.body(), "hash": self.hash}) + b"\n"

    @classmethod
    def create(
        cls,
        *,
        seq: int,
        event_id: str,
        ts: str,
        actor: str,
        op: Operation,
        payload: dict[str, Any],
        prev: str,
        expected_version: int | None = None,
    ) -> Event:
        draft = cls(seq, event_id, ts, actor, op, payload, prev, "", expected_version)
        return cls(
            seq,
            event_id,
            ts,
            actor,
            op,
            payload,
            prev,
            compute_hash(draft.body()),
            expected_version,
        )

    @classmethod
    def from_line(cls, line: bytes) -> Event:
        """Parse one log line; raises ``ValueError`` if it is not a well-formed event."""
        data = orjson.loads(line)
        if not isinstance(data, dict):
            raise ValueError("event is not a JSON object")
        try:
            expected = data.get("expectedVersion")
            event = cls(
                seq=_int(data["seq"]),
                id=str(data["id"]),
                ts=str(data["ts"]),
                actor=str(data["actor"]),
                op=Operation(data["op"]),
                payload=data["payload"],
                prev=str(data["prev"]),
                hash=str(data["hash"]),
                expected_version=None if expected is None else _int(expected),
            )
        except KeyError as exc:
            raise ValueError(f"event lacks field {exc.args[0]!r}") from exc
        if not isinstance(event.payload, dict):
            raise ValueError("event payload is not an object")
        return event

    def hash_is_valid(self) -> bool:
        return compute_hash(self.body()) == self.hash


def touched_ids(payload: dict[str, Any]) -> list[str]:
    """Ids of the nodes an event's payload creates or changes (an import's: every node it
    adds; edges alone change no node's indexed form)."""
    node = payload.get("node")
    if isinstance(node, dict) and isinstance(node.get("id"), str):
        return [node["id"]]
    nodes = payload.get("nodes")
    if isinstance(nodes, list):
        return [n["id"] for n in nodes if isinstance(n, dict) and isinstance(n.get("id"), str)]
    node_id = payload.get("id")
    return [node_id] if isinstance(node_id, str) else []


def compute_hash(body: dict[str, Any]) -> str:
    return sha256_hex(canonical_json(body))


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value
