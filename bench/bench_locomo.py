"""LoCoMo evidence recall: intent-weighted hybrid recall against its baselines, same run.

Each conversation of ``../shared/data/locomo-dev.json`` goes into its own fresh store (embedded
ChromaDB, real MiniLM): every dialog turn is a memory item ("<speaker>: <text>", plus
"[image: <caption>]"), with the speaker as source, the session date as time and the dia_id as
external id, written through the normal write path (so auto-edges are derived as for any
client). Each question of category 1-4 with valid evidence is answered with ``recall``;
recall@k = |evidence in top k| / |evidence|, averaged.

Baselines computed in the same run over the same items: vector only (cosine, same model),
BM25 (k1 1.5, b 0.75, lowercase alphanumeric tokens) and their reciprocal-rank fusion (k 60),
as the data README defines them. Nothing here is keyed to the dataset's names or phrasings.

Usage: python bench/bench_locomo.py [--data PATH] [--conversations N] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graph.drafts import MemoryDraft
from graph.ids import IdSource
from graph.store import DecisionStore, StoreOptions
from retrieval.embedder import MiniLMEmbedder
from retrieval.index import DualIndex
from retrieval.keyword import KeywordIndex
from retrieval.recall import recall
from retrieval.vector import ChromaVectorIndex
from retrieval.writes import remember_many

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 20)
_PLAIN = re.compile(r"[a-z0-9]+")

Ranker = Callable[[str], list[str]]  # question -> external ids, best first


def session_time(raw: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" -> an aware UTC datetime."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_conversation(sample: dict[str, Any]) -> tuple[list[MemoryDraft], list[dict[str, Any]]]:
    conv = sample["conversation"]
    drafts: list[MemoryDraft] = []
    n = 1
    while f"session_{n}" in conv:
        when = session_time(conv[f"session_{n}_date_time"])
        for turn in conv[f"session_{n}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            drafts.append(
                MemoryDraft(
                    text=text, source=turn["speaker"], occurred_at=when, external_id=turn["dia_id"]
                )
            )
        n += 1
    known = {d.external_id for d in drafts}
    questions = []
    for qa in sample["qa"]:
        evidence = [e for e in qa.get("evidence", []) if e in known]
        if qa["category"] in CATEGORIES and evidence:
            questions.append(
                {"q": qa["question"], "evidence": evidence, "category": qa["category"]}
            )
    return drafts, questions


def _rrf(*rankings: list[str], k: int = 60) -> list[str]:
    fused: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] += 1.0 / (k + rank)
    return sorted(fused, key=lambda i: (-fused[i], i))


def baselines(index: DualIndex, external: dict[str, str]) -> dict[str, Ranker]:
    plain = KeywordIndex(k1=1.5, b=0.75)
    for node_id in sorted(index.store.graph.nodes):
        plain.upsert_terms(node_id, _PLAIN.findall(index.store.get(node_id).text.lower()))
    depth = max(KS)

    def vector(q: str) -> list[str]:
        v = index.embed([q])[0]
        return [external[i] for i, _ in index.matrix.nearest(v, depth * 3)]

    def bm25(q: str) -> list[str]:
        return [external[i] for i, _ in plain.query_terms(_PLAIN.findall(q.lower())).top(depth * 3)]

    return {
        "vector only": vector,
        "BM25 only": bm25,
        "RRF(vector, BM25)": lambda q: _rrf(vector(q), bm25(q)),
    }


def score(
    rows: dict[str, list[tuple[int, list[float]]]],
    name: str,
    ranking: list[str],
    qa: dict[str, Any],
) -> None:
    wanted = set(qa["evidence"])
    recalls = [len(wanted & set(ranking[:k])) / len(wanted) for k in KS]
    rows[name].append((qa["category"], recalls))


def summarise(rows: list[tuple[int, list[float]]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for i, k in enumerate(KS):
        out[f"R@{k}"] = sum(r[i] for _, r in rows) / len(rows)
    for category, label in CATEGORIES.items():
        mine = [r[1] for c, r in rows if c == category]
        out[f"{label} R@10"] = sum(mine) / len(mine) if mine else 0.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path("bench/results/locomo.json"))
    parser.add_argument("--conversations", type=int, default=None, help="only the first N")
    args = parser.parse_args()
    samples = json.loads(args.data.read_text())[: args.conversations]
    embedder = MiniLMEmbedder()
    embedder.embed(["load the model before timing anything"])
    rows: dict[str, list[tuple[int, list[float]]]] = defaultdict(list)
    ingest_seconds = recall_ms = embed_seconds = 0.0
    items = questions_total = 0
    intents: dict[str, int] = defaultdict(int)
    for sample in samples:
        drafts, questions = load_conversation(sample)
        started = time.perf_counter()
        embedder.embed([d.text for d in drafts])  # the physical limit of the write path
        embed_seconds += time.perf_counter() - started
        with tempfile.TemporaryDirectory() as tmp:
            # Seeded ids: ties are broken by id, so fresh random ids would move tied results.
            store = DecisionStore.open(
                Path(tmp) / "data", StoreOptions(fsync="never"), ids=IdSource(1)
            )
            index = DualIndex.open(
                store, embedder, ChromaVectorIndex.persistent(Path(tmp) / "chroma")
            )
            started = time.perf_counter()
            results = remember_many(index, drafts, "locomo")
            index.flush()
            ingest_seconds += time.perf_counter() - started
            external = {r.node.id: str(r.node.external_id) for r in results}
            now = max(d.occurred_at for d in drafts if d.occurred_at)
            rankers = baselines(index, external)
            for qa in questions:
                answer = recall(index, qa["q"], limit=max(KS), now=now)
                recall_ms += answer.query_time_ms
                intents[answer.intent.value] += 1
                score(rows, "hybrid recall (decigraph)", [external[h.id] for h in answer.hits], qa)
                for name, ranker in rankers.items():
                    score(rows, name, ranker(qa["q"]), qa)
            items += len(drafts)
            questions_total += len(questions)
            problems = index.check_consistency()
            assert not problems, problems
            index.close()
            store.close()
        print(f"{sample['sample_id']}: {len(drafts)} items, {len(questions)} questions", flush=True)
    table = {name: summarise(r) for name, r in rows.items()}
    report = {
        "data": str(args.data.name),
        "conversations": len(samples),
        "items": items,
        "questions": questions_total,
        "ingest_items_per_s": round(items / ingest_seconds, 1),
        "embedding_only_items_per_s": round(items / embed_seconds, 1),
        "recall_mean_ms": round(recall_ms / questions_total, 2),
        "intents": dict(sorted(intents.items())),
        "results": {name: {k: round(v, 3) for k, v in s.items()} for name, s in table.items()},
    }
    header = ["method", *[f"R@{k}" for k in KS], *[f"{v} R@10" for v in CATEGORIES.values()]]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, s in table.items():
        print(f"| {name} | " + " | ".join(f"{s[h]:.3f}" for h in header[1:]) + " |")
    print(json.dumps({k: v for k, v in report.items() if k != "results"}))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
