""":mod:`retrieval.bert` runs only checkpoints it reproduces exactly: another architecture,
activation, position scheme, dtype or tensor set is refused (``supported`` is False) and the
embedder falls back to ``sentence_transformers``. On a small random BERT saved by
transformers, the encoder gives ``BertModel``'s hidden states bit for bit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from retrieval import bert, minilm
from retrieval.embedder import MiniLMEmbedder, bundled_model_path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer BERT saved by ``BertModel.save_pretrained`` (config + safetensors)."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=120,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=64,
    )
    path = tmp_path_factory.mktemp("tiny-bert")
    BertModel(config).eval().save_pretrained(str(path), safe_serialization=True)
    return path


def copy_of(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def edit_config(path: Path, **changes: Any) -> None:
    config = json.loads((path / "config.json").read_text())
    config.update(changes)
    (path / "config.json").write_text(json.dumps(config))


def resave(path: Path, edit: Any) -> None:
    """Rewrite ``model.safetensors`` after ``edit(tensors)``."""
    from safetensors.torch import load_file, save_file

    tensors = dict(load_file(str(path / "model.safetensors")))
    edit(tensors)
    save_file(tensors, str(path / "model.safetensors"))


def test_a_random_bert_gives_bert_models_hidden_states(tiny: Path) -> None:
    import torch
    from transformers import BertModel

    assert bert.supported(tiny)
    ours = bert.BertEncoder(tiny)
    theirs = BertModel.from_pretrained(str(tiny), local_files_only=True).eval()
    generator = torch.Generator().manual_seed(5)
    with torch.inference_mode():
        for batch, length in ((1, 1), (1, 9), (3, 17), (8, 64), (5, 33)):
            ids = torch.randint(1, 120, (batch, length), generator=generator)
            types = torch.randint(0, 2, (batch, length), generator=generator)
            mask = torch.ones(batch, length, dtype=torch.long)
            for row in range(1, batch):  # padding at the end, row 0 unpadded
                mask[row, length - row * length // (batch + 1) :] = 0
            ids = ids * mask
            expected = theirs(input_ids=ids, attention_mask=mask, token_type_ids=types)
            assert torch.equal(ours(ids, mask, types), expected.last_hidden_state)


@pytest.mark.parametrize(
    "changes",
    [
        {"model_type": "roberta"},
        {"hidden_act": "gelu_new"},
        {"hidden_act": "relu"},
        {"position_embedding_type": "relative_key"},
        {"is_decoder": True},
        {"add_cross_attention": True},
        {"chunk_size_feed_forward": 4},
        {"attn_implementation": "eager"},
        {"torch_dtype": "float16"},
        {"num_attention_heads": 5},
        {"num_hidden_layers": 3},
        {"hidden_size": "big"},
    ],
)
def test_other_configs_are_refused(tiny: Path, tmp_path: Path, changes: dict[str, Any]) -> None:
    path = copy_of(tiny, tmp_path / "model")
    edit_config(path, **changes)
    assert not bert.supported(path)


def test_other_tensor_sets_are_refused(tiny: Path, tmp_path: Path) -> None:
    import torch

    extra = copy_of(tiny, tmp_path / "extra")
    resave(extra, lambda t: t.update({"cls.predictions.bias": torch.zeros(120)}))
    assert not bert.supported(extra)
    missing = copy_of(tiny, tmp_path / "missing")
    resave(missing, lambda t: t.pop("encoder.layer.1.output.dense.bias"))
    assert not bert.supported(missing)
    half = copy_of(tiny, tmp_path / "half")
    resave(half, lambda t: t.update({k: v.half() for k, v in t.items()}))
    assert not bert.supported(half)
    prefixed = copy_of(tiny, tmp_path / "prefixed")
    resave(prefixed, lambda t: t.update({"bert." + k: t.pop(k) for k in list(t)}))
    assert not bert.supported(prefixed)
    ignored = copy_of(tiny, tmp_path / "ignored")  # a file that keeps the position_ids buffer
    resave(ignored, lambda t: t.update({"embeddings.position_ids": torch.arange(64)[None]}))
    assert bert.supported(ignored)
    broken = copy_of(tiny, tmp_path / "broken")
    (broken / "model.safetensors").write_bytes(b"\xff" * 16)
    assert not bert.supported(broken)
    (broken / "model.safetensors").unlink()
    assert not bert.supported(broken)


def test_an_unsupported_checkpoint_falls_back_to_sentence_transformers(tmp_path: Path) -> None:
    path = tmp_path / "model"
    path.mkdir()
    for item in bundled_model_path().iterdir():  # big files linked, config.json copied
        if item.name == "config.json":
            shutil.copy(item, path / item.name)
        else:
            (path / item.name).symlink_to(item)
    assert minilm.supported(path)
    edit_config(path, hidden_act="gelu_new")
    assert not minilm.supported(path)
    embedder = MiniLMEmbedder(model_path=path, threads=1, runtime="lean")
    assert embedder.embed(["falls back"]).shape == (1, 384)
    assert type(embedder._model).__name__ == "SentenceTransformer"
