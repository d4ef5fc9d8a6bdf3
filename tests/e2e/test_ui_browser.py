"""The explorer page in headless Debian Chromium against a live ``decigraph serve``.

Real server process, model and Chroma (like test_rpc_e2e); Playwright drives the system
Chromium at /usr/bin/chromium (never a downloaded browser). The screenshot lands in
``$DECIGRAPH_TEST_ARTIFACTS`` (default ``tests/artifacts``).

This module also holds what the other ``test_ui_*`` modules share: the sample graph (two
projects, rival decisions, an update, a review, a decision recorded after a known seq) and a
signed-in page that records script errors.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import httpx
import pytest

from service.http.auth import COOKIE
from service.http.ui import UI_DIR
from tests.e2e.test_serve import start_serve, stop_serve

if TYPE_CHECKING:
    from playwright._impl._api_structures import SetCookieParam
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
    mark: int = 0  # the last seq before "shard" was recorded
    head: int = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": f"cstp.{method}", "params": params}
        headers = {"Authorization": f"Bearer {TOKEN}"}
        answer: dict[str, Any] = self.client.post(
            f"{self.url}/cstp", json=body, headers=headers
        ).json()
        return answer

    def ok(self, method: str, params: dict[str, Any]) -> Any:
        answer = self.call(method, params)
        assert "error" not in answer, answer
        return answer["result"]


BILLING = "billing"
DECISIONS: dict[str, dict[str, Any]] = {
    "pg": {
        "decision": "Use PostgreSQL for the billing ledger",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.85,
        "reasons": [{"type": "analysis", "text": "ACID transactions and mature tooling"}],
        "tags": ["db", "billing"],
        "project": BILLING,
    },
    "orm": {
        "decision": "Use SQLAlchemy 2.0 for ledger data access",
        "confidence": 0.7,
        "project": BILLING,
    },
    "mysql": {
        "decision": "Use MySQL for the billing ledger",
        "category": "architecture",
        "project": BILLING,
    },
    "sqlite": {
        "decision": "Keep the billing ledger in SQLite",
        "category": "architecture",
        "project": BILLING,
    },
    "reports": {"decision": "Move the monthly billing reports onto the new ledger"},
    "alembic": {"decision": "Run ledger schema migrations with Alembic", "project": BILLING},
    "search": {
        "decision": "Use OpenSearch for the product catalogue search",
        "category": "architecture",
        "project": "catalog",
    },
    "nightly": {"decision": "Rebuild the catalogue search index every night", "project": "catalog"},
}
# source, type, target: every relation the explorer colours, around "pg".
LINKS = [
    ("orm", "depends_on", "pg"),
    ("mysql", "contradicts", "pg"),
    ("pg", "supersedes", "sqlite"),
    ("pg", "blocks", "reports"),
    ("alembic", "depends_on", "orm"),  # two hops from pg
    ("nightly", "depends_on", "search"),
]
# pg's update, as the history panel shows it (before -> after).
PG_CHANGES = {"confidence": 0.9, "context": "Chosen after the ledger load test"}
ORM_LESSONS = "Typed queries caught two ledger bugs before release"
# Recorded after `Sample.mark`: in the graph now, not as of the mark.
LATE = {"decision": "Shard the billing ledger by region", "project": BILLING}


def record_overridden(made: Sample, fields: dict[str, Any]) -> str:
    """Record ``fields`` past the gate. The sample deliberately holds rival choices, which the
    gate would refuse; and each pair the contradiction judge raises is kept as a suspected
    contradiction, which is the judge's reading, not the sample's: those are unlinked at once,
    so the graph is exactly the one drawn here (the contradiction shown is the one linked)."""
    override = {"reason": "sample data with deliberate rivals"}
    answer = made.ok("recordDecision", {**fields, "override": override})
    for conflict in answer.get("conflicts", []):
        made.ok(
            "unlinkDecisions",
            {"sourceId": answer["id"], "targetId": conflict["id"], "edgeType": "contradicts"},
        )
    return str(answer["id"])


def record_sample(made: Sample) -> None:
    for key, fields in DECISIONS.items():
        made.ids[key] = record_overridden(made, fields)
    for source, kind, target in LINKS:
        made.ok(
            "linkDecisions",
            {"sourceId": made.ids[source], "targetId": made.ids[target], "edgeType": kind},
        )
    made.ok("updateDecision", {"id": made.ids["pg"], "changes": PG_CHANGES})
    made.ok(
        "reviewDecision",
        {"id": made.ids["orm"], "outcome": "success", "lessons": ORM_LESSONS},
    )
    made.mark = made.ok("getReplicaStatus", {})["seq"]
    made.ids["shard"] = record_overridden(made, LATE)
    made.ok(
        "linkDecisions",
        {"sourceId": made.ids["shard"], "targetId": made.ids["pg"], "edgeType": "depends_on"},
    )
    made.head = made.ok("getReplicaStatus", {})["seq"]


@contextmanager
def serve_sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sample]:
    """A live server holding the sample graph (one per test module)."""
    assert (UI_DIR / "node_modules/d3/dist/d3.min.js").is_file(), "d3 missing: run `make ui`"
    data = tmp_path_factory.mktemp("ui") / "data"
    env = {**os.environ, "CSTP_AUTH_TOKENS": f"explorer:{TOKEN}", "DECIGRAPH_FSYNC": "never"}
    proc, url = start_serve(data, env)
    try:
        with httpx.Client(timeout=60) as client:
            made = Sample(url, {}, client)
            record_sample(made)
            yield made
    finally:
        stop_serve(proc)


@dataclass
class Session:
    page: Page
    problems: list[str] = field(default_factory=list)


def ui_cookie(url: str, value: str) -> SetCookieParam:
    """The cookie the login form sets."""
    host = urlsplit(url).hostname or "127.0.0.1"
    return {"name": COOKIE, "value": value, "domain": host, "path": "/ui", "sameSite": "Strict"}


@contextmanager
def browser_page(
    url: str, *, signed_in: bool = True, width: int = 1440, height: int = 900
) -> Iterator[Session]:
    """A Chromium page; signed in means the login form's session cookie is already set.
    Script errors, CSP refusals and failed loads land in ``Session.problems``."""
    from playwright.sync_api import sync_playwright

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
            context = browser.new_context(viewport={"width": width, "height": height})
            if signed_in:
                context.add_cookies([ui_cookie(url, quote(TOKEN, safe=""))])
            session = Session(context.new_page())
            session.page.on("pageerror", lambda exc: session.problems.append(f"error: {exc}"))
            session.page.on(
                "console",
                lambda m: session.problems.append(m.text) if m.type == "error" else None,
            )
            yield session
        finally:
            browser.close()


def open_explorer(page: Page, url: str, fragment: str = "") -> None:
    """Load /ui and wait until the overview has answered."""
    from playwright.sync_api import expect

    page.goto(f"{url}/ui{fragment}")
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.locator('#ov-salient[data-state="ready"]')).to_be_attached()


def test_cstp_ignores_the_explorer_cookie(sample: Sample) -> None:
    """The cookie opens /ui only: /cstp still needs the header (no CSRF through the cookie)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "cstp.getDecision", "params": {"id": "x"}}
    cookie = {"Cookie": f"decigraph_token={TOKEN}"}
    assert httpx.post(f"{sample.url}/cstp", json=body, headers=cookie).status_code == 401
    assert httpx.get(f"{sample.url}/ui", headers=cookie).status_code == 200


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sample]:
    with serve_sample(tmp_path_factory) as made:
        yield made


def sign_in(page: Page, url: str) -> None:
    """No token: the login form. A wrong token is refused on the spot (no reload, the form
    stays filled in); the right one opens the page, and a reload keeps it open."""
    from playwright.sync_api import expect

    first = page.goto(f"{url}/ui")
    assert first is not None
    assert first.status == 401
    expect(page.locator("#login-error")).to_be_hidden()
    page.fill("#token", "wrong-token-000000000")
    page.click("#login button")
    expect(page.locator("#login-error")).to_contain_text("refused this token")
    expect(page.locator("#token")).to_have_value("wrong-token-000000000")
    expect(page.locator("#login button")).to_be_enabled()
    page.fill("#token", TOKEN)
    page.click("#login button")
    expect(page.locator("#query")).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    reloaded = page.reload()
    assert reloaded is not None
    assert reloaded.status == 200


def test_a_stale_cookie_gets_the_form_with_a_message(sample: Sample) -> None:
    """A saved token the server no longer accepts: the form says so, not a blank page."""
    from playwright.sync_api import expect

    with browser_page(sample.url, signed_in=False) as s:
        s.page.context.add_cookies([ui_cookie(sample.url, "revoked-token-0000000")])
        response = s.page.goto(f"{sample.url}/ui")
        assert response is not None
        assert response.status == 401
        expect(s.page.locator("#login-error")).to_contain_text("not accepted")
        expect(s.page.locator("#token")).to_be_visible()


def search_and_open(page: Page, ids: dict[str, str]) -> None:
    """Hybrid recall lists the decision with its signals and the intent; a click draws it."""
    from playwright.sync_api import expect

    page.fill("#query", "which database did we choose for the billing ledger?")
    page.press("#query", "Enter")
    expect(page.locator("#tab-results")).to_have_attribute("aria-selected", "true")
    hit = page.locator(f'#results li[data-id="{ids["pg"]}"]')
    expect(hit).to_contain_text("Use PostgreSQL for the billing ledger")
    expect(hit.locator(".chip").first).to_be_visible()
    expect(page.locator("#intent")).to_contain_text("intent:")
    hit.locator("button").click()
    expect(page.locator('#graph[data-state="ready"]')).to_have_attribute("data-nodes", "6")


def check_graph(page: Page, ids: dict[str, str]) -> None:
    """One node per decision, one edge per relation coloured by type, size by salience."""
    from playwright.sync_api import expect

    edges = page.locator("#graph line.edge")
    expect(edges).to_have_count(5)  # two depends_on (orm, shard), one of each other colour
    drawn = edges.evaluate_all("ls => ls.map(l => [l.dataset.type, l.getAttribute('stroke')])")
    assert sorted(set(map(tuple, drawn))) == sorted(COLORS.items())
    legend = page.locator("#legend .legend-item:not(.absent)")
    expect(legend).to_have_count(len(COLORS) + 1)  # + "node size = salience"
    radii = page.locator("#graph g.node circle").evaluate_all(
        "cs => cs.map(c => [Number(c.dataset.salience), Number(c.getAttribute('r'))])"
    )
    assert len({r for _, r in radii}) > 1
    assert [r for _, r in sorted(radii)] == sorted(r for _, r in radii)
    # Depth 2 reaches the decision two hops out.
    page.select_option("#depth", "2")
    expect(page.locator("#graph")).to_have_attribute("data-nodes", "7")
    expect(page.locator(f'#graph g.node[data-id="{ids["alembic"]}"]')).to_be_visible()
    expect(edges).to_have_count(6)


def check_panel(page: Page, ids: dict[str, str]) -> None:
    """The rival decision: its text, its blocked guardrail status and its contradiction."""
    from playwright.sync_api import expect

    page.locator(f'#graph g.node[data-id="{ids["mysql"]}"] circle').click()
    panel = page.locator(f'#panel[data-state="ready"][data-id="{ids["mysql"]}"]')
    expect(panel.locator("#panel-text")).to_have_text("Use MySQL for the billing ledger")
    expect(panel.locator('[data-field="category"]')).to_have_text("architecture")
    expect(panel.locator('[data-field="project"]')).to_have_text(BILLING)
    status = panel.locator("#guardrail-status")
    expect(status).to_have_attribute("data-status", "blocked")
    expect(status).to_contain_text("Blocked")
    expect(panel.locator(".finding.block").first).to_contain_text(ids["pg"])
    rival = panel.locator(f'#contradictions li[data-id="{ids["pg"]}"]')
    expect(rival).to_contain_text("Use PostgreSQL for the billing ledger")
    expect(page.locator("#graph g.node.selected")).to_have_attribute("data-id", ids["mysql"])
    # The superseded decision names what superseded it.
    page.locator(f'#graph g.node[data-id="{ids["sqlite"]}"] circle').click()
    panel = page.locator(f'#panel[data-state="ready"][data-id="{ids["sqlite"]}"]')
    expect(panel.locator("#panel-lifecycle")).to_have_text("superseded")
    expect(panel.locator(f'#superseded-by [data-id="{ids["pg"]}"]')).to_be_visible()
    expect(page.locator("#error")).to_be_hidden()


def test_explorer_search_graph_and_panel(sample: Sample) -> None:
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
    with browser_page(sample.url, signed_in=False) as s:
        sign_in(s.page, sample.url)
        s.problems.clear()  # the refused sign-in logged its 401
        search_and_open(s.page, sample.ids)
        check_graph(s.page, sample.ids)
        check_panel(s.page, sample.ids)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        s.page.screenshot(path=str(ARTIFACTS / "ui-explorer.png"))
    assert s.problems == []  # no script errors, no CSP refusals, no failed calls


def test_edge_family_filters(sample: Sample) -> None:
    """Derived families start off; ticking them adds dashed edges (and getGraph is asked for
    exactly those types); unticking the decision relations leaves only the derived ones."""
    from playwright.sync_api import expect

    with browser_page(sample.url) as s:
        page = s.page
        open_explorer(page, sample.url, f"#node={sample.ids['pg']}")
        graph = page.locator('#graph[data-state="ready"]')
        expect(graph).to_have_attribute("data-edges", "5")
        for family in ("temporal", "entity", "semantic", "causal"):
            expect(page.locator(f"#fam-{family}")).not_to_be_checked()
        expect(page.locator("#fam-relations")).to_be_checked()
        expect(page.locator("#graph line.edge.derived")).to_have_count(0)
        expect(page.locator('#legend .legend-item[data-type="semantic"]')).to_have_count(0)

        expect(graph).to_have_attribute("data-families", "relations")
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.post_data or "") if "/cstp" in r.url else None)
        for family in ("temporal", "entity", "semantic", "causal"):
            page.check(f"#fam-{family}")
        everything = "relations temporal entity semantic causal"
        expect(graph).to_have_attribute("data-families", everything)
        expect(page.locator("#graph line.edge.derived").first).to_be_attached()
        assert any('"edgeTypes"' in body and "getGraph" in body for body in asked)
        all_edges = int(graph.get_attribute("data-edges") or 0)
        assert all_edges > 5
        expect(page.locator('#legend .legend-item[data-type="semantic"]')).to_have_count(1)

        page.uncheck("#fam-relations")
        expect(graph).to_have_attribute("data-families", "temporal entity semantic causal")
        expect(page.locator('#graph line.edge[data-type="depends_on"]')).to_have_count(0)
        derived = page.locator("#graph line.edge.derived").count()
        expect(page.locator("#graph line.edge")).to_have_count(derived)
        assert derived < all_edges
        for family in ("temporal", "entity", "semantic", "causal"):
            page.uncheck(f"#fam-{family}")
        expect(graph).to_have_attribute("data-families", "")
        expect(page.locator("#graph line.edge")).to_have_count(0)
        page.check("#fam-relations")
        expect(graph).to_have_attribute("data-families", "relations")
        expect(graph).to_have_attribute("data-edges", "5")
        expect(page.locator("#graph line.edge.derived")).to_have_count(0)
    assert s.problems == []


def test_a_token_revoked_mid_session_asks_to_sign_in_again(sample: Sample) -> None:
    """/cstp starts refusing the token while the page is open: a message and a button back to
    the form (the cookie forgotten), never a silently empty page."""
    from playwright.sync_api import expect

    with browser_page(sample.url) as s:
        page = s.page
        open_explorer(page, sample.url)
        page.route(
            "**/cstp", lambda route: route.fulfill(status=401, body="authentication required")
        )
        page.click("#overview-refresh")
        expect(page.locator("#ov-salient")).to_have_attribute("data-state", "error")
        expect(page.locator("#ov-salient .note")).to_contain_text("token was refused")
        expect(page.locator("#signin-again")).to_be_visible()
        page.unroute("**/cstp")
        with page.expect_navigation():
            page.click("#signin-again")
        expect(page.locator("#login")).to_be_visible()
        assert all(c["name"] != COOKIE for c in page.context.cookies())
    assert any("401" in problem for problem in s.problems)  # the refused calls, and only those
    assert all("401" in problem for problem in s.problems)
