"""The pair judge as the server runs it: two statements in, three probabilities out.

:class:`PairJudge` loads the shipped weights (``weights/``: ``judge.safetensors``,
``config.json``, ``card.json``) beside the bundled MiniLM's frozen word embeddings, refuses
weights whose SHA-256 is not the one ``card.json`` records (:class:`JudgeWeightsError`), and
scores pairs in batches. Scores are cached per pair (bounded): a check followed by the write it
admits judges each pair once. Deterministic: the same pair always gets the same numbers.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from graph.errors import DecigraphError

from .tiers import Thresholds

#: The directory of the shipped weights, their config and their card.
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
#: Longest pair read, in tokens (both statements, truncated longest first).
MAX_TOKENS = 128
#: Pairs per forward pass.
BATCH = 16
#: Pairs remembered.
CACHE = 4096


class JudgeWeightsError(DecigraphError):
    """The judge's weights are missing or are not the ones their card records."""


@dataclass(frozen=True, slots=True)
class PairScore:
    """How a proposed statement relates to an earlier one: the three probabilities."""

    contradicts: float
    compatible: float
    unrelated: float
    #: The kind of contradiction it reads most likely (:data:`.model.KINDS`).
    kind: str


class PairScorer(Protocol):
    """What the guardrail needs of a judge: its version, its thresholds, and pair scores."""

    version: str
    thresholds: Thresholds

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScore]: ...

    def load(self) -> None: ...


def pair_tokenizer(base: Path) -> Any:
    """The bundled model's tokenizer, set for pairs: truncated to :data:`MAX_TOKENS` (longest
    first), padded to the longest of a batch."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS, strategy="longest_first")
    return tokenizer


def encode_pairs(
    tokenizer: Any, pairs: Sequence[tuple[str, str]]
) -> list[tuple[list[int], list[int]]]:
    """Token ids and type ids of ``[CLS] earlier [SEP] proposed [SEP]`` for each pair."""
    return [(e.ids, e.type_ids) for e in tokenizer.encode_batch(list(pairs))]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_card(weights: Path = WEIGHTS_DIR) -> dict[str, Any]:
    """``card.json``: version, digest, thresholds, figures."""
    try:
        card: dict[str, Any] = json.loads((weights / "card.json").read_text())
    except (OSError, ValueError) as exc:
        raise JudgeWeightsError(f"the judge's card cannot be read in {weights}: {exc}") from exc
    return card


class PairJudge:
    """The learned contradiction judge.

    Parameters
    ----------
    weights : Path
        A directory with ``judge.safetensors``, ``config.json`` and ``card.json``.
    base : Path, optional
        The bundled MiniLM (its word embeddings and tokenizer); found when omitted.

    Raises
    ------
    JudgeWeightsError
        A file is missing, or the weights' SHA-256 differs from the card's.
    """

    def __init__(self, weights: Path = WEIGHTS_DIR, base: Path | None = None) -> None:
        self.card = read_card(weights)
        path = weights / "judge.safetensors"
        if not path.is_file():
            raise JudgeWeightsError(f"the judge's weights are missing: {path}")
        digest = sha256_of(path)
        if digest != self.card.get("weights_sha256"):
            raise JudgeWeightsError(
                f"the judge's weights {path} do not match their card (sha256 {digest[:12]}..., "
                f"card says {str(self.card.get('weights_sha256'))[:12]}...): rebuild with "
                "`make judge` or restore the shipped files"
            )
        self.version = str(self.card["version"])
        # Weights not yet calibrated (training's last step reads dev through them) raise nothing.
        self.thresholds = Thresholds(**self.card.get("thresholds", {"block": 1.0, "review": 1.0}))
        self._weights, self._base = weights, base
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str], PairScore] = OrderedDict()

    def load(self) -> None:
        """Load the network now (else on the first pair)."""
        with self._lock:
            self._load()

    def _load(self) -> None:
        if self._model is not None:
            return
        from retrieval.embedder import bundled_model_path

        from .model import load_trained

        base = self._base or bundled_model_path()
        config = json.loads((self._weights / "config.json").read_text())
        self._tokenizer = pair_tokenizer(base)
        self._model = load_trained(base, self._weights / "judge.safetensors", config)

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScore]:
        """:class:`PairScore` for each ``(earlier, proposed)`` pair, in order."""
        with self._lock:
            todo = list(dict.fromkeys(p for p in pairs if p not in self._cache))
            if todo:
                self._load()
                for start in range(0, len(todo), BATCH):
                    chunk = todo[start : start + BATCH]
                    for pair, scored in zip(chunk, self._forward(chunk), strict=True):
                        self._cache[pair] = scored
                while len(self._cache) > CACHE:
                    self._cache.popitem(last=False)
            return [self._cache[p] for p in pairs]

    def _forward(self, pairs: Sequence[tuple[str, str]]) -> list[PairScore]:
        import torch

        encoded = encode_pairs(self._tokenizer, pairs)
        length = max(len(ids) for ids, _ in encoded)
        ids = torch.zeros((len(encoded), length), dtype=torch.long)
        types = torch.zeros_like(ids)
        mask = torch.zeros_like(ids)
        for row, (t, ty) in enumerate(encoded):
            ids[row, : len(t)] = torch.tensor(t)
            types[row, : len(t)] = torch.tensor(ty)
            mask[row, : len(t)] = 1
        from .model import KINDS

        with torch.inference_mode():
            logits = self._model(ids, mask, types)
            probs = torch.softmax(logits[:, :3], dim=-1).tolist()
            kinds = logits[:, 3:].argmax(dim=-1).tolist()
        return [
            PairScore(round(c, 6), round(k, 6), round(u, 6), KINDS[kind])
            for (c, k, u), kind in zip(probs, kinds, strict=True)
        ]
