"""Bearer tokens: who may call, and which agent id each call is recorded under.

Tokens come from ``CSTP_AUTH_TOKENS`` (``agent:token,agent2:token2``, as CSTP reads it) and/or
a token file (one ``agent:token`` per line). With neither, the first start creates a token for
agent ``default`` in ``<data-dir>/auth-tokens`` (mode 0600) and says how to use it. Running
without auth must be asked for (``--no-auth``) and is only allowed on a loopback address.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import sys
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import unquote

from fastapi import Depends, Request

from graph.errors import DecigraphError
from service.settings import Settings

TOKEN_FILE_NAME = "auth-tokens"
COOKIE = "decigraph_token"
ANONYMOUS = "anonymous"


class AuthConfigError(DecigraphError):
    """The auth settings cannot be used (a malformed pair, or no-auth off loopback)."""


class NotAuthenticated(Exception):  # noqa: N818 - an HTTP outcome, not a programming error
    """The request carries no valid token (answered 401 with ``WWW-Authenticate: Bearer``)."""


@dataclass(frozen=True)
class TokenTable:
    """Token -> agent id; ``enabled`` is False only when auth was explicitly switched off."""

    agents: dict[str, str]
    enabled: bool = True

    def agent_for(self, header: str | None) -> str | None:
        """The agent a ``Authorization`` header authenticates, or ``None``."""
        if not self.enabled:
            return ANONYMOUS
        scheme, _, token = (header or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:  # the scheme is case-insensitive (RFC 9110)
            return None
        for known, agent in self.agents.items():
            if secrets.compare_digest(known.encode(), token.encode()):
                return agent
        return None


def parse_pairs(text: str, origin: str) -> dict[str, str]:
    """``agent:token`` pairs separated by commas or newlines -> {token: agent}."""
    table: dict[str, str] = {}
    for number, raw in enumerate(text.replace(",", "\n").splitlines(), start=1):
        item = raw.strip()
        if not item or item.startswith("#"):
            continue
        agent, sep, token = item.partition(":")
        if not sep or not agent.strip() or len(token.strip()) < 16:
            raise AuthConfigError(
                f"{origin} entry {number} must look like agent:token (token of 16+ characters)"
            )
        table[token.strip()] = agent.strip()
    return table


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_tokens(settings: Settings) -> TokenTable:
    """The token table for these settings, creating a first token when none is configured."""
    if settings.no_auth:
        if not is_loopback(settings.host):
            raise AuthConfigError(
                f"--no-auth is only allowed on a loopback address, not {settings.host}"
            )
        return TokenTable({}, enabled=False)
    table: dict[str, str] = {}
    if settings.auth_tokens:
        table.update(parse_pairs(settings.auth_tokens, "CSTP_AUTH_TOKENS"))
    if settings.token_file is not None:
        table.update(parse_pairs(settings.token_file.read_text(), str(settings.token_file)))
    generated = settings.data_dir / TOKEN_FILE_NAME
    if not table and generated.exists():
        table.update(parse_pairs(generated.read_text(), str(generated)))
    if not table:
        token = secrets.token_urlsafe(32)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(generated, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(f"default:{token}\n")
        table[token] = "default"
        print(
            f"decigraph: created an API token for agent 'default' in {generated}\n"
            f"  export CSTP_TOKEN=$(cut -d: -f2- {generated})\n"
            '  curl -H "Authorization: Bearer $CSTP_TOKEN" ...',
            file=sys.stderr,
        )
    return TokenTable(table)


def agent_for_request(tokens: TokenTable, request: Request, *, cookie: bool = True) -> str | None:
    """The agent a Bearer header (or, for the explorer, its cookie) authenticates, or ``None``."""
    agent = tokens.agent_for(request.headers.get("authorization"))
    if agent is not None or not cookie:
        return agent
    value = request.cookies.get(COOKIE)
    if not value:
        return None
    return tokens.agent_for("Bearer " + unquote(value))


def authenticated_agent(request: Request) -> str:
    """FastAPI dependency: the agent the Bearer token maps to, or a 401 (the one check every
    protected API route declares)."""
    tokens: TokenTable = request.app.state.tokens
    agent = agent_for_request(tokens, request, cookie=False)
    if agent is None:
        raise NotAuthenticated
    return agent


Agent = Annotated[str, Depends(authenticated_agent)]
