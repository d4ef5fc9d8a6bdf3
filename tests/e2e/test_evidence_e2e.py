"""The evidence chain over the real server (CSTP's F055): a release's pull-request events
ingested, a decision linked to them, controls mapped, a bundle exported under the data
directory, the chain verified (by decigraph and by a CSTP-style verifier reading the bundle),
hostile input refused as -32602, and ``decigraph verify`` replaying the log that holds it all."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_rpc_e2e import ROOT
from tests.support.rpc import serving, written

TOKEN = "evidence-e2e-token-0123456789"

RELEASE: list[dict[str, Any]] = [
    {
        "event_type": "pr_opened",
        "ts": "2026-02-02T10:00:00+00:00",
        "payload": {"pr_number": 88, "title": "Cache FX rates for 60 s", "is_agent_authored": True},
    },
    {
        "event_type": "pr_review_approved",
        "ts": "2026-02-02T13:30:00+00:00",
        "payload": {"pr_number": 88, "reviewer": "a.okafor", "actor_is_human": True},
    },
    {
        "event_type": "pr_merged",
        "ts": "2026-02-02T14:05:00+00:00",
        "payload": {"pr_number": 88, "is_agent_authored": True, "human_approval_count": 1},
    },
    {
        "event_type": "pr_merged",
        "ts": "2026-02-03T02:12:00+00:00",
        "payload": {
            "pr_number": 91,
            "title": "Bump löwe-client to 2.4",
            "is_agent_authored": True,
            "human_approval_count": 0,
        },
    },
]


def cstp_verify(events: list[dict[str, Any]]) -> bool:
    """A CSTP-side verifier: recompute every hash of a bundle's events from its documentation."""
    prev = ""
    for event in events:
        fields = ("seq", "ts", "event_type", "evidence_class", "payload")
        preimage = {key: event[key] for key in fields} | {"prev_hash": prev}
        text = json.dumps(preimage, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        if event["prev_hash"] != prev or hashlib.sha256(text.encode()).hexdigest() != event["hash"]:
            return False
        prev = event["hash"]
    return True


def test_evidence_chain_end_to_end(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving(data, TOKEN) as rpc:
        ingested = rpc.ok("cstp.ingestEvidence", {"events": RELEASE, "source": "github:acme/fx"})
        assert (ingested["ingested"], ingested["first_seq"]) == (4, 1)
        claim = {"decision_id": "5e1f0c2a", "event_seqs": [1, 2, 3], "has_outcome": True}
        linked = rpc.ok("cstp.linkEvidence", {**claim, "stakes": "medium"})
        assert written(linked) == {"linked": 3, "decision_id": "5e1f0c2a", "attested_seq": 5}

        mapped = rpc.ok("cstp.mapControls", {})
        assert mapped["coverage"]["observed"]["total_events"] == 4
        assert mapped["coverage"]["attested"]["coverage_pct"] == 100.0
        gaps = {(g["seq"], g["rule_id"]) for g in mapped["insufficient_evidence"]}
        assert (4, "SR117-IMP-GAP-01") in gaps  # the agent's bump merged without a human
        assert "SR11-7 VI.outcome-analysis" in mapped["attested_only_controls"]

        exported = rpc.ok(
            "cstp.exportEvidenceBundle", {"format": "json", "output_dir": "bundles/2026-02"}
        )
        path = Path(exported["json_path"])
        assert path.parent == data / "bundles" / "2026-02"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        bundle = json.loads(path.read_text(encoding="utf-8"))
        assert bundle["chain_intact"] is True
        assert bundle["total_events"] == 5
        assert cstp_verify(bundle["events"])
        assert bundle["events"][-1]["hash"] == exported["chain_head_hash"]

        verified = rpc.ok("cstp.verifyEvidenceChain", {})
        assert verified == {
            "intact": True,
            "broken_at_seq": None,
            "head_hash": exported["chain_head_hash"],
            "expected_hash": exported["chain_head_hash"],
            "tail_check": True,
            "log_intact": True,
        }
        unknown = rpc.ok("cstp.verifyEvidenceChain", {"expected_head_hash": "f" * 64})
        assert (unknown["intact"], unknown["broken_at_seq"]) == (False, 0)

        hostile: list[tuple[str, dict[str, Any], str]] = [
            ("cstp.ingestEvidence", {"events": {"event_type": "pr_opened"}}, "events"),
            ("cstp.ingestEvidence", {"events": [{"event_type": "x", "payload": [1]}]}, "events.0"),
            ("cstp.ingestEvidence", {"events": [{"event_type": 7}]}, "events.0"),
            ("cstp.linkEvidence", {"decision_id": "5e1f0c2a", "event_seqs": [5]}, "event_seqs"),
            ("cstp.linkEvidence", {"decision_id": "5e1f0c2a", "has_outcome": "yes"}, "has_outcome"),
            ("cstp.exportEvidenceBundle", {"output_dir": "/etc"}, "output_dir"),
            ("cstp.exportEvidenceBundle", {"output_dir": "../../tmp"}, "output_dir"),
            ("cstp.exportEvidenceBundle", {"format": "pdf"}, "format"),
            ("cstp.mapControls", {"mappings_dir": "/"}, "mappings_dir"),
            ("cstp.verifyEvidenceChain", {"expected_head_hash": ["x"]}, "expected_head_hash"),
        ]
        for method, params, field in hostile:
            answer = rpc.call(method, params)
            assert answer.get("error", {}).get("code") == -32602, (method, params, answer)
            assert answer["error"]["data"]["field"] == field, answer
        after = rpc.ok("cstp.verifyEvidenceChain", {})
        assert after["head_hash"] == exported["chain_head_hash"]  # nothing refused was written

        bare = httpx.post(
            f"{rpc.url}/cstp",
            json={"jsonrpc": "2.0", "id": 1, "method": "cstp.mapControls", "params": {}},
        )
        assert bare.status_code == 401

    # The log the server wrote holds the evidence and replays cleanly.
    env = {**os.environ, "DECIGRAPH_FSYNC": "never"}
    command = [sys.executable, "-m", "service.cli", "verify", "--data-dir", str(data), "--json"]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
