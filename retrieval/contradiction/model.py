"""The pair judge's network: the bundled MiniLM's lower layers read two statements together.

A cross-encoder: ``[CLS] earlier [SEP] proposed [SEP]`` runs through the first ``layers``
transformer layers of all-MiniLM-L6-v2 (the model the project already bundles for
embeddings), the token states are mean-pooled over the mask and a linear head gives three
logits (:data:`LABELS`). The word embeddings stay frozen in training, so they are read from the
bundled model and never shipped: the artifact holds only what training changed (the position
and type embeddings, their LayerNorm, the layers and the head).

Everything is plain torch (no ``transformers``): the same module trains (``scripts/train_judge.py``)
and serves (:mod:`.judge`), so the figures measured after training are the server's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional

from .labels import KINDS, LABELS

__all__ = ["KINDS", "LABELS", "PairModel", "from_base", "load_trained", "trained_state"]

#: Tensors read from the bundled model and never trained (so never shipped).
FROZEN = ("embeddings.word_embeddings.weight",)


class Layer(nn.Module):
    """One BERT layer (post-LayerNorm, exact GELU), as all-MiniLM-L6-v2 computes it."""

    def __init__(self, hidden: int, inner: int, heads: int, eps: float, dropout: float) -> None:
        super().__init__()
        self.heads, self.head = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, eps=eps)
        self.inner = nn.Linear(hidden, inner)
        self.outer = nn.Linear(inner, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        batch, length, _ = x.shape
        shape = (batch, length, self.heads, self.head)
        q = self.query(x).view(shape).transpose(1, 2)
        k = self.key(x).view(shape).transpose(1, 2)
        v = self.value(x).view(shape).transpose(1, 2)
        drop = self.dropout.p if self.training else 0.0
        a = functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)
        a = a.transpose(1, 2).reshape(batch, length, -1)
        x = self.norm1(x + self.dropout(self.out(a)))
        h = self.outer(functional.gelu(self.inner(x)))
        out: torch.Tensor = self.norm2(x + self.dropout(h))
        return out


class PairModel(nn.Module):
    """Embeddings, ``layers`` BERT layers, mean pooling and a 3-way head."""

    def __init__(self, config: dict[str, Any], layers: int, dropout: float = 0.1) -> None:
        super().__init__()
        hidden = int(config["hidden_size"])
        eps = float(config.get("layer_norm_eps", 1e-12))
        self.config = {**config, "judge_layers": layers}
        self.words = nn.Embedding(int(config["vocab_size"]), hidden, padding_idx=0)
        self.positions = nn.Embedding(int(config["max_position_embeddings"]), hidden)
        self.types = nn.Embedding(int(config["type_vocab_size"]), hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(dropout)
        inner, heads = int(config["intermediate_size"]), int(config["num_attention_heads"])
        self.layers = nn.ModuleList(
            Layer(hidden, inner, heads, eps, dropout) for _ in range(layers)
        )
        self.head = nn.Linear(hidden, len(LABELS) + len(KINDS))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, 3 + len(KINDS))``: the labels, then the kinds.

        ``ids``, ``mask`` and ``types`` are token ids, attention mask and type ids
        ``(batch, seq)``.
        """
        length = ids.shape[1]
        positions = torch.arange(length).unsqueeze(0)
        x = self.words(ids) + self.types(types) + self.positions(positions)
        x = self.dropout(self.norm(x))
        keep = mask.bool()
        attn = None if bool(keep.all()) else keep[:, None, None, :]
        for layer in self.layers:
            x = layer(x, attn)
        weights = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        out: torch.Tensor = self.head(self.dropout(pooled))
        return out


#: Our module's parameter names -> the BERT checkpoint's (for layer i: ``{i}``).
_EMBEDDINGS = {
    "words.weight": "embeddings.word_embeddings.weight",
    "positions.weight": "embeddings.position_embeddings.weight",
    "types.weight": "embeddings.token_type_embeddings.weight",
    "norm.weight": "embeddings.LayerNorm.weight",
    "norm.bias": "embeddings.LayerNorm.bias",
}
_LAYER = {
    "query": "attention.self.query",
    "key": "attention.self.key",
    "value": "attention.self.value",
    "out": "attention.output.dense",
    "norm1": "attention.output.LayerNorm",
    "inner": "intermediate.dense",
    "outer": "output.dense",
    "norm2": "output.LayerNorm",
}


def checkpoint_name(name: str) -> str | None:
    """The BERT checkpoint tensor behind one of our parameters (None: the head)."""
    if name in _EMBEDDINGS:
        return _EMBEDDINGS[name]
    parts = name.split(".")
    if parts[0] == "layers":
        return f"encoder.layer.{parts[1]}.{_LAYER[parts[2]]}.{parts[3]}"
    return None


def from_base(base: Path, layers: int, dropout: float = 0.1) -> PairModel:
    """A fresh model: the base checkpoint's embeddings and first ``layers`` layers, a zero head."""
    from safetensors.torch import load_file

    config = json.loads((base / "config.json").read_text())
    model = PairModel(config, layers, dropout)
    weights = load_file(str(base / "model.safetensors"), device="cpu")
    state = model.state_dict()
    for name in state:
        source = checkpoint_name(name)
        if source is not None:
            state[name] = weights[source].clone()
    state["head.weight"] = torch.zeros_like(state["head.weight"])
    state["head.bias"] = torch.zeros_like(state["head.bias"])
    model.load_state_dict(state)
    return model


def trained_state(model: PairModel) -> dict[str, torch.Tensor]:
    """What the artifact keeps: every tensor but the frozen word embeddings, as float16."""
    frozen = {k for k, v in _EMBEDDINGS.items() if v in FROZEN}
    return {
        k: v.detach().to(torch.float16).contiguous()
        for k, v in model.state_dict().items()
        if k not in frozen
    }


def load_trained(base: Path, weights: Path, config: dict[str, Any]) -> PairModel:
    """The model as shipped: frozen tensors from ``base``, the rest from ``weights`` (float16,
    computed in float32), in eval mode."""
    from safetensors.torch import load_file

    model = PairModel(config, int(config["judge_layers"]), dropout=0.0)
    base_weights = load_file(str(base / "model.safetensors"), device="cpu")
    trained = load_file(str(weights), device="cpu")
    state = model.state_dict()
    for name in state:
        source = checkpoint_name(name)
        if source in FROZEN:
            state[name] = base_weights[source]
        else:
            state[name] = trained[name].to(torch.float32)
    model.load_state_dict(state)
    return model.eval()
