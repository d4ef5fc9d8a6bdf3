"""The lean runtime (:mod:`retrieval.minilm`) gives the vectors ``sentence_transformers`` gives,
bit for bit: the stored vectors and every ranking stay what they were. Its encoder
(:mod:`retrieval.bert`) gives ``transformers.BertModel``'s hidden states bit for bit, and the
runtime imports neither ``transformers`` nor ``sentence_transformers``."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval.embedder import MiniLMEmbedder, bundled_model_path

ROOT = Path(__file__).resolve().parents[2]

WORDS = [
    "use",
    "postgres",
    "kafka",
    "redis",
    "for",
    "the",
    "billing",
    "ledger",
    "cache",
    "sessions",
    "because",
    "latency",
    "compliance",
    "review",
    "team",
    "adopt",
    "replace",
    "legacy",
    "stack",
    "oauth2",
    "warehouse",
    "owner",
    "ticket",
    "decided",
    "migrate",
]


def corpus() -> list[str]:
    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))) for _ in range(150)]
    texts += [
        "  leading and trailing spaces  ",
        "",
        "x",
        "Ünïcödé — 日本語のテキスト 🚀 Ærøskøbing",
        "[CLS] [SEP] [MASK] [PAD]",
        "\t\n",
        "why " * 400,  # past max_seq_length: truncated
        " ".join(WORDS * 30),
    ]
    return texts


@pytest.mark.parametrize("batch_size", [1, 7, 32, 64])
def test_lean_vectors_equal_sentence_transformers(batch_size: int) -> None:
    texts = corpus()
    lean = MiniLMEmbedder(batch_size=batch_size, threads=1, runtime="lean")
    library = MiniLMEmbedder(batch_size=batch_size, threads=1, runtime="sentence-transformers")
    rng = random.Random(batch_size)
    for size in (1, 2, 5, batch_size, batch_size + 1, 70, len(texts)):
        batch = rng.sample(texts, min(size, len(texts)))
        a, b = lean.embed(batch), library.embed(batch)
        assert a.dtype == b.dtype == np.float32
        assert np.array_equal(a, b), f"batch of {size}: max diff {np.abs(a - b).max()}"
    assert type(lean._model).__name__ == "LeanMiniLM"
    assert type(library._model).__name__ == "SentenceTransformer"


def test_the_encoder_gives_bert_models_hidden_states() -> None:
    """Padded batches (lengths from 3 to 256 tokens, truncated ones) and unpadded ones (the
    mask-less attention path), batch sizes 1 to 64: ``torch.equal`` with ``BertModel``."""
    import torch
    from tokenizers import Tokenizer
    from transformers import BertModel

    from retrieval.bert import BertEncoder

    path = bundled_model_path()
    ours = BertEncoder(path)
    theirs = BertModel.from_pretrained(str(path), local_files_only=True).eval()
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
    texts = corpus()
    rng = random.Random(11)
    batches = [[text] for text in texts[-8:]]  # one text: never padded
    batches += [[texts[0]] * 5, ["why " * 400] * 3]  # equal lengths: no mask
    batches += [rng.sample(texts, size) for size in (2, 7, 13, 32, 64, 64) for _ in range(2)]
    padded = 0
    with torch.inference_mode():
        for batch in batches:
            encoded = tokenizer.encode_batch(batch)
            ids = torch.tensor([e.ids for e in encoded], dtype=torch.long)
            mask = torch.tensor([e.attention_mask for e in encoded], dtype=torch.long)
            types = torch.tensor([e.type_ids for e in encoded], dtype=torch.long)
            expected = theirs(input_ids=ids, attention_mask=mask, token_type_ids=types)
            got = ours(ids, mask, types)
            assert got.dtype == torch.float32
            assert torch.equal(got, expected.last_hidden_state), f"batch of {len(batch)}"
            padded += int(not bool(mask.all()))
    assert padded >= 12


def test_the_lean_runtime_imports_no_transformers() -> None:
    code = (
        "import sys; from retrieval.minilm import LeanMiniLM; "
        "from retrieval.embedder import bundled_model_path; "
        "m = LeanMiniLM(bundled_model_path()); v = m.encode(['x', 'a longer text'], 32); "
        "assert v.shape == (2, 384); "
        "print('transformers' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "False"], done.stderr
