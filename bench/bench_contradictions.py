"""Precision and recall of the contradiction verdict on the labelled pairs (issue 12, point 3).

``bench/contradictions/pairs.jsonl`` holds hand-written decision pairs: ``a`` is already
recorded, ``b`` is the new decision, ``contradicts`` says whether recording ``b`` should be
flagged as contradicting ``a``. Kinds: contradicting, negation, compatible, refinement,
same_tool_other_purpose, scoped_variant (labelled either way, see each row's note) and
restatement; splits ``dev`` (for looking at while working on the detector), ``test`` (the
figures the target is judged on), ``holdout`` (written after a first freeze) and ``holdout2``
(written after the final freeze, measured once: the least optimistic figure).

The real pipeline, the real model: a fresh app in a temporary directory
(``service.composition.open_app`` with ``MiniLMEmbedder``), every pair's ``a`` recorded in that
one store through ``record_decision`` (text + context, so the stored embedding carries the
context exactly as for an agent's write; ``skip_guardrails`` so that setup writes are never
refused), then for every ``b`` one call of ``service.usecases.gate.detect_contradictions``
with the candidate built from ``b``'s text and context and the statement's embedding, as the
gate computes it. A pair is predicted contradicting when its own ``a`` is among the detected
targets. Detections of *other* pairs' ``a`` are not in precision/recall; they are listed as
cross-pair flags (each one a potential false block, or a real conflict between two pairs'
decisions: the store is a pool of unrelated teams' decisions, not one consistent company).

``--pairs-only-store`` opens one fresh store per pair instead (only that pair's ``a``): slower,
no cross-pair flags, the detector judged without neighbours. Latency is of the
``detect_contradictions`` call alone (the statement's embedding is timed separately).

Usage: python bench/bench_contradictions.py [--pairs FILE] [--pairs-only-store] [--limit N]
       [--out bench/results/contradictions.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, summary
from retrieval.embedder import MiniLMEmbedder
from service.composition import open_app
from service.settings import Settings
from service.usecases import gate
from service.usecases.context import Decigraph
from service.usecases.inputs import RecordDecision
from service.usecases.writes import record_decision

if TYPE_CHECKING:
    from retrieval.autoedges import Suggestion

PAIRS = ROOT / "bench" / "contradictions" / "pairs.jsonl"
SPLITS = ("dev", "test", "holdout", "holdout2")
#: Files whose state decides the verdicts (hashed, not read, to say which detector was measured).
DETECTOR_FILES = (
    "service/usecases/gate.py",
    "retrieval/autoedges.py",
    "retrieval/conflicts.py",
    "retrieval/statements.py",
    "retrieval/stance*.py",
)
ACTOR = "bench-contradictions"
SETUP_REASON = "contradiction benchmark: recording the already-decided side of each pair"


def load_pairs(path: Path) -> list[dict[str, Any]]:
    pairs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ids = [p["id"] for p in pairs]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{path}: duplicate ids")
    return pairs


def detector_state() -> dict[str, Any]:
    """Which detector was measured: the commit, and a digest of each detector file's content."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True)
        return out.stdout

    files = {}
    for pattern in DETECTOR_FILES:
        for path in sorted(ROOT.glob(pattern)):
            files[str(path.relative_to(ROOT))] = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    # Porcelain lines are "XY path": the status is two columns, then a space.
    changed = git("status", "--porcelain", "--untracked-files=all", "--", *DETECTOR_FILES)
    return {
        "commit": git("rev-parse", "--short=12", "HEAD").strip() or "unknown",
        "detector_files_modified": sorted(line[3:] for line in changed.splitlines() if line),
        "detector_files_sha256": files,
    }


def settings_for(data: Path) -> Settings:
    # Everything explicit: no DECIGRAPH_* variable of the caller's shell leaks into the run.
    return Settings(
        data_dir=data,
        fsync="never",
        snapshot_every=0,
        chroma_url=None,
        guardrails_path=None,
        no_auth=True,
    )


def record_a(app: Decigraph, pair: dict[str, Any]) -> str:
    cmd = RecordDecision(text=pair["a"]["text"], context=pair["a"]["context"])
    return record_decision(app, cmd, ACTOR, skip_guardrails=SETUP_REASON).node.id


def detect(app: Decigraph, pair: dict[str, Any]) -> tuple[list[Suggestion], float, float]:
    """The detector's answer for ``b``; ms to embed the statement, ms to detect."""
    b = pair["b"]
    started = time.perf_counter()
    app.index.embed([b["text"]])  # for reference only: the detector reads no vector
    embedded = time.perf_counter()
    cand = gate.candidate({"text": b["text"], "context": b["context"]})
    found = gate.detect_contradictions(app, cand)
    done = time.perf_counter()
    return found, (embedded - started) * 1000.0, (done - embedded) * 1000.0


def run_shared(pairs: list[dict[str, Any]], embedder: MiniLMEmbedder, root: Path) -> dict[str, Any]:
    """Every ``a`` in one store, then every ``b`` against it."""
    app = open_app(settings_for(root / "data"), embedder)
    try:
        started = time.perf_counter()
        owner: dict[str, str] = {}  # node id -> pair id
        a_id: dict[str, str] = {}
        for pair in pairs:
            node = record_a(app, pair)
            a_id[pair["id"]], owner[node] = node, pair["id"]
        setup_s = time.perf_counter() - started
        for pair in pairs[:5]:  # warm-up, untimed
            detect(app, pair)
        answers, embed_ms, detect_ms = {}, [], []
        for pair in pairs:
            found, e_ms, d_ms = detect(app, pair)
            answers[pair["id"]] = found
            embed_ms.append(e_ms)
            detect_ms.append(d_ms)
        return {
            "store": "shared",
            "store_decisions": app.store.graph.number_of_nodes(),
            "setup_s": round(setup_s, 1),
            "answers": answers,
            "a_id": a_id,
            "owner": owner,
            "embed_ms": embed_ms,
            "detect_ms": detect_ms,
        }
    finally:
        app.close()


def run_per_pair(
    pairs: list[dict[str, Any]], embedder: MiniLMEmbedder, root: Path
) -> dict[str, Any]:
    """One fresh store per pair holding only that pair's ``a``."""
    answers, a_id, owner, embed_ms, detect_ms = {}, {}, {}, [], []
    started = time.perf_counter()
    for n, pair in enumerate(pairs):
        app = open_app(settings_for(root / f"pair{n}"), embedder)
        try:
            node = record_a(app, pair)
            a_id[pair["id"]], owner[node] = node, pair["id"]
            found, e_ms, d_ms = detect(app, pair)
        finally:
            app.close()
        answers[pair["id"]] = found
        embed_ms.append(e_ms)
        detect_ms.append(d_ms)
    return {
        "store": "per pair",
        "store_decisions": 1,
        "setup_s": round(time.perf_counter() - started, 1),
        "answers": answers,
        "a_id": a_id,
        "owner": owner,
        "embed_ms": embed_ms,
        "detect_ms": detect_ms,
    }


def confusion(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    tp = fp = fn = tn = 0
    for r in rows:
        if r["expected"] and r["predicted"]:
            tp += 1
        elif r["predicted"]:
            fp += 1
        elif r["expected"]:
            fn += 1
        else:
            tn += 1
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision is not None and recall is not None and precision + recall
        else None
    )

    def r3(x: float | None) -> float | None:
        return None if x is None else round(x, 3)

    total = tp + fp + fn + tn
    return {
        "pairs": total,
        "labelled_contradicting": tp + fn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": r3(precision),
        "recall": r3(recall),
        "f1": r3(f1),
        "accuracy": r3((tp + tn) / total) if total else None,
    }


def grouped(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    return {name: confusion(group) for name, group in sorted(groups.items())}


def scored(pairs: list[dict[str, Any]], run: dict[str, Any]) -> dict[str, Any]:
    by_id = {p["id"]: p for p in pairs}
    rows, errors, cross = [], [], []
    for pair in pairs:
        own = run["a_id"][pair["id"]]
        found = run["answers"][pair["id"]]
        mine = [s for s in found if s.target == own]
        row = {
            "id": pair["id"],
            "split": pair["split"],
            "kind": pair["kind"],
            "domain": pair["domain"],
            "expected": bool(pair["contradicts"]),
            "predicted": bool(mine),
        }
        rows.append(row)
        if row["expected"] != row["predicted"]:
            errors.append(
                {
                    "id": pair["id"],
                    "split": pair["split"],
                    "kind": pair["kind"],
                    "domain": pair["domain"],
                    "error": "false positive" if row["predicted"] else "false negative",
                    "a": pair["a"]["text"],
                    "a_has_context": pair["a"]["context"] is not None,
                    "b": pair["b"]["text"],
                    "detected": [{"reason": s.reason, "score": round(s.score, 3)} for s in mine],
                    "other_detections": len(found) - len(mine),
                    "note": pair["note"],
                }
            )
        for s in found:
            if s.target == own:
                continue
            other = run["owner"].get(s.target)
            target = by_id.get(other) if other else None
            cross.append(
                {
                    "id": pair["id"],
                    "kind": pair["kind"],
                    "b": pair["b"]["text"],
                    "flagged_pair": other,
                    "flagged_a": target["a"]["text"] if target else s.target,
                    "reason": s.reason,
                    "score": round(s.score, 3),
                }
            )
    results = {}
    for split in ("all", *SPLITS):
        part = [r for r in rows if split == "all" or r["split"] == split]
        results[split] = {
            **confusion(part),
            "by_kind": grouped(part, "kind"),
            "by_domain": grouped(part, "domain"),
        }
    return {
        "results": results,
        "errors": errors,
        "cross_pair_flags": {
            "count": len(cross),
            "pairs_with_any": len({c["id"] for c in cross}),
            "items": cross,
        },
    }


def dataset_summary(pairs: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    path = path.resolve()
    return {
        "file": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
        "pairs": len(pairs),
        "labelled_contradicting": sum(bool(p["contradicts"]) for p in pairs),
        "splits": dict(sorted(Counter(p["split"] for p in pairs).items())),
        "kinds": dict(sorted(Counter(p["kind"] for p in pairs).items())),
        "domains": dict(sorted(Counter(p["domain"] for p in pairs).items())),
        "a_with_context": sum(p["a"]["context"] is not None for p in pairs),
    }


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def print_tables(out: dict[str, Any]) -> None:
    print(f"store: {out['store']} ({out['store_decisions']} decisions)")
    print("| split | pairs | TP | FP | FN | TN | precision | recall | F1 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for split, r in out["results"].items():
        print(
            f"| {split} | {r['pairs']} | {r['tp']} | {r['fp']} | {r['fn']} | {r['tn']} | "
            f"{fmt(r['precision'])} | {fmt(r['recall'])} | {fmt(r['f1'])} |"
        )
    for table in ("by_kind", "by_domain"):
        print(f"\n{table} (all pairs)\n| name | pairs | TP | FP | FN | TN | accuracy |")
        print("|---|---|---|---|---|---|---|")
        for name, r in out["results"]["all"][table].items():
            print(
                f"| {name} | {r['pairs']} | {r['tp']} | {r['fp']} | {r['fn']} | {r['tn']} | "
                f"{fmt(r['accuracy'])} |"
            )
    print(f"\nerrors: {len(out['errors'])}")
    for e in out["errors"]:
        why = "; ".join(d["reason"] for d in e["detected"]) or "-"
        print(f"  {e['id']} [{e['split']}, {e['kind']}] {e['error']}: a={e['a']!r} b={e['b']!r}")
        print(f"      detected: {why}")
    cross = out["cross_pair_flags"]
    print(f"\ncross-pair flags: {cross['count']} (from {cross['pairs_with_any']} pairs)")
    for c in cross["items"]:
        print(f"  {c['id']} -> {c['flagged_pair']}: b={c['b']!r} flags a={c['flagged_a']!r}")
    lat = out["latency_ms"]["detect_contradictions"]
    print(f"\ndetect_contradictions: median {lat['median_ms']} ms, p95 {lat['p95_ms']} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--pairs-only-store", action="store_true", help="one fresh store per pair")
    parser.add_argument("--limit", type=int, default=None, help="only the first N pairs")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/contradictions.json")
    args = parser.parse_args()
    pairs = load_pairs(args.pairs)[: args.limit]
    embedder = MiniLMEmbedder()
    embedder.embed(["load the model before timing anything"])
    before = detector_state()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="decigraph-contradictions-") as tmp:
        runner = run_per_pair if args.pairs_only_store else run_shared
        run = runner(pairs, embedder, Path(tmp))
    out: dict[str, Any] = {
        "dataset": dataset_summary(pairs, args.pairs),
        "detector": {**before, "changed_during_run": detector_state() != before},
        "store": run["store"],
        "store_decisions": run["store_decisions"],
        "setup_s": run["setup_s"],
        "wall_s": round(time.perf_counter() - started, 1),
        "latency_ms": {
            "detect_contradictions": summary(run["detect_ms"], 2),
            "embed_statement": summary(run["embed_ms"], 2),
        },
        **scored(pairs, run),
    }
    print_tables(out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
