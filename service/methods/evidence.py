"""The evidence chain (CSTP's provenance feature): ``ingestEvidence``, ``linkEvidence``,
``mapControls``, ``exportEvidenceBundle`` and ``verifyEvidenceChain``.

CSTP's provenance methods take snake_case params and answer in snake_case; so do these (the
camelCase twins of the params are accepted too). Differences from CSTP, on purpose:

- the chain lives in decigraph's hash-chained log, not a separate SQLite file, and
  ``verifyEvidenceChain`` also says whether that log is intact (``log_intact``);
- ``output_dir`` is a folder under ``<data-dir>/bundles`` (absolute paths and ``..`` refused)
  and ``mappings_dir`` must lie inside ``<data-dir>/controls``: CSTP writes and reads wherever
  the caller says;
- ``format`` ``pdf``/``both`` is refused (``-32602``): CSTP needs reportlab for it;
- values are checked as JSON types (a string ``has_outcome`` is refused, not taken as true).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service import usecases
from service.rpc.protocol import CallContext, Registry
from service.usecases import evidence as chain
from service.usecases.evidence import (
    ExportEvidenceBundle,
    IngestEvidence,
    LinkEvidence,
    MapControls,
    VerifyEvidenceChain,
)

from .params import Params, wire


class IngestEvidenceParams(Params, IngestEvidence):
    pass


class LinkEvidenceParams(Params, LinkEvidence):
    model_config = wire(
        decision_id=("decision_id", "decisionId"),
        event_seqs=("event_seqs", "eventSeqs"),
        has_outcome=("has_outcome", "hasOutcome"),
    )


class MapControlsParams(Params, MapControls):
    model_config = wire(mappings_dir=("mappings_dir", "mappingsDir"))


class ExportEvidenceBundleParams(Params, ExportEvidenceBundle):
    model_config = wire(
        mappings_dir=("mappings_dir", "mappingsDir"), output_dir=("output_dir", "outputDir")
    )


class VerifyEvidenceChainParams(Params, VerifyEvidenceChain):
    model_config = wire(expected_head_hash=("expected_head_hash", "expectedHeadHash"))


def register_evidence(registry: Registry, app: usecases.Decigraph) -> None:
    """Register the five evidence-chain methods."""

    def ingest(p: IngestEvidenceParams, ctx: CallContext) -> Mapping[str, Any]:
        done = chain.ingest_evidence(app, p, ctx.agent)
        return {"ingested": done.ingested, "head_hash": done.head_hash, "first_seq": done.first_seq}

    def link(p: LinkEvidenceParams, ctx: CallContext) -> Mapping[str, Any]:
        done = chain.link_evidence(app, p, ctx.agent)
        return {
            "linked": done.linked,
            "decision_id": done.decision_id,
            "attested_seq": done.attested_seq,
        }

    def map_controls(p: MapControlsParams, ctx: CallContext) -> Mapping[str, Any]:
        return chain.map_controls(app, p).to_dict()

    def export(p: ExportEvidenceBundleParams, ctx: CallContext) -> Mapping[str, Any]:
        done = chain.export_evidence_bundle(app, p, ctx.agent)
        return {
            "chain_head_hash": done.chain_head_hash,
            "chain_intact": done.chain_intact,
            "coverage": done.mapping.coverage(),
            "insufficient_evidence_count": len(done.mapping.insufficient_evidence),
            "attested_only_controls": done.mapping.attested_only_controls,
            "json_path": str(done.json_path),
        }

    def verify(p: VerifyEvidenceChainParams, ctx: CallContext) -> Mapping[str, Any]:
        done = chain.verify_evidence_chain(app, p)
        return {**done.chain.to_dict(), "log_intact": done.log_intact}

    registry.add("cstp.ingestEvidence", IngestEvidenceParams, ingest, writes=True)
    registry.add("cstp.linkEvidence", LinkEvidenceParams, link, writes=True)
    registry.add("cstp.mapControls", MapControlsParams, map_controls)
    registry.add("cstp.exportEvidenceBundle", ExportEvidenceBundleParams, export, writes=True)
    registry.add("cstp.verifyEvidenceChain", VerifyEvidenceChainParams, verify)
