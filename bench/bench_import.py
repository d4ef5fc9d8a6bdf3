"""Bulk import throughput (`decigraph import FILE.jsonl`) next to raw embedding throughput.

For each shape of line, ``--items`` seeded lines are written to a JSONL file and imported into
an empty data directory by the real CLI (a subprocess: parse and validate every line, embed in
batches, derive auto-edges, append one fdatasync-ed event per item, index, flush ChromaDB,
snapshot). Shapes:

- ``decisions, text only``: ``{"decision": ...}`` plus category, stakes, tags, project;
- ``decisions with context``: the same plus CSTP's ``context`` (embedded with the statement);
- ``memory items``: ``{"text", "source", "occurredAt", "externalId"}``, like a chat log.

Decisions pass the guardrails like ``recordDecision`` (rules and the graph constraint, which
read statements, not vectors: each line embeds one text); lines the guardrails refuse are
counted (``refused_by_guardrails``), not fatal.

Throughput is items created / wall time of the command, and the steady rate between the
command's first and last progress report (one per batch of 64 lines: without start-up, model
load and close). A one-line import gives the command's fixed cost in the same run.

Baseline (the physical limit of the write path): ``MiniLMEmbedder.embed`` on exactly the texts
the indexes embed for those lines (statement, or statement + context as one text), in the
import's batches of 64 lines (32 texts per forward pass, as the embedder does), in this
process, warm, on the
same number of torch threads as the import, in the same run, just before each import.

The import embeds the next batch in a worker thread while the current one is written
(``service.usecases.prefetch``); every shape is imported twice, interleaved, with that overlap
on (the figures) and off (``DECIGRAPH_IMPORT_PIPELINE=0``: ``without_pipeline``). The main
figures run torch on ``DECIGRAPH_TORCH_THREADS=1`` (the service's default); ``--threads 1 0``
adds a pass on torch's default thread count (``0``), under ``torch_threads_<n>``. Per-batch
times (between two progress reports; embedding baseline per batch) come as median and p95.
With the pipeline each shape is imported ``--repeats`` times (3), each beside its own baseline;
the repeat with the median share stands for the shape and every share is kept
(``share_of_each_repeat``): a single import on a shared 2-core host varies by up to 20 points.
The load average before and after is recorded: other processes share the cores.

Usage: python bench/bench_import.py [--items 2000] [--seed 5] [--threads 1 [0]] [--repeats 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, summary
from bench.dataset import TEAMS, draft_for
from retrieval.embedder import MiniLMEmbedder
from retrieval.text import compose_embedding_text

PIPE = subprocess.PIPE
PROGRESS = re.compile(r"imported (\d+),")
CREATED = re.compile(r"(\d+) recorded")
BAD = re.compile(r"(\d+) refused")
ERROR_LINE = re.compile(r"^  line \d+: (?:refused|invalid): (.*)$", re.MULTILINE)
SHAPES = ("decisions, text only", "decisions with context", "memory items")
BATCH = 64  # lines per import batch (service.usecases.bulk.BATCH)


def lines_for(shape: str, count: int, seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSONL objects and the texts the indexes will embed for them."""
    rng = random.Random(seed)
    start = datetime(2025, 3, 1, 9, tzinfo=UTC)
    objects: list[dict[str, Any]] = []
    texts: list[str] = []
    for i in range(count):
        draft = draft_for(rng)
        if shape == "memory items":
            team = rng.choice(TEAMS)
            when = start + timedelta(minutes=7 * i)
            text = f"{team}: {draft.text}, said during the weekly review"
            obj = {"text": text, "source": team, "occurredAt": when.isoformat()}
            objects.append({**obj, "externalId": f"m{i}"})
            texts.append(text)
            continue
        obj: dict[str, Any] = {
            "decision": f"{draft.text} (item {i})",
            "category": str(draft.category),
            "stakes": str(draft.stakes),
            "tags": draft.tags,
            "project": draft.project,
        }
        if shape == "decisions with context":
            obj["context"] = draft.context
        objects.append(obj)
        texts.append(compose_embedding_text(obj["decision"], obj.get("context"), None))
    return objects, texts


def cli_import(path: Path, data: Path, threads: int = 1, pipeline: bool = True) -> dict[str, Any]:
    """Run the import; wall time, items created, and the rate between its first and last batch.

    The CLI reports progress on stderr after every batch of 64 lines; the time at which each
    report arrives gives the steady rate, without start-up, model load and close.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("DECIGRAPH_")}
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # the child sets them from its setting
        env.pop(key, None)
    env["DECIGRAPH_TORCH_THREADS"] = str(threads)
    env["DECIGRAPH_IMPORT_PIPELINE"] = "1" if pipeline else "0"
    command = [sys.executable, "-m", "service.cli", "import", str(path), "--data-dir", str(data)]
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=PIPE, stderr=PIPE)
    assert proc.stderr is not None
    assert proc.stdout is not None
    marks: list[tuple[float, int]] = []
    buffer = ""
    while chunk := os.read(proc.stderr.fileno(), 65536).decode(errors="replace"):
        now = time.perf_counter()
        buffer += chunk
        *done, buffer = re.split(r"[\r\n]", buffer)
        marks += [(now, int(m.group(1))) for line in done if (m := PROGRESS.match(line))]
    stdout = proc.stdout.read().decode()
    wall = time.perf_counter() - started
    # Lines the guardrails refuse are reported, not fatal: the import is gated like
    # recordDecision, so a refusal is part of the measured path (counted as `refused`).
    errors = ERROR_LINE.findall(stdout)
    gated = bool(errors) and all(e.startswith("blocked by guardrails") for e in errors)
    if proc.wait() != 0 and not gated:
        raise RuntimeError(f"decigraph import failed ({proc.returncode}): {stdout[-2000:]}")
    created = int(m.group(1)) if (m := CREATED.search(stdout)) else 0
    refused = int(m.group(1)) if (m := BAD.search(stdout)) else 0
    out: dict[str, Any] = {
        "created": created,
        "refused": refused,
        "wall_s": wall,
        "steady_per_s": None,
        "batch_ms": None,
    }
    if len(marks) >= 3 and marks[-1][0] > marks[0][0]:
        out["steady_per_s"] = (marks[-1][1] - marks[0][1]) / (marks[-1][0] - marks[0][0])
        gaps = [(b[0] - a[0]) * 1000.0 for a, b in itertools.pairwise(marks)]
        out["batch_ms"] = summary(gaps, 1)
    return out


def embed_baseline(embedder: MiniLMEmbedder, texts_per_line: list[list[str]]) -> dict[str, Any]:
    """Embedding alone, warm, in the import's batches of lines: rate and per-batch times."""
    times: list[float] = []
    for start in range(0, len(texts_per_line), BATCH):
        flat = [t for group in texts_per_line[start : start + BATCH] for t in group]
        began = time.perf_counter()
        embedder.embed(flat)
        times.append((time.perf_counter() - began) * 1000.0)
    return {"per_s": len(texts_per_line) / (sum(times) / 1000.0), "batch_ms": summary(times, 1)}


def figures(run: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    steady = run["steady_per_s"]
    return {
        "created": run["created"],
        "refused_by_guardrails": run["refused"],
        "import_wall_s": round(run["wall_s"], 2),
        "import_items_per_s": round(run["created"] / run["wall_s"], 1),
        "import_steady_items_per_s": None if steady is None else round(steady, 1),
        "import_batch_ms": run["batch_ms"],
        "embedding_only_items_per_s": round(base["per_s"], 1),
        "embedding_batch_ms": base["batch_ms"],
        "steady_share_of_embedding_rate": None
        if steady is None
        else round(steady / base["per_s"], 2),
    }


def measure_shapes(
    root: Path, args: argparse.Namespace, threads: int, embedder: MiniLMEmbedder, tag: str
) -> dict[str, Any]:
    import torch

    torch.set_num_threads(threads or args.default_threads)
    shapes: dict[str, Any] = {}
    for n, shape in enumerate(SHAPES):
        objects, _ = lines_for(shape, args.items, args.seed + n)
        path = root / f"{tag}-shape{n}.jsonl"
        path.write_text("".join(json.dumps(o) + "\n" for o in objects))
        per_line = [texts_of(o) for o in objects]
        row: dict[str, Any] = {"lines": len(objects)}
        repeats: list[dict[str, Any]] = []
        modes = [False] if args.compare else []  # old once, then new --repeats times
        for k, pipeline in enumerate([*modes, *[True] * args.repeats]):
            base = embed_baseline(embedder, per_line)
            run = cli_import(path, root / f"{tag}-data{n}-{k}", threads, pipeline)
            if pipeline:
                repeats.append(figures(run, base))
            else:
                row["without_pipeline"] = figures(run, base)
        # The repeat with the median share stands for the shape; every share is kept, since
        # one import on a shared 2-core host can land 20 points either side.
        shares = [r["steady_share_of_embedding_rate"] or 0.0 for r in repeats]
        middle = sorted(range(len(repeats)), key=lambda i: (shares[i], i))[len(repeats) // 2]
        row.update(repeats[middle])
        row["share_of_each_repeat"] = shares
        shapes[shape] = row
        print(f"threads={threads}", shape, json.dumps(row), flush=True)
    return shapes


def texts_of(obj: dict[str, Any]) -> list[str]:
    """What the import embeds for a line: the text, or the decision's stored text."""
    if "text" in obj:
        return [obj["text"]]
    return [compose_embedding_text(obj["decision"], obj.get("context"), None)]


def _torch_default_threads() -> int:
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.pop(key, None)
    import torch

    return int(torch.get_num_threads())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--no-compare", dest="compare", action="store_false", help="skip the pipeline-off run"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="imports per shape with the pipeline (median)"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/import.json"))
    args = parser.parse_args()
    args.default_threads = _torch_default_threads()
    embedder = MiniLMEmbedder()
    embedder.embed(["load the model before timing anything"])
    results: dict[str, Any] = {
        "items": args.items,
        "seed": args.seed,
        "torch_threads": args.threads[0],
        "torch_default_threads": args.default_threads,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory(prefix="decigraph-import-") as tmp:
        root = Path(tmp)
        one = root / "one.jsonl"
        one.write_text(json.dumps({"decision": "Measure the import command's fixed cost"}) + "\n")
        results["one_line_import_s"] = round(
            cli_import(one, root / "fixed", args.threads[0])["wall_s"], 2
        )
        for k, threads in enumerate(args.threads):
            shapes = measure_shapes(root, args, threads, embedder, f"t{threads}")
            if k == 0:
                results["shapes"] = shapes
            else:
                results[f"torch_threads_{threads}"] = {"threads": threads, "shapes": shapes}
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
