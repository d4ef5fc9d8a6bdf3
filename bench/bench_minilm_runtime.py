"""The lean MiniLM runtime without ``transformers``: start-up and throughput, old vs new.

``retrieval.minilm.LeanMiniLM`` used to run the encoder on ``transformers.BertModel``; it now
runs it on :mod:`retrieval.bert` (plain torch, the same vectors bit for bit). ``OldLeanMiniLM``
below is the previous class, kept here so both are measured in the same run, interleaved.

- ``startup``: a fresh ``python`` process per run (``OMP_NUM_THREADS=1``, as ``decigraph serve``
  runs the model), wall time from ``Popen`` to the first vector (``LeanMiniLM(path)`` +
  ``encode(['x'])``); per ``old`` (BertModel), ``new`` (retrieval.bert) and the floor ``torch``
  (``import torch`` alone), and ``embedder`` (``MiniLMEmbedder(threads=1).embed``, the
  server's path, on the new runtime). The modes rotate order every run.
- ``throughput``: in one process, both models loaded (1 torch thread), 300 short texts one at
  a time and in batches of 32 (``--rounds`` times), old and new alternating call by call (who
  goes first flips), with the median of the paired new/old ratios; the vectors of both are
  checked equal (``np.array_equal``).

The load average (``/proc/loadavg``) is recorded before and after: the host has 2 cores shared
with other jobs. Usage: python bench/bench_minilm_runtime.py [--runs 7] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.common import summary  # noqa: E402
from retrieval.minilm import LeanMiniLM, load_tokenizer  # noqa: E402


class OldLeanMiniLM(LeanMiniLM):
    """``retrieval.minilm.LeanMiniLM`` as it was: the encoder is ``transformers.BertModel``
    (same tokenizer, pooling and normalisation: only the encoder differs)."""

    def __init__(self, path: Path) -> None:
        import torch
        from transformers import BertModel

        self._torch = torch
        self._tokenizer, self.max_seq_length = load_tokenizer(path)
        model: Any = BertModel.from_pretrained(str(path), local_files_only=True).eval()

        def encoder(ids: Any, mask: Any, types: Any) -> Any:
            return model(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state

        self._model = encoder


CHILD = {
    "torch": "import torch",
    "new": (
        "import sys; sys.path.insert(0, {root!r}); "
        "from retrieval.embedder import bundled_model_path; "
        "from retrieval.minilm import LeanMiniLM; "
        "LeanMiniLM(bundled_model_path()).encode(['x'], 32); "
        "assert 'transformers' not in sys.modules"
    ),
    "old": (
        "import sys; sys.path.insert(0, {root!r}); "
        "from retrieval.embedder import bundled_model_path; "
        "from bench.bench_minilm_runtime import OldLeanMiniLM; "
        "OldLeanMiniLM(bundled_model_path()).encode(['x'], 32)"
    ),
    # What the server runs (bench_startup's model_only_process_lean): the embedder, new runtime.
    "embedder": (
        "import sys; sys.path.insert(0, {root!r}); "
        "from retrieval.embedder import MiniLMEmbedder; "
        "MiniLMEmbedder(threads=1).embed(['load the model and embed one sentence']); "
        "assert 'transformers' not in sys.modules"
    ),
}
ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def startup(runs: int) -> dict[str, Any]:
    """Fresh processes, modes rotated per run; seconds from Popen to exit after the first vector."""
    modes = list(CHILD)
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    env = {**os.environ, **ENV}
    for run in range(runs):
        for mode in modes[run % len(modes) :] + modes[: run % len(modes)]:
            code = CHILD[mode].format(root=str(ROOT))
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
            times[mode].append((time.perf_counter() - started) * 1000.0)
    return {mode: summary(values, 1) for mode, values in times.items()}


def ratio(times: dict[str, list[float]]) -> float:
    """Median over the paired calls of new time / old time (< 1: new faster)."""
    return round(
        statistics.median(b / a for a, b in zip(times["old"], times["new"], strict=True)), 3
    )


def throughput(rounds: int) -> dict[str, Any]:
    """Per-call times for 300 short texts one at a time and in batches of 32, old vs new."""
    import torch

    from retrieval.embedder import bundled_model_path

    torch.set_num_threads(1)
    path = bundled_model_path()
    models = {"old": OldLeanMiniLM(path), "new": LeanMiniLM(path)}
    rng = random.Random(3)
    words = [
        "use",
        "postgres",
        "kafka",
        "redis",
        "for",
        "the",
        "billing",
        "ledger",
        "cache",
        "because",
        "latency",
        "team",
    ]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 14))) for _ in range(300)]
    single: dict[str, list[float]] = {name: [] for name in models}
    batched: dict[str, list[float]] = {name: [] for name in models}
    vectors: dict[str, Any] = {}
    for name, model in models.items():  # warm-up
        vectors[name] = model.encode(texts, 32)
    assert np.array_equal(vectors["old"], vectors["new"])
    names = list(models)
    for round_ in range(rounds):  # old and new alternate call by call, the first one flipping
        for n, text in enumerate(texts):
            for name in names if (round_ + n) % 2 == 0 else names[::-1]:
                started = time.perf_counter()
                models[name].encode([text], 32)
                single[name].append((time.perf_counter() - started) * 1000.0)
        for n, start in enumerate(range(0, len(texts), 32)):
            for name in names if (round_ + n) % 2 == 0 else names[::-1]:
                began = time.perf_counter()
                models[name].encode(texts[start : start + 32], 32)
                batched[name].append((time.perf_counter() - began) * 1000.0)
    return {
        "texts": len(texts),
        "one_at_a_time_ms_per_text": {name: summary(values) for name, values in single.items()},
        "batch_of_32_ms_per_batch": {name: summary(values) for name, values in batched.items()},
        "paired_median_ratio_new_over_old": {
            "one_at_a_time": ratio(single),
            "batch_of_32": ratio(batched),
        },
        "texts_per_second_one_at_a_time": {
            name: round(1000.0 / statistics.median(values), 1) for name, values in single.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {"loadavg_before": loadavg()}
    result["startup_ms"] = startup(args.runs)
    result["loadavg_after_startup"] = loadavg()
    if not args.skip_throughput:
        result["throughput"] = throughput(args.rounds)
        result["loadavg_after"] = loadavg()
    out = ROOT / "bench" / "results" / "minilm_runtime.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
