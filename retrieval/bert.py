"""A BERT encoder in plain torch: ``transformers.BertModel``'s forward pass, bit for bit.

Importing ``transformers``' ``BertModel`` costs 2.5 s on a quiet host (8-11 s on 2 busy cores)
on top of ``import torch``, for machinery a server never uses: the hub, generation, caches,
attention back-ends, weight conversion. Embedding needs the encoder's inference alone, so this
module reads ``config.json`` and ``model.safetensors`` itself and runs the forward pass of
``BertModel`` (transformers 5.24, ``sdpa`` attention, eval mode, CPU, float32) with the same
torch operators, in the same order, on tensors of the same shapes, strides and dtypes:

* embeddings: word + token type, then + absolute position, LayerNorm (dropout is the identity);
* the attention mask as ``transformers.masking_utils.create_bidirectional_mask`` builds it for
  ``sdpa``: ``None`` when no token of the batch is padding, else a contiguous boolean
  ``(batch, 1, query, key)`` tensor, True where the key token is real;
* per layer: Q/K/V linears viewed ``(batch, seq, heads, head)`` and transposed to
  ``(batch, heads, seq, head)`` (non-contiguous views, as transformers passes them: the CPU
  attention kernel is chosen on them), ``scaled_dot_product_attention`` with
  ``scale=head ** -0.5`` and ``is_causal=False``, the output transposed back and made
  contiguous, output dense, residual, LayerNorm; intermediate dense, exact (erf) GELU, output
  dense, residual, LayerNorm.

The pooler (``pooler_output``) is skipped: only ``last_hidden_state`` is used, and the pooler
does not touch it. :func:`supported` accepts only checkpoints this runs exactly (checked from
the JSON config and the safetensors header, without importing torch); anything else goes to
``sentence_transformers``. ``tests/integration/test_minilm.py`` compares the hidden states
with ``BertModel``'s (``torch.equal``) and the sentence vectors with ``sentence_transformers``'.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

#: Tensors in the file that the encoder does not use and transformers does not either for
#: ``last_hidden_state`` (a non-persistent buffer and the pooler head).
_IGNORED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")

#: Per layer: the linear layers (weight + bias) and the LayerNorms (weight + bias).
_LINEARS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
_NORMS = ("attention.output.LayerNorm", "output.LayerNorm")


def _expected_shapes(config: dict[str, Any]) -> dict[str, list[int]]:
    """Every tensor the encoder needs, with its shape, for ``config``."""
    hidden, inner = int(config["hidden_size"]), int(config["intermediate_size"])
    shapes: dict[str, list[int]] = {
        "embeddings.word_embeddings.weight": [int(config["vocab_size"]), hidden],
        "embeddings.position_embeddings.weight": [int(config["max_position_embeddings"]), hidden],
        "embeddings.token_type_embeddings.weight": [int(config["type_vocab_size"]), hidden],
        "embeddings.LayerNorm.weight": [hidden],
        "embeddings.LayerNorm.bias": [hidden],
    }
    linear_shapes = {
        "attention.self.query": [hidden, hidden],
        "attention.self.key": [hidden, hidden],
        "attention.self.value": [hidden, hidden],
        "attention.output.dense": [hidden, hidden],
        "intermediate.dense": [inner, hidden],
        "output.dense": [hidden, inner],
    }
    for i in range(int(config["num_hidden_layers"])):
        for name, shape in linear_shapes.items():
            shapes[f"encoder.layer.{i}.{name}.weight"] = shape
            shapes[f"encoder.layer.{i}.{name}.bias"] = shape[:1]
        for name in _NORMS:
            shapes[f"encoder.layer.{i}.{name}.weight"] = [hidden]
            shapes[f"encoder.layer.{i}.{name}.bias"] = [hidden]
    return shapes


def _config_ok(config: dict[str, Any]) -> bool:
    """Whether ``config`` is a plain float32 BERT encoder with exact GELU and absolute positions.

    Everything that would make ``BertModel`` run other operators is refused: a decoder or
    cross-attention, relative positions, another activation, feed-forward chunking, a
    non-sdpa attention implementation or another dtype.
    """
    try:
        hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        for key in ("intermediate_size", "num_hidden_layers", "vocab_size", "type_vocab_size"):
            int(config[key])
        int(config["max_position_embeddings"])
        float(config.get("layer_norm_eps", 1e-12))
    except (KeyError, TypeError, ValueError):
        return False
    attention = config.get("attn_implementation", config.get("_attn_implementation"))
    return (
        config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and not config.get("is_decoder", False)
        and not config.get("add_cross_attention", False)
        and not config.get("chunk_size_feed_forward", 0)
        and attention in (None, "sdpa")
        and config.get("torch_dtype", config.get("dtype")) in (None, "float32")
        and heads > 0
        and hidden % heads == 0
    )


def _header(path: Path) -> dict[str, Any]:
    """The JSON header of a safetensors file (names, dtypes, shapes), read without torch."""
    with path.open("rb") as file:
        (size,) = struct.unpack("<Q", file.read(8))
        if size > 100_000_000:
            raise ValueError("safetensors header too large")
        header: dict[str, Any] = json.loads(file.read(size))
    header.pop("__metadata__", None)
    return header


def supported(path: Path) -> bool:
    """Whether the model directory ``path`` holds a checkpoint :class:`BertEncoder` runs exactly.

    The config must pass :func:`_config_ok` and ``model.safetensors`` must hold exactly the
    encoder's float32 tensors with their shapes, plus at most the ignored ones: an unexpected
    or missing tensor means another architecture or naming, which transformers would treat
    differently (or refuse), so it goes to ``sentence_transformers``.
    """
    try:
        config = json.loads((path / "config.json").read_text())
        if not isinstance(config, dict) or not _config_ok(config):
            return False
        header = _header(path / "model.safetensors")
    except (OSError, ValueError, TypeError, struct.error):
        return False
    expected = _expected_shapes(config)
    for name, entry in header.items():
        if name in _IGNORED:
            continue
        if name not in expected or not isinstance(entry, dict):
            return False
        if entry.get("dtype") != "F32" or entry.get("shape") != expected[name]:
            return False
    return set(expected) <= set(header)


class BertEncoder:
    """The encoder of a BERT checkpoint; calling it gives ``BertModel``'s ``last_hidden_state``.

    Parameters
    ----------
    path : Path
        A model directory that :func:`supported` accepts (``config.json``,
        ``model.safetensors``).

    Notes
    -----
    The weights are the tensors ``safetensors.torch.load_file`` returns, as transformers
    loads them too (same storage, same alignment), so the matrix kernels see the same inputs.
    Call it under ``torch.inference_mode()`` (no autograd state is needed or kept).
    """

    def __init__(self, path: Path) -> None:
        import torch
        from safetensors.torch import load_file

        config = json.loads((path / "config.json").read_text())
        self._torch = torch
        self._hidden = int(config["hidden_size"])
        self._head = int(self._hidden / int(config["num_attention_heads"]))
        self._scaling = self._head**-0.5  # BertSelfAttention.scaling, a Python float
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._pad = config.get("pad_token_id")
        self._layers = int(config["num_hidden_layers"])
        weights = load_file(str(path / "model.safetensors"), device="cpu")
        self._w = {name: weights[name] for name in _expected_shapes(config)}
        positions = int(config["max_position_embeddings"])
        # BertEmbeddings.position_ids: a (1, max_positions) buffer, sliced to the sequence.
        self._positions = torch.arange(positions).expand((1, -1)).contiguous()

    def _norm(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        w = self._w
        return self._torch.nn.functional.layer_norm(
            x, (self._hidden,), w[prefix + ".weight"], w[prefix + ".bias"], self._eps
        )

    def _linear(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        return self._torch.nn.functional.linear(
            x, self._w[prefix + ".weight"], self._w[prefix + ".bias"]
        )

    def _mask(self, attention_mask: torch.Tensor, length: int) -> torch.Tensor | None:
        """``create_bidirectional_mask`` + ``sdpa_mask`` for a 2D padding mask, no cache."""
        th = self._torch
        padding = attention_mask.to(dtype=th.bool)
        if padding.all():
            return None  # transformers skips the mask: no bias to add
        batch = padding.shape[0]
        batch_idx = th.arange(batch)[:, None, None, None]
        q_idx = th.arange(length)[None, None, :, None]
        kv_idx = th.arange(length)[None, None, None, :]
        result: torch.Tensor = q_idx.new_ones((), dtype=th.bool)
        result = result & (q_idx >= 0)  # bidirectional_mask_function
        result = result & padding[batch_idx, kv_idx]  # padding_mask_function
        return result.expand(batch, -1, length, length)  # contiguous (batch, 1, q, kv)

    def _layer(self, hidden: torch.Tensor, mask: torch.Tensor | None, i: int) -> torch.Tensor:
        """One ``BertLayer`` (self-attention block, then the feed-forward block)."""
        functional = self._torch.nn.functional
        prefix = f"encoder.layer.{i}."
        batch, length = hidden.shape[:2]
        shape = (batch, length, -1, self._head)
        query = self._linear(hidden, prefix + "attention.self.query").view(*shape).transpose(1, 2)
        key = self._linear(hidden, prefix + "attention.self.key").view(*shape).transpose(1, 2)
        value = self._linear(hidden, prefix + "attention.self.value").view(*shape).transpose(1, 2)
        attended = functional.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=mask,
            dropout_p=0.0,
            scale=self._scaling,
            is_causal=False,
        )
        attended = attended.reshape(attended.shape[0], -1, length, value.shape[-1])
        attended = attended.transpose(1, 2).contiguous()
        attended = attended.reshape(batch, length, -1).contiguous()
        out = self._linear(attended, prefix + "attention.output.dense")
        attention = self._norm(out + hidden, prefix + "attention.output.LayerNorm")
        inner = functional.gelu(self._linear(attention, prefix + "intermediate.dense"))
        out = self._linear(inner, prefix + "output.dense")
        return self._norm(out + attention, prefix + "output.LayerNorm")

    def __call__(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
    ) -> torch.Tensor:
        """``BertModel(input_ids, attention_mask, token_type_ids).last_hidden_state``.

        All three are ``(batch, seq)`` int64 tensors; returns ``(batch, seq, hidden)`` float32.
        """
        functional = self._torch.nn.functional
        w = self._w
        length = input_ids.shape[1]
        words = functional.embedding(input_ids, w["embeddings.word_embeddings.weight"], self._pad)
        types = functional.embedding(token_type_ids, w["embeddings.token_type_embeddings.weight"])
        hidden = words + types
        positions = functional.embedding(
            self._positions[:, :length], w["embeddings.position_embeddings.weight"]
        )
        hidden = hidden + positions
        hidden = self._norm(hidden, "embeddings.LayerNorm")
        mask = self._mask(attention_mask, length)
        for i in range(self._layers):
            hidden = self._layer(hidden, mask, i)
        return hidden
