"""A second opinion on contradiction from an LLM behind an OpenAI-compatible chat endpoint.

:class:`LLMJudge` asks ``POST {url}/chat/completions`` whether an earlier decision and a
proposed one contradict, one request per pair, and reads a JSON ``{"label", "reason"}`` answer.
The server consults it only for pairs the learned judge (:mod:`.judge`) is unsure about.

It is never required. When the endpoint is down, slow or answers nonsense, the pair gets
``None`` and the local verdict stands. A failure costs one timeout: for the next
``retry_after`` seconds every pair gets ``None`` at once, with no network I/O. Answers are cached
per pair (bounded LRU); failures are not. The bearer key never appears in errors or status.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

import httpx

from graph.errors import DecigraphError

Label = Literal["contradicts", "compatible", "unrelated"]
LABELS: tuple[Label, ...] = get_args(Label)
REASON_CHARS = 160
#: Decisions are short: these only bound a pathological statement or answer (the answer is
#: searched for JSON from every ``{``).
STATEMENT_CHARS, ANSWER_CHARS = 4000, 8000

SYSTEM = (
    "You compare two decisions recorded by a team: an earlier one and a proposed one. "
    "Decide whether they contradict, that is, whether the team could not follow both at once. "
    'Answer "contradicts" if following one means breaking the other (another choice for the '
    "same thing, a negation, a conflicting value, a reversal). "
    'Answer "compatible" if both can hold: a refinement or more detail, another scope or '
    "environment, complementary choices, a sequence in time, an exception written as a "
    "permission beside a rule. "
    'Answer "unrelated" if they are about different things. '
    'Reply with only a JSON object: {"label": "contradicts" | "compatible" | "unrelated", '
    '"reason": "<one short sentence>"}.'
)


class LLMJudgeConfigError(DecigraphError):
    """The LLM judge's settings are incomplete or invalid; the message names the setting."""


@dataclass(frozen=True, slots=True)
class LLMJudgeConfig:
    """Where the LLM judge is and how patient it is (see :func:`load_config`)."""

    url: str
    model: str
    # Kept out of repr, so a logged config never shows it.
    key: str | None = field(default=None, repr=False)
    timeout: float = 5.0
    cache: int = 1024
    retry_after: float = 30.0


@dataclass(frozen=True, slots=True)
class LLMVerdict:
    """The LLM's label for a pair and its one-line reason (may be empty)."""

    label: Label
    reason: str


def load_config(
    url: str | None, model: str | None, key: str | None, key_file: Path | None, timeout: float
) -> LLMJudgeConfig | None:
    """The LLM judge's settings, or ``None`` when no URL is set (the judge is off).

    Parameters
    ----------
    url : str or None
        Base URL of the OpenAI-compatible API (``.../v1``).
    model : str or None
        Model name; required when ``url`` is set.
    key, key_file : str or None, Path or None
        The bearer token, or a file holding it (read and stripped); at most one of them.
    timeout : float
        Seconds for one HTTP call.

    Raises
    ------
    LLMJudgeConfigError
        A model is missing, both or a bad key are given, or a setting is out of range.
    """
    if url is None or not url.strip():
        return None
    if model is None or not model.strip():
        raise LLMJudgeConfigError("judge_model: required when judge_url is set")
    if key is not None and key_file is not None:
        raise LLMJudgeConfigError("judge_key_file: give judge_key or judge_key_file, not both")
    if key_file is not None:
        try:
            key = key_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            # Only the kind of failure: a decode error's text could quote the file.
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise LLMJudgeConfigError(f"judge_key_file: cannot read {key_file}: {why}") from None
        if not key:
            raise LLMJudgeConfigError(f"judge_key_file: {key_file} is empty")
    config = LLMJudgeConfig(url.strip(), model.strip(), (key or "").strip() or None, timeout)
    _check(config)
    return config


def _check(config: LLMJudgeConfig) -> None:
    try:
        url = httpx.URL(config.url)
    except httpx.InvalidURL:
        url = None
    # The URL is not echoed: it may carry credentials.
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise LLMJudgeConfigError("judge_url: not an http(s) URL")
    if config.key is not None and not re.fullmatch(r"[\x21-\x7e]+", config.key):
        raise LLMJudgeConfigError("judge_key: must be printable ASCII without spaces")
    if not (math.isfinite(config.timeout) and config.timeout > 0):
        raise LLMJudgeConfigError("judge_timeout: must be a positive number of seconds")
    if config.cache < 0 or not config.retry_after >= 0:
        raise LLMJudgeConfigError("judge_cache/judge_retry_after: must not be negative")


def parse_answer(content: str) -> LLMVerdict | None:
    """The verdict in a model's reply: the first JSON object with a ``label``, wherever it
    is (fenced, amid prose); ``None`` if there is none or its label is not one of ours."""
    # strict=False: models put raw newlines inside strings.
    content, decoder = content[:ANSWER_CHARS], json.JSONDecoder(strict=False)
    for start in (m.start() for m in re.finditer(r"\{", content)):
        try:
            value = decoder.raw_decode(content, start)[0]
        except ValueError:
            continue
        if isinstance(value, dict) and "label" in value:
            label = str(value["label"]).strip().lower()
            if label not in LABELS:
                return None
            reason = value.get("reason")
            text = " ".join(reason.split()) if isinstance(reason, str) else ""
            return LLMVerdict(label, text[:REASON_CHARS].rstrip())
    return None


class _UnusableError(Exception):
    """The endpoint gave no usable answer; the message is safe to show."""


class LLMJudge:
    """The LLM contradiction judge (thread-safe).

    Parameters
    ----------
    config : LLMJudgeConfig
        Endpoint, model, key and limits.
    clock : callable, optional
        Monotonic seconds, for the ``retry_after`` window (injectable for tests).

    Raises
    ------
    LLMJudgeConfigError
        The config is invalid (bad URL or key, negative limits).
    """

    def __init__(
        self, config: LLMJudgeConfig, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        _check(config)
        self.config = config
        self.version = f"llm:{config.model}"
        self._clock = clock
        base = httpx.URL(config.url)
        # Path-joined, so a query the endpoint needs (e.g. ``api-version``) is kept.
        self._endpoint = base.copy_with(path=base.path.rstrip("/") + "/chat/completions")
        self._public_url = str(base.copy_with(userinfo=b"", query=None, fragment=None))
        self._secrets = [s for s in (config.key, base.password) if s]
        headers = {"Authorization": f"Bearer {config.key}"} if config.key else {}
        self._client = httpx.Client(timeout=httpx.Timeout(config.timeout), headers=headers)
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str], LLMVerdict] = OrderedDict()
        self._quiet_until = -math.inf
        self._last_error: str | None = None

    def verdicts(self, pairs: Sequence[tuple[str, str]]) -> list[LLMVerdict | None]:
        """One verdict per ``(earlier, proposed)`` pair, in order; ``None`` where the endpoint
        gave no usable answer or is resting after a failure. Never raises for network or
        answer problems."""
        out: list[LLMVerdict | None] = []
        for earlier, proposed in pairs:
            if not (isinstance(earlier, str) and isinstance(proposed, str)):
                raise TypeError("pairs must be (str, str) tuples")
            pair = (earlier, proposed)
            with self._lock:
                cached = self._cache.get(pair)
                if cached is not None:
                    self._cache.move_to_end(pair)
                if cached is not None or self._clock() < self._quiet_until:
                    out.append(cached)
                    continue
            # The lock is not held over the call: one slow answer must not stall other pairs.
            try:
                verdict = self._ask(earlier, proposed)
            except _UnusableError as exc:
                with self._lock:
                    self._quiet_until = self._clock() + self.config.retry_after
                    self._last_error = str(exc)
                out.append(None)
                continue
            with self._lock:
                if self._clock() >= self._quiet_until:
                    self._last_error = None
                if self.config.cache:
                    self._cache[pair] = verdict
                    while len(self._cache) > self.config.cache:
                        self._cache.popitem(last=False)
            out.append(verdict)
        return out

    def status(self) -> dict[str, object]:
        """Endpoint (without credentials or query), model, whether it would be called now,
        the last failure (cleared by a later answer) and the number of cached verdicts."""
        with self._lock:
            return {
                "url": self._public_url,
                "model": self.config.model,
                "available": self._clock() >= self._quiet_until,
                "lastError": self._last_error,
                "cached": len(self._cache),
            }

    def close(self) -> None:
        """Close the HTTP connections (the judge may not be used afterwards)."""
        self._client.close()

    def _ask(self, earlier: str, proposed: str) -> LLMVerdict:
        user = (
            f"Earlier decision: {earlier[:STATEMENT_CHARS]}\n"
            f"Proposed decision: {proposed[:STATEMENT_CHARS]}"
        )
        body: dict[str, object] = {"model": self.config.model, "temperature": 0, "max_tokens": 200}
        body["messages"] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": user},
        ]
        try:
            response = self._client.post(self._endpoint, json=body)
        except httpx.TimeoutException:
            raise _UnusableError(f"no answer within {self.config.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise _UnusableError(self._scrub(f"{type(exc).__name__}: {exc}")) from None
        if response.status_code != 200:
            raise _UnusableError(f"HTTP {response.status_code}")
        try:
            data = response.json()
            content = data["choices"][0]["message"]["content"]
        except (ValueError, LookupError, TypeError):
            raise _UnusableError("the answer is not a chat completion") from None
        verdict = parse_answer(content) if isinstance(content, str) else None
        if verdict is None:
            raise _UnusableError("the answer holds no JSON label")
        return verdict

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text
