"""``decigraph mcp``: the MCP tools on stdio, for clients that spawn their tool servers.

``decigraph mcp --data-dir D`` opens the store as its writer and answers as ``--agent``; when a
server holds the directory it asks that server instead (the address it published, its token
from ``CSTP_TOKEN`` or the directory's token file), as ``decigraph recall`` does; when another
process that serves no address holds it (a second ``decigraph mcp`` on the same directory), it
serves the store read-only: searches see the writer's decisions as they are appended, writes
are refused with a message saying why.

``decigraph mcp --url URL --token T`` proxies every tool call to a running server as JSON-RPC;
the server records calls under the token's agent. ``--agent`` then has to be that agent: a
server acts as the agent its token maps to, so any other ``--agent`` is refused at start-up
rather than ignored. Logs go to stderr; stdout is the protocol.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from graph.errors import DecigraphError, StoreLockedError

from .address import ServerAddressError

if TYPE_CHECKING:
    from service.client import Transport
    from service.settings import Settings

DEFAULT_AGENT = "mcp-stdio"


class AgentMismatchError(DecigraphError):
    """``--agent`` names another agent than the one the server records calls under."""


def add_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--agent",
        default=None,
        help=(
            f"agent id the calls are recorded under, in-process (default {DEFAULT_AGENT}); "
            "through a server it must be the token's agent"
        ),
    )
    cmd.add_argument("--url", default=None, help="proxy to a running server instead")
    cmd.add_argument(
        "--token", default=None, help="with --url: its bearer token (default: $CSTP_TOKEN)"
    )
    cmd.add_argument("--chroma-url", dest="chroma_url", default=None)


def run_mcp(
    args: argparse.Namespace, settings: Settings, token_of: Callable[[Settings], str | None]
) -> int:
    import logging

    from service.client import InProcess
    from service.mcp.stdio import serve_stdio, transport_invoke

    # stdout is the protocol: every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
    session = f"mcp:{secrets.token_hex(4)}"  # this process is one MCP session
    transport, note = _transport(args, settings, token_of, session)
    try:
        if args.agent is not None and not isinstance(transport, InProcess):
            _require_agent(transport, args.agent)
        agent = args.agent or DEFAULT_AGENT
        role = "read-only" if transport.read_only else "serving"
        print(f"decigraph mcp: {role} stdio over {transport.description}", file=sys.stderr)
        if note is not None:
            print(f"decigraph mcp: {note}", file=sys.stderr)
        serve_stdio(transport_invoke(transport, note), agent)
    finally:
        transport.close()
    return 0


def _transport(
    args: argparse.Namespace,
    settings: Settings,
    token_of: Callable[[Settings], str | None],
    session: str,
) -> tuple[Transport, str | None]:
    """The client the tools call, and (read-only beside another process) what to say about it."""
    from service.client import InProcess, OverHttp
    from service.composition import open_app

    from .address import locate

    agent = args.agent or DEFAULT_AGENT
    if args.url:
        token = args.token or os.environ.get("CSTP_TOKEN")
        return OverHttp(args.url, token, timeout=120, session=session), None
    try:
        return InProcess(open_app(settings), agent=agent, session=session), None
    except StoreLockedError as exc:
        try:
            url = locate(settings.data_dir, exc.holder)
        except ServerAddressError:
            note = (
                f"{settings.data_dir} is held for writing by another process ({exc.holder}) "
                "that serves no address, so this one is read-only (writes are refused); to "
                "share one store between clients, run `decigraph serve` and start each with "
                "`decigraph mcp --url`"
            )
            app = open_app(settings, mode="read_only")
            return InProcess(app, agent=agent, session=session), note
        return OverHttp(url, token_of(settings), timeout=120, session=session), None


def _require_agent(transport: Transport, agent: str) -> None:
    """Refuse ``--agent`` unless it is the agent the server records this token's calls as."""
    import httpx

    try:
        answer = transport.call("cstp.queryDecisions", {"limit": 1})  # answers with its agent
    except httpx.TransportError as exc:
        message = f"cannot reach the server at {transport.description} to check --agent: {exc}"
        raise AgentMismatchError(message) from None
    acting = answer.get("agent") if isinstance(answer, dict) else None
    if acting != agent:
        raise AgentMismatchError(
            f"--agent {agent!r} cannot be honoured: the server at {transport.description} "
            f"records this token's calls as {acting!r} (it acts as the agent its token maps "
            f"to); use {agent!r}'s token, or leave --agent out"
        )
