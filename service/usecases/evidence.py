"""The evidence chain (CSTP's provenance feature): ingest observed events, link a decision to
them (an attested record), map the chain to controls, export an auditor's bundle and verify
the chain.

Evidence is events in decigraph's own log (see :mod:`graph.evidence`): each ingest or link is
one ledger event holding its records, appended under the store lock right after the chain's
head is read, so two concurrent batches can never fork the chain. ``decigraph verify`` and
every snapshot cover the evidence with the rest of the log.

Paths the caller names are confined, unlike CSTP's (which writes and reads wherever the caller
says): a bundle folder (``output_dir``) lies under ``<data-dir>/bundles``, and a rule folder
(``mappings_dir``) must lie inside ``<data-dir>/controls``.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from pydantic import Field

from graph.errors import StorageError, ValidationError
from graph.events import Operation
from graph.evidence import (
    ATTEST,
    ATTESTED,
    INGEST,
    LINK_EVENT_TYPE,
    MAX_LABEL,
    OBSERVED,
    ChainCheck,
    Checkpoint,
    EvidenceEvent,
    EvidenceState,
    bundle_events,
    chain_records,
    check_chain,
    check_observed,
    evidence_state,
    parse_events,
    parse_seqs,
)
from graph.evidence_rules import SHIPPED_RULES, MappingResult, apply_rules, load_rules
from graph.state import ledger
from graph.timeutil import format_ts, to_utc

from .context import Decigraph
from .inputs import Input

#: Folders under the data directory: bundles are written in the first, caller-chosen rule
#: files are read only from the second.
BUNDLES, CONTROLS = "bundles", "controls"
FORMATS = ("json", "pdf", "both")
MAX_PATH = 1_000


class IngestEvidence(Input):
    """A batch of observed events; each is checked by :func:`graph.evidence.parse_events` so
    the messages are CSTP's (``events`` is taken as sent, then validated as a whole)."""

    events: Any = None
    source: str = Field(default="external", min_length=1, max_length=MAX_LABEL)


class LinkEvidence(Input):
    decision_id: str | None = Field(default=None, max_length=MAX_LABEL)
    event_seqs: Any = Field(default_factory=list)
    stakes: str | None = Field(default=None, max_length=MAX_LABEL)
    has_outcome: bool = False


class MapControls(Input):
    mappings_dir: str | None = Field(default=None, max_length=MAX_PATH)


class ExportEvidenceBundle(MapControls):
    format: str = Field(default="json", max_length=MAX_LABEL)
    output_dir: str | None = Field(default=None, max_length=MAX_PATH)


class VerifyEvidenceChain(Input):
    expected_head_hash: str | None = Field(default=None, max_length=MAX_LABEL)


@dataclass(frozen=True)
class Ingested:
    ingested: int
    head_hash: str
    first_seq: int


@dataclass(frozen=True)
class Linked:
    linked: int
    decision_id: str
    attested_seq: int


@dataclass(frozen=True)
class Exported:
    chain_head_hash: str | None
    chain_intact: bool
    mapping: MappingResult
    json_path: Path
    checkpoint_seq: int | None


@dataclass(frozen=True)
class Verified:
    chain: ChainCheck
    log_intact: bool


def evidence(app: Decigraph) -> EvidenceState:
    """The chain and its checkpoints as the log holds them now."""
    with app.store.lock:
        return evidence_state(ledger(app.store.graph, Operation.EVIDENCE))


def ingest_evidence(app: Decigraph, request: IngestEvidence, actor: str) -> Ingested:
    """Append a batch of observed events as one ledger event: all of them or none.

    The whole batch is validated before the lock is taken; the head is read and the records
    appended in one critical section.
    """
    events = parse_events(request.events, request.source)
    with app.store.writing():
        head = evidence(app).head
        records = chain_records(events, OBSERVED, head, format_ts(app.store.now()))
        app.store.append_ledger(Operation.EVIDENCE, {"kind": INGEST, "records": records}, actor)
    return Ingested(len(records), str(records[-1]["hash"]), int(records[0]["seq"]))


def link_evidence(app: Decigraph, request: LinkEvidence, actor: str) -> Linked:
    """Append the agent's claim that ``decision_id`` rests on the observed ``event_seqs``.

    As in CSTP the decision id is not looked up: an attested record is the agent's word, and
    the decision may live in another store.
    """
    if not request.decision_id:
        raise ValidationError("decision_id", "'decision_id' is required")
    seqs = parse_seqs(request.event_seqs)
    payload: dict[str, Any] = {
        "decision_id": request.decision_id,
        "event_seqs": seqs,
        "has_outcome": request.has_outcome,
    }
    if request.stakes:
        payload["stakes"] = request.stakes
    claim = EvidenceEvent(LINK_EVENT_TYPE, payload, f"cstp:{actor}")
    with app.store.writing():
        state = evidence(app)
        check_observed(seqs, state.records)
        records = chain_records([claim], ATTESTED, state.head, format_ts(app.store.now()))
        app.store.append_ledger(Operation.EVIDENCE, {"kind": ATTEST, "records": records}, actor)
    return Linked(len(seqs), request.decision_id, int(records[0]["seq"]))


def map_controls(app: Decigraph, request: MapControls) -> MappingResult:
    """Map every record of the chain to the controls of the rule files."""
    rules = load_rules(rules_dir(app, request.mappings_dir))
    return apply_rules(evidence(app).records, rules)


def verify_evidence_chain(app: Decigraph, request: VerifyEvidenceChain) -> Verified:
    """Recompute the evidence chain (against the caller's hash, else the trusted checkpoint)
    and re-read decigraph's whole log (its own hash chain and a full replay)."""
    chain = check_chain(evidence(app), request.expected_head_hash)
    return Verified(chain, app.store.verify().ok)


def export_evidence_bundle(app: Decigraph, request: ExportEvidenceBundle, actor: str) -> Exported:
    """Write the auditor's bundle (JSON) and, when the chain is intact, trust its head.

    The chain is verified against the last trusted checkpoint (it may have grown since) or,
    without one, as a whole. Only an intact, non-empty chain gets a new checkpoint, so a
    tampered chain never becomes the trusted state. The file is written before the checkpoint:
    a failed write trusts nothing.
    """
    fmt = request.format.lower()
    if fmt not in FORMATS:
        raise ValidationError(
            "format", f"Unsupported bundle format: {fmt!r}. Must be 'json', 'pdf', or 'both'."
        )
    if fmt != "json":  # CSTP renders PDF with reportlab, which decigraph does not ship
        raise ValidationError(
            "format", f"{fmt!r} needs a PDF renderer decigraph does not have; ask for 'json'"
        )
    rules = load_rules(rules_dir(app, request.mappings_dir))  # refused before any folder exists
    folder = bundle_dir(app, request.output_dir)
    with app.store.lock:
        state = evidence(app)
        now = app.store.now()
    check = check_chain(state)  # against the trusted checkpoint, else the whole chain
    mapping = apply_rules(state.records, rules)
    bundle = {
        "version": "1.0",
        "tool_version": "cstp-f055",
        "generated_at": format_ts(now),
        "chain_head_hash": state.head_hash,
        "chain_intact": check.intact,
        "coverage": mapping.coverage(),
        "total_events": len(state.records),
        "insufficient_evidence_count": len(mapping.insufficient_evidence),
        "attested_only_controls": mapping.attested_only_controls,
        "events": bundle_events(state.records),
        "mappings": mapping.mappings,
        "insufficient_evidence": mapping.insufficient_evidence,
        "unmapped": mapping.unmapped,
    }
    path = _write_new(folder, now, bundle)
    checkpoint_seq: int | None = None
    if check.intact and state.head is not None:
        checkpoint_seq, head_hash = state.head
        mark = Checkpoint(format_ts(now), checkpoint_seq, head_hash, fmt)
        app.store.append_ledger(Operation.EVIDENCE, mark.to_payload(), actor)
    return Exported(state.head_hash, check.intact, mapping, path, checkpoint_seq)


# -- paths --------------------------------------------------------------------------------------
def rules_dir(app: Decigraph, mappings_dir: str | None) -> Path:
    """The rule folder to read: the shipped rules, or a folder inside ``<data-dir>/controls``
    (a relative name is taken from there; symlinks are resolved before the check)."""
    if not mappings_dir:
        return SHIPPED_RULES
    root = (app.store.data_dir / CONTROLS).resolve()
    given = Path(mappings_dir)
    target = (given if given.is_absolute() else root / given).resolve()
    if not target.is_relative_to(root):
        raise ValidationError(
            "mappings_dir",
            "must name a folder inside the data directory's 'controls' folder "
            "(decigraph reads caller-chosen rule files only there)",
        )
    if not target.is_dir():
        raise ValidationError("mappings_dir", f"{mappings_dir!r} is not a folder of rule files")
    return target


def bundle_dir(app: Decigraph, output_dir: str | None) -> Path:
    """The folder a bundle goes to: ``<data-dir>/bundles``, or a relative folder under it.

    CSTP's default (``bundles``) names that folder itself; absolute paths and ``..`` are
    refused, and a symlink leading out of it is refused after the folder is made.
    """
    root = app.store.data_dir / BUNDLES
    parts: list[str] = []
    if output_dir:
        if PurePosixPath(output_dir).is_absolute() or PureWindowsPath(output_dir).drive:
            raise ValidationError("output_dir", "must be a relative folder (under 'bundles')")
        parts = [p for p in PurePosixPath(output_dir.replace("\\", "/")).parts if p != "."]
        if ".." in parts:
            raise ValidationError("output_dir", "must not leave the 'bundles' folder ('..')")
        if parts[:1] == [BUNDLES]:
            parts = parts[1:]
    target = root.joinpath(*parts)
    try:
        target.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise ValidationError("output_dir", f"{output_dir!r} is a file, not a folder") from None
    except OSError as exc:
        raise StorageError(exc.errno, f"cannot create the bundle folder: {exc.strerror}") from exc
    if not target.resolve().is_relative_to(root.resolve()):
        raise ValidationError("output_dir", "leads out of the 'bundles' folder")
    return target


def _write_new(folder: Path, now: datetime, bundle: dict[str, Any]) -> Path:
    """Write ``bundle`` to a new file (exclusive create, owner-only), named as CSTP names it:
    ``bundle_<YYYYmmddTHHMMSS>_<microseconds>_<8 hex>Z.json``."""
    text = json.dumps(bundle, indent=2, ensure_ascii=False)
    stamp = to_utc(now)
    for _ in range(3):  # a name collision needs the same microsecond and 32 random bits
        name = f"bundle_{stamp:%Y%m%dT%H%M%S}_{stamp.microsecond:06d}_{secrets.token_hex(4)}Z"
        path = folder / f"{name}.json"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise StorageError(exc.errno, f"cannot write the bundle: {exc.strerror}") from exc
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            path.unlink(missing_ok=True)
            raise StorageError(exc.errno, f"cannot write the bundle: {exc.strerror}") from exc
        return path
    raise StorageError(errno.EEXIST, "cannot write the bundle: no free file name")
