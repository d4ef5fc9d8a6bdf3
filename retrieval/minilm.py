"""all-MiniLM-L6-v2 run with torch, ``tokenizers`` and :mod:`retrieval.bert` alone, without
importing ``sentence_transformers`` or ``transformers``.

Importing ``sentence_transformers`` also imports scikit-learn, ``scipy.stats`` and its training,
multimodal and hub code: 8-10 s of a server's start-up on 2 busy cores; ``transformers``' BERT
alone costs 2.5 s more than ``import torch`` on a quiet host (README "Start-up"). The model is
three modules (``modules.json``): a BERT encoder (inputs truncated to ``max_seq_length`` tokens,
padded to the longest of the batch), mean pooling over the attention mask and L2
normalisation. This module runs exactly those steps, in the same order, on the same batches
(texts sorted by length, longest first, as ``SentenceTransformer.encode`` sorts them), with
:class:`retrieval.bert.BertEncoder` reproducing ``BertModel``'s operators, so its vectors are
bit for bit the ones ``sentence_transformers`` gives: ``tests/integration/test_minilm.py``
compares them. :func:`supported` checks the model directory is this shape (and the checkpoint
one :mod:`retrieval.bert` runs exactly); anything else goes to ``sentence_transformers``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from . import bert as bert_encoder

Vectors = npt.NDArray[np.float32]

_MODULES = [
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
]


def supported(path: Path) -> bool:
    """Whether ``path`` holds a BERT + mean pooling + normalisation model this runtime runs."""
    try:
        modules = json.loads((path / "modules.json").read_text())
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text())
        config = json.loads((path / "config.json").read_text())
        bert = json.loads((path / "sentence_bert_config.json").read_text())
    except (OSError, ValueError, TypeError):
        return False
    if [m.get("type") for m in modules] != _MODULES:
        return False
    mean_only = {k: v for k, v in pooling.items() if k.startswith("pooling_mode")}
    return (
        config.get("model_type") == "bert"
        and (path / "tokenizer.json").is_file()
        and mean_only.get("pooling_mode_mean_tokens") is True
        and not any(v for k, v in mean_only.items() if k != "pooling_mode_mean_tokens")
        and isinstance(bert.get("max_seq_length"), int)
        and not bert.get("do_lower_case", False)
        and bert_encoder.supported(path)
    )


def load_tokenizer(path: Path) -> tuple[Any, int]:
    """The model's tokenizer as ``sentence_transformers`` runs it (truncated to
    ``max_seq_length``, padded to the longest of the batch), and that length."""
    from tokenizers import Tokenizer

    bert = json.loads((path / "sentence_bert_config.json").read_text())
    max_seq_length = int(bert["max_seq_length"])
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_seq_length, strategy="longest_first")
    tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")  # to the longest
    return tokenizer, max_seq_length


class LeanMiniLM:
    """The loaded model: :meth:`encode` is ``SentenceTransformer.encode(texts,
    batch_size=..., normalize_embeddings=True)`` for this model."""

    def __init__(self, path: Path) -> None:
        import torch

        self._torch = torch
        self._tokenizer, self.max_seq_length = load_tokenizer(path)
        self._model: Any = bert_encoder.BertEncoder(path)

    def encode(self, texts: Sequence[str], batch_size: int) -> Vectors:
        torch = self._torch
        functional = torch.nn.functional
        order = np.argsort([-len(text) for text in texts])  # as sentence_transformers sorts
        out: list[Any] = [None] * len(texts)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = [int(i) for i in order[start : start + batch_size]]
                encoded = self._tokenizer.encode_batch([texts[i] for i in chunk])
                ids = torch.tensor([e.ids for e in encoded], dtype=torch.long)
                mask = torch.tensor([e.attention_mask for e in encoded], dtype=torch.long)
                types = torch.tensor([e.type_ids for e in encoded], dtype=torch.long)
                tokens = self._model(ids, mask, types)  # BertModel's last_hidden_state
                expanded = mask.unsqueeze(-1).expand(tokens.size()).to(tokens.dtype)
                summed = torch.sum(tokens * expanded, 1)
                counts = torch.clamp(expanded.sum(1), min=1e-9)
                pooled = functional.normalize(summed / counts, p=2, dim=1)  # the Normalize module
                pooled = functional.normalize(pooled, p=2, dim=1)  # normalize_embeddings=True
                for row, i in enumerate(chunk):
                    out[i] = pooled[row]
        return np.asarray(torch.stack(out).numpy(), dtype=np.float32)
