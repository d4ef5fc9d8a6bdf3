"""The LLM contradiction judge against a fake OpenAI-compatible server on a real socket: answers
parsed, failures turned into ``None`` with a quiet window, the cache, the key kept secret."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from retrieval.contradiction.llm import (
    LLMJudge,
    LLMJudgeConfig,
    LLMJudgeConfigError,
    LLMVerdict,
    load_config,
)

KEY = "sk-test-9f3c1e77secret"
MakeJudge = Callable[..., LLMJudge]
PAIR = ("Invoices are stored in PostgreSQL.", "Invoices are stored in MongoDB.")


@dataclass
class Reply:
    """One scripted answer: the message content (or a raw body), a status and a delay."""

    content: str = '{"label": "compatible", "reason": "default"}'
    status: int = 200
    raw: str | None = None
    delay: float = 0.0


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, object]


@dataclass
class FakeLLM:
    url: str
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Request] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def answer(self, *replies: Reply | str) -> None:
        self.replies.extend(r if isinstance(r, Reply) else Reply(r) for r in replies)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    state: list[FakeLLM] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            llm = state[0]
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            llm.requests.append(Request(self.path, dict(self.headers.items()), body))
            reply = llm.replies.popleft() if llm.replies else Reply()
            if reply.delay:
                llm.release.wait(reply.delay)
            if reply.raw is not None:
                payload = reply.raw.encode()
            else:
                message = {"role": "assistant", "content": reply.content}
                payload = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up (the timeout test)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.append(FakeLLM(f"http://127.0.0.1:{server.server_address[1]}/v1"))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state[0]
    finally:
        state[0].release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def make_judge(fake: FakeLLM) -> Iterator[MakeJudge]:
    judges: list[LLMJudge] = []

    def make(clock: Clock | None = None, **options: Any) -> LLMJudge:
        config = replace(LLMJudgeConfig(fake.url, "tiny-judge"), **options)
        judge = LLMJudge(config, clock=clock or Clock())
        judges.append(judge)
        return judge

    yield make
    for judge in judges:
        judge.close()


def test_a_contradicts_answer_is_parsed_and_the_request_is_a_chat_completion(
    fake: FakeLLM, make_judge: MakeJudge
) -> None:
    fake.answer('{"label": "contradicts", "reason": "  Two different\n databases for invoices. "}')
    judge = make_judge()
    assert judge.version == "llm:tiny-judge"
    assert judge.verdicts([PAIR]) == [
        LLMVerdict("contradicts", "Two different databases for invoices.")
    ]
    (request,) = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "tiny-judge"
    assert request.body["temperature"] == 0
    messages = request.body["messages"]
    assert isinstance(messages, list)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert PAIR[0] in messages[1]["content"]
    assert PAIR[1] in messages[1]["content"]
    assert "JSON" in messages[0]["content"]
    assert judge.status() == {
        "url": fake.url,
        "model": "tiny-judge",
        "available": True,
        "lastError": None,
        "cached": 1,
    }


def test_fenced_json_amid_prose_with_any_case_label_is_parsed(
    fake: FakeLLM, make_judge: MakeJudge
) -> None:
    long_reason = "word " * 100
    fake.answer(
        'Sure! Here it is:\n```json\n{"label": "Compatible", "reason": "Staging only."}\n```',
        json.dumps({"label": " UNRELATED ", "reason": long_reason}),
    )
    judge = make_judge()
    first, second = judge.verdicts([PAIR, ("a", "b")])
    assert first == LLMVerdict("compatible", "Staging only.")
    assert second is not None
    assert second.label == "unrelated"
    assert len(second.reason) <= 160
    assert second.reason.startswith("word word")
    assert "\n" not in second.reason


@pytest.mark.parametrize(
    "reply",
    [
        Reply("They contradict, clearly."),
        Reply('{"label": "maybe", "reason": "unsure"}'),
        Reply('{"verdict": "contradicts"}'),
        Reply(raw="<html>not json</html>"),
        Reply(raw='{"choices": []}'),
        Reply(raw='{"choices": [{"message": {"content": null}}]}'),
    ],
    ids=["prose", "bad-label", "no-label", "not-json", "no-choice", "null-content"],
)
def test_an_unusable_answer_gives_none_and_is_not_cached(
    fake: FakeLLM, make_judge: MakeJudge, reply: Reply
) -> None:
    clock = Clock()
    judge = make_judge(clock, retry_after=30.0)
    fake.answer(reply)
    assert judge.verdicts([PAIR]) == [None]
    status = judge.status()
    assert status["cached"] == 0
    assert isinstance(status["lastError"], str)
    clock.now += 31
    fake.answer('{"label": "contradicts", "reason": ""}')
    assert judge.verdicts([PAIR]) == [LLMVerdict("contradicts", "")]
    assert len(fake.requests) == 2


def test_a_server_error_silences_the_endpoint_for_retry_after(
    fake: FakeLLM, make_judge: MakeJudge
) -> None:
    clock = Clock()
    judge = make_judge(clock, retry_after=30.0)
    fake.answer(Reply(status=500, raw='{"error": "boom"}'))
    assert judge.verdicts([PAIR, ("a", "b")]) == [None, None]
    assert len(fake.requests) == 1  # the second pair was not asked after the failure
    status = judge.status()
    assert status["available"] is False
    assert status["lastError"] == "HTTP 500"
    clock.now += 29.9
    assert judge.verdicts([PAIR]) == [None]
    assert len(fake.requests) == 1
    clock.now += 0.1
    fake.answer('{"label": "contradicts", "reason": "x"}')
    assert judge.verdicts([PAIR]) == [LLMVerdict("contradicts", "x")]
    assert len(fake.requests) == 2
    assert judge.status()["available"] is True
    assert judge.status()["lastError"] is None


def test_a_slow_server_costs_one_timeout(fake: FakeLLM, make_judge: MakeJudge) -> None:
    judge = make_judge(timeout=0.3)
    fake.answer(Reply(delay=5.0))
    start = time.monotonic()
    assert judge.verdicts([PAIR, ("a", "b"), ("c", "d")]) == [None, None, None]
    elapsed = time.monotonic() - start
    assert 0.25 <= elapsed < 1.5
    assert len(fake.requests) == 1
    assert judge.status()["lastError"] == "no answer within 0.3 s"


def test_a_closed_port_gives_none(make_judge: MakeJudge) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = make_judge(url=f"http://127.0.0.1:{port}/v1", key=KEY)
    assert judge.verdicts([PAIR]) == [None]
    error = judge.status()["lastError"]
    assert isinstance(error, str)
    assert error.startswith("ConnectError")


def test_answers_are_cached_and_the_oldest_is_evicted(fake: FakeLLM, make_judge: MakeJudge) -> None:
    judge = make_judge(cache=2)
    a, b, c = ("a1", "a2"), ("b1", "b2"), ("c1", "c2")
    fake.answer(
        '{"label": "contradicts", "reason": "A"}',
        '{"label": "compatible", "reason": "B"}',
    )
    assert judge.verdicts([a, a, b]) == [
        LLMVerdict("contradicts", "A"),
        LLMVerdict("contradicts", "A"),
        LLMVerdict("compatible", "B"),
    ]
    assert len(fake.requests) == 2
    assert judge.verdicts([a]) == [LLMVerdict("contradicts", "A")]  # a is now the newest
    assert len(fake.requests) == 2
    fake.answer('{"label": "unrelated", "reason": "C"}')
    assert judge.verdicts([c]) == [LLMVerdict("unrelated", "C")]  # evicts b
    assert judge.status()["cached"] == 2
    assert judge.verdicts([a, c]) == [LLMVerdict("contradicts", "A"), LLMVerdict("unrelated", "C")]
    assert len(fake.requests) == 3
    fake.answer('{"label": "contradicts", "reason": "B again"}')
    assert judge.verdicts([b]) == [LLMVerdict("contradicts", "B again")]
    assert len(fake.requests) == 4


def test_the_bearer_key_is_sent_only_when_set(fake: FakeLLM, make_judge: MakeJudge) -> None:
    make_judge(key=KEY).verdicts([PAIR])
    make_judge().verdicts([PAIR])
    with_key, without = ({k.lower(): v for k, v in r.headers.items()} for r in fake.requests)
    assert with_key["authorization"] == f"Bearer {KEY}"
    assert "authorization" not in without


def test_the_key_never_shows_in_status_or_errors(
    fake: FakeLLM, make_judge: MakeJudge, tmp_path: Path
) -> None:
    clock = Clock()
    url = f"{fake.url.replace('http://', f'http://user:{KEY}@')}?api-key={KEY}"
    judge = make_judge(clock, url=url, key=KEY)
    fake.answer(Reply(status=401, raw=json.dumps({"error": f"bad key {KEY}"})))
    assert judge.verdicts([PAIR]) == [None]
    assert fake.requests[0].path == f"/v1/chat/completions?api-key={KEY}"
    status = judge.status()
    assert status["url"] == fake.url
    assert KEY not in repr(status)
    assert KEY not in repr(LLMJudgeConfig(fake.url, "m", key=KEY))
    assert KEY not in str(status["lastError"])
    texts: list[str] = []
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    for attempt in (
        lambda: load_config(fake.url, "m", KEY, key_file, 5.0),
        lambda: load_config(fake.url, "m", KEY + " \x01", None, 5.0),
        lambda: load_config(f"ftp://u:{KEY}@host/", "m", KEY, None, 5.0),
        lambda: LLMJudge(LLMJudgeConfig(fake.url, "m", key=f"{KEY}\nX-Evil: 1")),
    ):
        with pytest.raises(LLMJudgeConfigError) as caught:
            attempt()
        texts.append(str(caught.value))
    assert all(KEY not in text for text in texts), texts


def test_load_config(tmp_path: Path) -> None:
    assert load_config(None, "m", None, None, 5.0) is None
    assert load_config("  ", "m", None, None, 5.0) is None
    with pytest.raises(LLMJudgeConfigError, match="judge_model"):
        load_config("http://127.0.0.1:8080/v1", None, None, None, 5.0)
    with pytest.raises(LLMJudgeConfigError, match="judge_model"):
        load_config("http://127.0.0.1:8080/v1", " ", None, None, 5.0)
    key_file = tmp_path / "key"
    key_file.write_text(f"  {KEY}\n")
    config = load_config("http://127.0.0.1:8080/v1", "m", None, key_file, 2.5)
    assert config == LLMJudgeConfig("http://127.0.0.1:8080/v1", "m", KEY, 2.5)
    assert load_config("http://h/v1", "m", KEY, None, 5.0) == LLMJudgeConfig(
        "http://h/v1", "m", KEY, 5.0
    )
    assert load_config("http://h/v1", "m", None, None, 5.0) == LLMJudgeConfig("http://h/v1", "m")
    empty = tmp_path / "empty"
    empty.write_text(" \n")
    with pytest.raises(LLMJudgeConfigError, match=r"judge_key_file: .* is empty"):
        load_config("http://h/v1", "m", None, empty, 5.0)
    with pytest.raises(LLMJudgeConfigError, match="judge_key_file: cannot read"):
        load_config("http://h/v1", "m", None, tmp_path / "missing", 5.0)
    with pytest.raises(LLMJudgeConfigError, match="not both"):
        load_config("http://h/v1", "m", KEY, key_file, 5.0)
    with pytest.raises(LLMJudgeConfigError, match="judge_url"):
        load_config("localhost:8080", "m", None, None, 5.0)
    with pytest.raises(LLMJudgeConfigError, match="judge_timeout"):
        load_config("http://h/v1", "m", None, None, 0.0)


def test_a_bad_pair_is_a_programming_error(fake: FakeLLM, make_judge: MakeJudge) -> None:
    judge = make_judge()
    with pytest.raises(TypeError):
        judge.verdicts([("a", 1)])  # type: ignore[list-item]
    assert fake.requests == []
