"""The agent-session benchmark: scripted sessions played through a real ``decigraph serve``
over MCP (the SDK's streamable HTTP client at ``/mcp``), scored against what each session's
writer said the agent should be told (``bench/agent_sessions/score.py``).

Each session gets a fresh server and data directory, one token per agent. ``record`` steps
call ``log_decision`` (with the writer's ``supersedes`` / ``compatible_with`` /
``override_reason``; a write refused anyway is counted as an unexpected block and recorded
with an override so the session can go on), ``review`` steps ``review_outcome``, probes
``pre_action`` (``auto_record: false``: the probe asks, the next steps record) and
``get_session_context``. ``--root DIR`` runs the server from another source tree (the
baseline: a worktree of an earlier commit), so both are measured by the same client in the
same run.

Usage: python bench/agent_sessions/run.py [--set test|dev] [--root DIR] [--label NAME]
       [--out FILE] [--only ID ...] [--show]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from bench.agent_sessions.score import ProbeScore, score_probe, summarise  # noqa: E402
from bench.agent_sessions.steps import record_args  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(root: Path, data: Path, tokens: Mapping[str, str]) -> tuple[Any, str]:
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "CSTP_AUTH_TOKENS": ",".join(f"{a}:{t}" for a, t in tokens.items()),
        "DECIGRAPH_FSYNC": "never",
    }
    log = open(data.parent / "serve.log", "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service.cli",
            "serve",
            "--data-dir",
            str(data),
            "--port",
            str(port),
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"server did not start (see {data.parent / 'serve.log'})")


def _text(result: types.CallToolResult) -> str:
    block = result.content[0] if result.content else None
    return block.text if isinstance(block, types.TextContent) else ""


class _Reply:
    """A tool's answer as the player reads it (the SDK's result, or an in-process one)."""

    def __init__(self, is_error: bool, text: str) -> None:
        self.isError = is_error
        self.text = text


class _Sdk:
    """Tool calls through an MCP SDK client session."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call_tool(self, name: str, args: dict[str, Any]) -> _Reply:
        result = await self.session.call_tool(name, args)
        return _Reply(bool(result.isError), _text(result))


class _InProcess:
    """Tool calls through the tool table and the dispatcher of an app in this process (for
    quick iterations on the dev sessions; the benchmark itself runs a real server)."""

    def __init__(self, invoke: Any, agent: str) -> None:
        from service.mcp.tools import build_tools

        self.tools = {t.name: t for t in build_tools()}
        self.invoke = invoke
        self.agent = agent

    async def call_tool(self, name: str, args: dict[str, Any]) -> _Reply:
        from service.mcp.tools import run_tool

        out = run_tool(self.tools[name], args, lambda m, p: self.invoke(m, p, self.agent))
        return _Reply(out.is_error, out.text())


class Player:
    """Plays one session's steps through one MCP session per agent."""

    def __init__(self, session: dict[str, Any], clients: dict[str, Any]) -> None:
        self.session = session
        self.clients = clients
        self.ids: dict[str, str] = {}
        self.scores: list[ProbeScore] = []
        self.unexpected_blocks: list[str] = []
        self.errors: list[str] = []
        self.transcript: list[dict[str, Any]] = []

    def _ids(self, keys: list[str] | None) -> list[str]:
        return [self.ids[k] for k in keys or [] if k in self.ids]

    async def record(self, step: dict[str, Any]) -> None:
        client = self.clients[step["agent"]]
        args = record_args(step, self.ids)
        answer = await client.call_tool("log_decision", args)
        text = answer.text
        if answer.isError and "guardrail_blocked" in text:
            self.unexpected_blocks.append(f"{step['key']}: {text[:300]}")
            args["override_reason"] = "benchmark: the session's writer recorded it"
            answer = await client.call_tool("log_decision", args)
            text = answer.text
        if answer.isError:
            self.errors.append(f"record {step['key']}: {text[:300]}")
            return
        node = json.loads(text)["id"]
        self.ids[step["key"]] = node
        for parent in self._ids(step.get("depends_on")):
            linked = await client.call_tool(
                "link_decisions",
                {"source_id": node, "target_id": parent, "edge_type": "depends_on"},
            )
            if linked.isError:
                self.errors.append(f"link {step['key']}: {linked.text[:300]}")

    async def review(self, step: dict[str, Any]) -> None:
        client = next(iter(self.clients.values()))
        args = {"id": self.ids.get(step["key"], "00000000"), "outcome": step["outcome"]}
        if step.get("result"):
            args["actual_result"] = step["result"]
        if step.get("lessons"):
            args["lessons"] = step["lessons"]
        answer = await client.call_tool("review_outcome", args)
        if answer.isError:
            self.errors.append(f"review {step['key']}: {answer.text[:300]}")

    async def probe(self, index: int, step: dict[str, Any]) -> None:
        client = self.clients[step["agent"]]
        kind = step["do"]
        if kind == "pre_action":
            action: dict[str, Any] = {"description": step["action"]}
            action.update({k: step[k] for k in ("category", "stakes") if step.get(k)})
            args = {"action": action, "options": {"auto_record": False}}
            answer = await client.call_tool("pre_action", args)
        else:
            args = {"task_description": step["task"]}
            answer = await client.call_tool("get_session_context", args)
        text = answer.text
        if answer.isError:
            self.errors.append(f"{kind} step {index}: {text[:300]}")
        score = score_probe(self.session["id"], index, kind, text, step["expect"], self.ids)
        self.scores.append(score)
        self.transcript.append({"step": index, "kind": kind, "args": args, "answer": text})

    async def play(self) -> None:
        for index, step in enumerate(self.session["steps"]):
            kind = step["do"]
            if kind == "record":
                await self.record(step)
            elif kind == "review":
                await self.review(step)
            else:
                await self.probe(index, step)


async def play_session(session: dict[str, Any], url: str, tokens: dict[str, str]) -> Player:
    async with AsyncExitStack() as stack:
        clients: dict[str, ClientSession] = {}
        for agent, token in tokens.items():
            http = await stack.enter_async_context(
                httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
            )
            read, write, _ = await stack.enter_async_context(
                streamable_http_client(f"{url}/mcp", http_client=http)
            )
            client = await stack.enter_async_context(ClientSession(read, write))
            await client.initialize()
            clients[agent] = client
        player = Player(session, {a: _Sdk(c) for a, c in clients.items()})
        await player.play()
        tools = await next(iter(clients.values())).list_tools()
        player.tool_bytes = len(  # type: ignore[attr-defined]
            json.dumps([t.model_dump(exclude_none=True) for t in tools.tools]).encode()
        )
        return player


def play_in_process(session: dict[str, Any], data: Path) -> Player:
    from service.composition import open_app
    from service.mcp.server import dispatcher_invoke
    from service.methods import build_registry
    from service.rpc.protocol import Dispatcher
    from service.settings import Settings

    app = open_app(Settings(data_dir=data, fsync="never"))
    try:
        invoke = dispatcher_invoke(Dispatcher(build_registry(app)))
        player = Player(session, {a: _InProcess(invoke, a) for a in session["agents"]})
        anyio.run(player.play)
        player.tool_bytes = None  # type: ignore[attr-defined]
        return player
    finally:
        app.close()


def run_session(
    root: Path, session: dict[str, Any], work: Path, in_process: bool = False
) -> dict[str, Any]:
    tokens = {a: f"tok-{i}-{a}-0123456789abcdef" for i, a in enumerate(session["agents"])}
    data = work / session["id"] / "data"
    data.parent.mkdir(parents=True)
    if in_process:
        player = play_in_process(session, data)
    else:
        proc, url = start_server(root, data, tokens)
        try:
            player = anyio.run(play_session, session, url, tokens)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    return {
        "id": session["id"],
        "domain": session.get("domain"),
        "summary": summarise(player.scores),
        "toolBytes": player.tool_bytes,  # type: ignore[attr-defined]
        "unexpectedBlocks": player.unexpected_blocks,
        "errors": player.errors,
        "probes": [s.__dict__ for s in player.scores],
        "transcript": player.transcript,
    }


def load_sessions(which: str, only: list[str] | None) -> list[dict[str, Any]]:
    files = sorted((HERE / which).glob("*.json"))
    sessions = [json.loads(f.read_text()) for f in files]
    return [s for s in sessions if not only or s["id"] in only]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default="test", choices=["test", "dev"])
    ap.add_argument("--root", type=Path, default=ROOT, help="source tree the server runs from")
    ap.add_argument("--label", default="main")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--show", action="store_true", help="print each probe's misses and noise")
    ap.add_argument(
        "--in-process", action="store_true", help="no server: the tool table in this process"
    )
    a = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="agent-sessions-") as tmp:
        for session in load_sessions(a.set, a.only):
            started = time.perf_counter()
            done = run_session(a.root.resolve(), session, Path(tmp), a.in_process)
            done["seconds"] = round(time.perf_counter() - started, 1)
            results.append(done)
            s = done["summary"]
            print(
                f"{a.label} {done['id']}: recall {s['mustAppearRecall']} precision "
                f"{s['precision']} conflicts {s['conflictsRaised']} false {s['falseConflicts']} "
                f"failures {s['failuresRecalled']} preAction {s['preActionBytes']['median']} B "
                f"context {s['sessionContextBytes']['median']} B blocks "
                f"{len(done['unexpectedBlocks'])} errors {len(done['errors'])}",
                flush=True,
            )
            if a.show:
                for p in done["probes"]:
                    if p["missed"] or p["noise"] or p["conflict_expected"] != p["conflict_raised"]:
                        print(
                            f"   step {p['step']} {p['kind']}: missed {p['missed']} noise "
                            f"{p['noise']} conflict exp {p['conflict_expected']} raised "
                            f"{p['conflict_raised']}"
                        )
                for e in done["errors"] + done["unexpectedBlocks"]:
                    print("   !", e[:200])
    scores = [ProbeScore(**p) for r in results for p in r["probes"]]
    overall = summarise(scores)
    overall["toolBytes"] = results[0]["toolBytes"] if results else None
    overall["unexpectedBlocks"] = sum(len(r["unexpectedBlocks"]) for r in results)
    print(f"{a.label} overall: {json.dumps(overall)}")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(
            json.dumps(
                {"label": a.label, "set": a.set, "overall": overall, "sessions": results}, indent=1
            )
        )


if __name__ == "__main__":
    main()
