"""The evidence chain (CSTP's provenance feature), kept as events in decigraph's own log.

Two classes of evidence share one chain and are never blended: ``observed`` records are events
of systems the agent does not control (a pull request opened, approved, merged), ingested as
they come; ``attested`` records are the agent's own claims (a decision linked to observed
events). Each record carries CSTP's chain so a CSTP-side verifier checks it unchanged:
``{seq, ts, source, event_type, evidence_class, payload, prev_hash, hash}``, ``hash`` being the
SHA-256 of the canonical JSON of ``{seq, ts, event_type, evidence_class, payload, prev_hash}``
(keys sorted at every level, ``,`` and ``:`` without spaces, non-ASCII written raw). ``source``
is not hashed; the class is, so relabelling a record breaks the chain.

The records live in ledger events of the log (:data:`graph.events.Operation.EVIDENCE`):
``{"kind": "ingest" | "attest", "records": [...]}`` and ``{"kind": "checkpoint", ...}`` (a
trusted head, written by an intact export). So decigraph's own hash chain covers the evidence
too, and :func:`evidence_state` rebuilds the evidence view from the ledger alone.

Everything here is pure: validation, hashing, chaining and verification of values.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ValidationError

OBSERVED = "observed"
ATTESTED = "attested"
CLASSES = frozenset({OBSERVED, ATTESTED})
#: The event type of the attested record ``linkEvidence`` appends.
LINK_EVENT_TYPE = "cstp_decision_linked"
#: CSTP's chain format version (a JSON preimage; version 1 joined strings).
CHAIN_FORMAT = 2
#: Labels (event types, sources) and caller timestamps are short by nature; a bound keeps a
#: malformed batch from filling the log with one field.
MAX_LABEL = 200
MAX_TS = 64
#: Integers must survive the log's JSON encoder (64-bit) to be verifiable after a restart.
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1

#: Ledger payload kinds.
INGEST, ATTEST, CHECKPOINT = "ingest", "attest", "checkpoint"


def canonical(value: Any) -> bytes:
    """CSTP's canonical JSON (``json.dumps`` sorted, compact, non-ASCII raw) as UTF-8.

    The standard encoder, not orjson: floats must print as Python prints them (``1e-05``, not
    ``1e-5``) or a CSTP verifier would compute another hash for the same record.
    """
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def record_hash(
    seq: int, ts: str, event_type: str, evidence_class: str, payload: Any, prev_hash: str
) -> str:
    """The hash of one record: SHA-256 over the canonical JSON of its six hashed fields."""
    return _digest(seq, ts, event_type, evidence_class, payload, prev_hash)


def _digest(*fields: Any) -> str:
    """:func:`record_hash` over values of any JSON type (a tampered record may hold any)."""
    names = ("seq", "ts", "event_type", "evidence_class", "payload", "prev_hash")
    preimage = dict(zip(names, fields, strict=True))
    return hashlib.sha256(canonical(preimage)).hexdigest()


# -- input --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EvidenceEvent:
    """One validated event to append: ``ts`` is ``None`` when the server's clock stamps it."""

    event_type: str
    payload: dict[str, Any]
    source: str
    ts: str | None = None


def _label(value: Any, field: str, missing: str) -> str:
    if value is None or value == "":
        raise ValidationError(field, missing)
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got: {type(value).__name__}")
    if len(value) > MAX_LABEL:
        raise ValidationError(field, f"must be at most {MAX_LABEL} characters")
    return value


def _storable(value: Any, field: str) -> None:
    """Refuse what the log could not store and read back identically (walked without
    recursion): integers past 64 bits, non-finite floats."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        elif isinstance(item, int):
            if not _INT_MIN <= item <= _INT_MAX:
                raise ValidationError(
                    field, "Event payload holds an integer out of range (64-bit only)"
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValidationError(field, "Event payload holds a number that is not finite")
        else:  # only JSON values reach here; anything else is a caller's bug
            raise ValidationError(field, f"Event payload holds a {type(item).__name__}, not JSON")


def parse_events(raw: Any, default_source: str) -> list[EvidenceEvent]:
    """Validate a whole ``ingestEvidence`` batch before anything is appended (all or nothing).

    Messages are CSTP's; the field names the event (``events.3``) so a long batch says which.
    """
    if not isinstance(raw, list) or not raw:
        raise ValidationError("events", "'events' must be a non-empty list")
    out: list[EvidenceEvent] = []
    for index, item in enumerate(raw):
        where = f"events.{index}"
        if not isinstance(item, dict):
            raise ValidationError(where, "Each event must be a dict")
        event_type = _label(item.get("event_type"), where, "Each event must have 'event_type'")
        payload = item.get("payload", {})
        if not isinstance(payload, dict):
            kind = "list" if isinstance(payload, list) else type(payload).__name__
            raise ValidationError(where, f"Event payload must be a dict, got: {kind}")
        _storable(payload, where)
        ts = item.get("ts")
        if ts is not None and (not isinstance(ts, str) or not ts or len(ts) > MAX_TS):
            detail = f"'ts' must be a non-empty string of at most {MAX_TS} characters"
            raise ValidationError(where, detail)
        source = item.get("source")
        source = default_source if source is None or source == "" else source
        source = _label(source, where, "'source' must not be empty")
        out.append(EvidenceEvent(event_type, payload, source, ts))
    return out


def parse_seqs(raw: Any) -> list[int]:
    """``linkEvidence``'s ``event_seqs``: a list of integers (checked against the chain by
    :func:`check_observed`)."""
    if not isinstance(raw, list):
        raise ValidationError("event_seqs", "'event_seqs' must be a list")
    for index, seq in enumerate(raw):
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise ValidationError(f"event_seqs.{index}", "must be an integer")
    return list(raw)


def check_observed(seqs: Sequence[int], records: Sequence[Mapping[str, Any]]) -> None:
    """Every seq exists once in the chain and names an ``observed`` record (CSTP's messages)."""
    seen: set[int] = set()
    for seq in seqs:
        if seq in seen:
            raise ValidationError(
                "event_seqs", f"event_seqs contains duplicate sequence number: {seq}"
            )
        seen.add(seq)
    classes = {r.get("seq"): r.get("evidence_class") for r in records}
    missing = sorted(seen - set(classes))
    if missing:
        raise ValidationError(
            "event_seqs", f"event_seqs references nonexistent sequences: {missing}"
        )
    wrong = sorted(seq for seq in seen if classes[seq] != OBSERVED)
    if wrong:
        raise ValidationError(
            "event_seqs",
            "event_seqs must only reference observed events; "
            f"sequences with wrong evidence_class: {wrong}",
        )


def chain_records(
    events: Sequence[EvidenceEvent],
    evidence_class: str,
    head: tuple[int, str] | None,
    now: str,
) -> list[dict[str, Any]]:
    """The records for ``events`` continuing the chain after ``head`` (``(seq, hash)``; ``None``
    for an empty chain), in CSTP's record shape; events without ``ts`` get ``now``."""
    if evidence_class not in CLASSES:
        raise ValidationError("evidence_class", f"must be one of {sorted(CLASSES)}")
    seq, prev_hash = head if head is not None else (0, "")
    out: list[dict[str, Any]] = []
    for event in events:
        seq += 1
        ts = now if event.ts is None else event.ts
        digest = record_hash(seq, ts, event.event_type, evidence_class, event.payload, prev_hash)
        out.append(
            {
                "seq": seq,
                "ts": ts,
                "source": event.source,
                "event_type": event.event_type,
                "evidence_class": evidence_class,
                "payload": event.payload,
                "prev_hash": prev_hash,
                "hash": digest,
            }
        )
        prev_hash = digest
    return out


# -- state --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Checkpoint:
    """A trusted head: written only by an export that found the chain intact."""

    generated_at: str
    head_seq: int
    head_hash: str
    format: str

    def to_payload(self) -> dict[str, Any]:
        return {
            "kind": CHECKPOINT,
            "generated_at": self.generated_at,
            "head_seq": self.head_seq,
            "head_hash": self.head_hash,
            "format": self.format,
            "chain_format": CHAIN_FORMAT,
        }


@dataclass(frozen=True)
class EvidenceState:
    """The chain's records in log order and the checkpoints, as the ledger holds them.

    Records are kept as logged (plain objects), so a hand-edited log that mangles one is
    reported by verification rather than refused while reading.
    """

    records: tuple[Mapping[str, Any], ...] = ()
    checkpoints: tuple[Checkpoint, ...] = ()

    @property
    def head(self) -> tuple[int, str] | None:
        """``(seq, hash)`` of the last record, ``None`` for an empty chain."""
        if not self.records:
            return None
        last = self.records[-1]
        return int(last.get("seq") or 0), str(last.get("hash") or "")

    @property
    def head_hash(self) -> str | None:
        head = self.head
        return None if head is None else head[1]

    def trusted(self) -> Checkpoint | None:
        """The latest checkpoint naming a record (CSTP ignores ``head_seq`` 0)."""
        for checkpoint in reversed(self.checkpoints):
            if checkpoint.head_seq > 0:
                return checkpoint
        return None


def evidence_state(entries: Iterable[Mapping[str, Any]]) -> EvidenceState:
    """Rebuild the evidence view from the ledger entries of the evidence operation
    (``graph.state.ledger(G, Operation.EVIDENCE)``), in log order."""
    records: list[Mapping[str, Any]] = []
    checkpoints: list[Checkpoint] = []
    for entry in entries:
        payload = entry.get("payload")
        if not isinstance(payload, Mapping):
            continue
        kind = payload.get("kind")
        if kind in (INGEST, ATTEST):
            logged = payload.get("records")
            if isinstance(logged, list):
                records.extend(r if isinstance(r, Mapping) else {} for r in logged)
        elif kind == CHECKPOINT:
            seq, digest = payload.get("head_seq"), payload.get("head_hash")
            if isinstance(seq, int) and isinstance(digest, str):
                stamp, fmt = payload.get("generated_at"), payload.get("format")
                checkpoints.append(Checkpoint(str(stamp), seq, digest, str(fmt)))
    return EvidenceState(tuple(records), tuple(checkpoints))


# -- verification -------------------------------------------------------------------------------
def _recomputed(record: Mapping[str, Any], prev_hash: str) -> str | None:
    """The hash ``record`` should carry after ``prev_hash`` (``None`` if it cannot have one)."""
    seq, ts = record.get("seq"), record.get("ts")
    event_type, evidence_class = record.get("event_type"), record.get("evidence_class")
    if isinstance(seq, bool) or not isinstance(seq, int):
        return None
    try:
        return _digest(seq, ts, event_type, evidence_class, record.get("payload"), prev_hash)
    except (TypeError, ValueError):
        return None


def _first_broken(records: Iterable[Mapping[str, Any]]) -> int | None:
    """The seq of the first record whose hash or link does not hold (``None``: all hold).

    A record without a usable seq is reported as the seq it should have had.
    """
    prev_hash = ""
    for position, record in enumerate(records, start=1):
        seq = record.get("seq")
        where = seq if isinstance(seq, int) and not isinstance(seq, bool) else position
        if _recomputed(record, prev_hash) != record.get("hash"):
            return where
        if record.get("prev_hash") != prev_hash:
            return where
        prev_hash = str(record.get("hash"))
    return None


def verify_chain(
    records: Sequence[Mapping[str, Any]], expected_head_hash: str | None = None
) -> int | None:
    """Verify the whole chain: ``None`` when intact, else the first broken seq; ``0`` when it
    is internally intact but its head is not ``expected_head_hash`` (the tail was cut)."""
    broken = _first_broken(records)
    if broken is not None:
        return broken
    head = records[-1].get("hash") if records else None
    if expected_head_hash is not None and head != expected_head_hash:
        return 0
    return None


def verify_at_checkpoint(
    records: Sequence[Mapping[str, Any]], checkpoint_seq: int, checkpoint_hash: str
) -> int | None:
    """Verify the records up to ``checkpoint_seq``; the chain may have grown since.

    ``None``: intact and the record at the checkpoint carries its hash; ``0``: that record is
    gone or carries another hash; any other number: the first record that does not hold.
    """
    prefix = [r for r in records if _seq_of(r) <= checkpoint_seq]
    at = [r for r in prefix if _seq_of(r) == checkpoint_seq]
    if not at:
        return 0
    broken = _first_broken(prefix)
    if broken is not None:
        return broken
    return None if at[-1].get("hash") == checkpoint_hash else 0


def _seq_of(record: Mapping[str, Any]) -> int:
    seq = record.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else 0


def seq_for_hash(records: Sequence[Mapping[str, Any]], digest: str) -> int | None:
    """The seq of the record carrying ``digest``, if any."""
    for record in records:
        if record.get("hash") == digest:
            return _seq_of(record)
    return None


@dataclass(frozen=True)
class ChainCheck:
    """What ``verifyEvidenceChain`` answers (CSTP's keys)."""

    intact: bool
    broken_at_seq: int | None
    head_hash: str | None
    expected_hash: str | None
    tail_check: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "intact": self.intact,
            "broken_at_seq": self.broken_at_seq,
            "head_hash": self.head_hash,
            "expected_hash": self.expected_hash,
            "tail_check": self.tail_check,
        }


def check_chain(state: EvidenceState, expected_head_hash: str | None = None) -> ChainCheck:
    """Verify against the caller's hash if given, else the trusted checkpoint if there is one,
    else internally only (``tail_check`` false: a cut tail would go unnoticed)."""
    records = state.records
    if expected_head_hash:
        seq = seq_for_hash(records, expected_head_hash)
        broken = 0 if seq is None else verify_at_checkpoint(records, seq, expected_head_hash)
        expected: str | None = expected_head_hash
        tail_check = True
    elif (trusted := state.trusted()) is not None:
        broken = verify_at_checkpoint(records, trusted.head_seq, trusted.head_hash)
        expected, tail_check = trusted.head_hash, True
    else:
        broken = verify_chain(records)
        expected, tail_check = None, False
    return ChainCheck(broken is None, broken, state.head_hash, expected, tail_check)


def bundle_events(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The records as an exported bundle lists them (CSTP's key order)."""
    keys = ("seq", "ts", "source", "event_type", "evidence_class", "prev_hash", "hash", "payload")
    return [{key: record.get(key) for key in keys} for record in records]
