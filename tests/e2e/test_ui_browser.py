"""The explorer page in headless Debian Chromium against a live ``decigraph serve``.

Real server process, model and Chroma (like test_rpc_e2e); Playwright drives the system
Chromium at /usr/bin/chromium (never a downloaded browser). The screenshot lands in
``$DECIGRAPH_TEST_ARTIFACTS`` (default ``tests/artifacts``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from service.http.ui import UI_DIR
from tests.e2e.test_serve import start_serve, stop_serve

if TYPE_CHECKING:
    from playwright.sync_api import Page

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("DECIGRAPH_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("DECIGRAPH_TEST_ARTIFACTS", ROOT / "tests" / "artifacts"))
TOKEN = "explorer-token-0123456789"
# What explorer.js promises for each relation type (the legend shows the same colours).
COLORS = {
    "depends_on": "#2563eb",
    "supersedes": "#7c3aed",
    "contradicts": "#dc2626",
    "blocks": "#ea580c",
}

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (CI installs Debian's chromium)"
)


@dataclass
class Sample:
    url: str
    ids: dict[str, str]
    client: httpx.Client

    def ok(self, method: str, params: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
        answer = self.client.post(
            f"{self.url}/cstp", json=body, headers={"Authorization": f"Bearer {TOKEN}"}
        ).json()
        assert "error" not in answer, answer
        return answer["result"]


DECISIONS = {
    "pg": {
        "decision": "Use PostgreSQL for the billing ledger",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.85,
        "reasons": [{"type": "analysis", "text": "ACID transactions and mature tooling"}],
        "tags": ["db", "billing"],
    },
    "orm": {"decision": "Use SQLAlchemy 2.0 for ledger data access", "confidence": 0.7},
    "mysql": {"decision": "Use MySQL for the billing ledger", "category": "architecture"},
    "sqlite": {"decision": "Keep the billing ledger in SQLite", "category": "architecture"},
    "reports": {"decision": "Move the monthly billing reports onto the new ledger"},
    "alembic": {"decision": "Run ledger schema migrations with Alembic"},
}
# source, type, target: every relation the explorer colours, around "pg".
LINKS = [
    ("orm", "depends_on", "pg"),
    ("mysql", "contradicts", "pg"),
    ("pg", "supersedes", "sqlite"),
    ("pg", "blocks", "reports"),
    ("alembic", "depends_on", "orm"),  # two hops from pg
]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sample]:
    assert (UI_DIR / "node_modules/d3/dist/d3.min.js").is_file(), "d3 missing: run `make ui`"
    data = tmp_path_factory.mktemp("ui") / "data"
    env = {**os.environ, "CSTP_AUTH_TOKENS": f"explorer:{TOKEN}", "DECIGRAPH_FSYNC": "never"}
    proc, url = start_serve(data, env)
    try:
        with httpx.Client(timeout=60) as client:
            made = Sample(url, {}, client)
            # The sample deliberately holds rival choices, which the gate would refuse.
            override = {"reason": "sample data with deliberate rivals"}
            for key, fields in DECISIONS.items():
                made.ids[key] = made.ok("recordDecision", {**fields, "override": override})["id"]
            for source, kind, target in LINKS:
                made.ok(
                    "linkDecisions",
                    {"sourceId": made.ids[source], "targetId": made.ids[target], "edgeType": kind},
                )
            yield made
    finally:
        stop_serve(proc)


def test_cstp_ignores_the_explorer_cookie(sample: Sample) -> None:
    """The cookie opens /ui only: /cstp still needs the header (no CSRF through the cookie)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "cstp.getDecision", "params": {"id": "x"}}
    cookie = {"Cookie": f"decigraph_token={TOKEN}"}
    assert httpx.post(f"{sample.url}/cstp", json=body, headers=cookie).status_code == 401
    assert httpx.get(f"{sample.url}/ui", headers=cookie).status_code == 200


def sign_in(page: Page, url: str) -> None:
    """No token: the login form. A wrong token is refused, the right one opens the page."""
    from playwright.sync_api import expect

    first = page.goto(f"{url}/ui")
    assert first is not None
    assert first.status == 401
    page.fill("#token", "wrong-token-000000000")
    page.click("#login button")
    expect(page.locator("#login .error")).to_contain_text("not accepted")
    page.fill("#token", TOKEN)
    page.click("#login button")
    expect(page.locator("#query")).to_be_visible()


def search_and_open(page: Page, ids: dict[str, str]) -> None:
    """Hybrid recall lists the decision with its signals and the intent; a click draws it."""
    from playwright.sync_api import expect

    page.fill("#query", "which database did we choose for the billing ledger?")
    page.press("#query", "Enter")
    hit = page.locator(f'#results li[data-id="{ids["pg"]}"]')
    expect(hit).to_contain_text("Use PostgreSQL for the billing ledger")
    expect(hit.locator(".chip").first).to_be_visible()
    expect(page.locator("#intent")).to_contain_text("intent:")
    hit.locator("button").click()
    expect(page.locator('#graph[data-state="ready"]')).to_have_attribute("data-nodes", "5")


def check_graph(page: Page, ids: dict[str, str]) -> None:
    """One node per decision, one edge per relation coloured by type, size by salience."""
    from playwright.sync_api import expect

    edges = page.locator("#graph line.edge")
    expect(edges).to_have_count(4)
    drawn = edges.evaluate_all("ls => ls.map(l => [l.dataset.type, l.getAttribute('stroke')])")
    assert sorted(drawn) == sorted([t, COLORS[t]] for t in COLORS)
    legend = page.locator("#legend .legend-item:not(.absent)")
    expect(legend).to_have_count(len(COLORS) + 1)  # + "node size = salience"
    radii = page.locator("#graph g.node circle").evaluate_all(
        "cs => cs.map(c => [Number(c.dataset.salience), Number(c.getAttribute('r'))])"
    )
    assert len({r for _, r in radii}) > 1
    assert [r for _, r in sorted(radii)] == sorted(r for _, r in radii)
    # Depth 2 reaches the decision two hops out; derived edges come and go with the box.
    page.select_option("#depth", "2")
    expect(page.locator("#graph")).to_have_attribute("data-nodes", "6")
    expect(page.locator(f'#graph g.node[data-id="{ids["alembic"]}"]')).to_be_visible()
    page.check("#derived")
    expect(page.locator("#graph line.edge.derived").first).to_be_attached()
    page.uncheck("#derived")
    expect(edges).to_have_count(5)


def check_panel(page: Page, ids: dict[str, str]) -> None:
    """The rival decision: its text, its blocked guardrail status and its contradiction."""
    from playwright.sync_api import expect

    page.locator(f'#graph g.node[data-id="{ids["mysql"]}"] circle').click()
    panel = page.locator(f'#panel[data-state="ready"][data-id="{ids["mysql"]}"]')
    expect(panel.locator("#panel-text")).to_have_text("Use MySQL for the billing ledger")
    expect(panel.locator('[data-field="category"]')).to_have_text("architecture")
    status = panel.locator("#guardrail-status")
    expect(status).to_have_attribute("data-status", "blocked")
    expect(status).to_contain_text("Blocked")
    expect(panel.locator(".finding.block").first).to_contain_text(ids["pg"])
    rival = panel.locator(f'#contradictions li[data-id="{ids["pg"]}"]')
    expect(rival).to_contain_text("Use PostgreSQL for the billing ledger")
    expect(page.locator("#graph g.node.selected")).to_have_attribute("data-id", ids["mysql"])
    expect(page.locator("#error")).to_be_hidden()


def test_explorer_search_graph_and_panel(sample: Sample) -> None:
    from playwright.sync_api import sync_playwright

    verdict = sample.ok(
        "checkGuardrails",
        {
            "action": {
                "description": DECISIONS["mysql"]["decision"],
                "category": "architecture",
                "contradicts": [sample.ids["pg"]],
            }
        },
    )
    assert verdict["allowed"] is False  # the sample holds what the panel should show
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-dev-shm-usage",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            sign_in(page, sample.url)
            problems.clear()  # the refused sign-in logged its 401
            search_and_open(page, sample.ids)
            check_graph(page, sample.ids)
            check_panel(page, sample.ids)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "ui-explorer.png"))
        finally:
            browser.close()
    assert problems == []  # no script errors, no CSP refusals, no failed calls
