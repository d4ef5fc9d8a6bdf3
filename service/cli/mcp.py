"""``decigraph mcp``: the MCP tools on stdio, for clients that spawn their tool servers.

``decigraph mcp --data-dir D`` opens the store as its writer and answers as ``--agent``; when a
server holds the directory it asks that server instead (the address it published, its token
from ``CSTP_TOKEN`` or the directory's token file), as ``decigraph recall`` does.
``decigraph mcp --url URL --token T`` proxies every tool call to a running server as JSON-RPC;
the server then records calls under the token's agent. Logs go to stderr; stdout is the
protocol.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from graph.errors import StoreLockedError

if TYPE_CHECKING:
    from service.settings import Settings

DEFAULT_AGENT = "mcp-stdio"


def add_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--agent",
        default=DEFAULT_AGENT,
        help=f"agent id the calls are recorded under, in-process (default {DEFAULT_AGENT})",
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

    from service.client import InProcess, OverHttp, Transport
    from service.composition import open_app
    from service.mcp.stdio import serve_stdio, transport_invoke

    from .address import locate

    # stdout is the protocol: every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
    transport: Transport
    if args.url:
        transport = OverHttp(args.url, args.token or os.environ.get("CSTP_TOKEN"), timeout=120)
    else:
        try:
            transport = InProcess(open_app(settings), agent=args.agent)
        except StoreLockedError as exc:
            url = locate(settings.data_dir, exc.holder)
            transport = OverHttp(url, token_of(settings), timeout=120)
    print(f"decigraph mcp: serving stdio over {transport.description}", file=sys.stderr)
    try:
        serve_stdio(transport_invoke(transport), args.agent)
    finally:
        transport.close()
    return 0
