"""The explorer's overview (salient decisions, open contradictions, the ready queue, recent
changes), its project filter, and how it degrades on a server without the newer methods.

Headless Debian Chromium against a live ``decigraph serve`` holding the sample graph of
test_ui_browser (see there).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.e2e.test_ui_browser import (
    BILLING,
    CHROMIUM,
    LATE,
    Sample,
    browser_page,
    open_explorer,
    serve_sample,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sample]:
    with serve_sample(tmp_path_factory) as made:
        yield made


def test_overview_lists_salience_contradictions_and_the_ready_queue(sample: Sample) -> None:
    """The page opens on the overview; every entry opens that decision's neighbourhood."""
    from playwright.sync_api import expect

    ids = sample.ids
    with browser_page(sample.url) as s:
        page = s.page
        open_explorer(page, sample.url)
        expect(page.locator("#tab-overview")).to_have_attribute("aria-selected", "true")
        expect(page.locator("#graph-empty")).to_be_visible()
        salient = page.locator("#ov-salient li")
        expect(salient.first).to_have_attribute("data-id", ids["pg"])  # the hub is the most salient
        expect(salient.first).to_contain_text("Use PostgreSQL for the billing ledger")
        assert 1 < salient.count() <= 8
        pair = page.locator("#ov-contradictions li.ov-pair")
        expect(pair).to_have_count(1)
        assert {pair.get_attribute("data-a"), pair.get_attribute("data-b")} == {
            ids["pg"],
            ids["mysql"],
        }
        expect(pair).to_contain_text("Use MySQL for the billing ledger")
        expect(page.locator('#ov-ready[data-state="ready"]')).to_be_attached()
        expect(page.locator('#ov-ready li[data-type="resolve_contradiction"]')).to_have_count(1)
        expect(
            page.locator(f'#ov-ready li[data-type="unblock"][data-id="{ids["reports"]}"]')
        ).to_be_visible()

        # A click on the MySQL side of the contradiction draws MySQL's neighbourhood.
        pair.locator("button").filter(has_text="MySQL").click()
        expect(page.locator('#graph[data-state="ready"]')).to_have_attribute("data-nodes", "2")
        expect(
            page.locator(f'#panel[data-state="ready"][data-id="{ids["mysql"]}"]')
        ).to_be_attached()
        assert f"node={ids['mysql']}" in page.url  # the view is in the URL's fragment
        # ... and a ready-queue entry draws the blocked decision's.
        page.locator(f'#ov-ready li[data-id="{ids["reports"]}"] button').click()
        expect(page.locator("#graph g.node.center")).to_have_attribute("data-id", ids["reports"])
        expect(page.locator(f'#ov-ready li[data-id="{ids["reports"]}"]')).to_have_class("active")
    assert s.problems == []


def test_recent_changes(sample: Sample) -> None:
    """listEvents, newest first: the last link (shard -> pg) on top, with its seq; the seq chip
    moves the timeline there, the entry opens the node."""
    from playwright.sync_api import expect

    with browser_page(sample.url) as s:
        page = s.page
        open_explorer(page, sample.url)
        events = page.locator('#ov-events[data-state="ready"] li[data-seq]')
        expect(events.first).to_have_attribute("data-seq", str(sample.head))
        expect(events.first).to_have_attribute("data-op", "link")
        record = page.locator(f'#ov-events li[data-op="record"][data-id="{sample.ids["shard"]}"]')
        expect(record).to_contain_text(LATE["decision"][:20])
        seqs = [int(x) for x in events.evaluate_all("ls => ls.map(l => l.dataset.seq)")]
        assert seqs == sorted(seqs, reverse=True)
        expect(page.locator("#timeline-end")).to_contain_text(f"seq {sample.head} · ")  # its time
        record.locator("button.ov-item").click()
        expect(page.locator("#graph g.node.center")).to_have_attribute(
            "data-id", sample.ids["shard"]
        )
        record.locator(".seq-chip").click()
        expect(page.locator("#asof-banner")).to_be_visible()
        expect(page.locator("#asof")).to_have_value(record.get_attribute("data-seq") or "")
    assert s.problems == []


def check_graph_filtered(page: Page, sample: Sample) -> None:
    from playwright.sync_api import expect

    ids = sample.ids
    graph = page.locator('#graph[data-state="ready"]')
    page.locator(f'#ov-salient li[data-id="{ids["pg"]}"] button').click()
    expect(graph).to_have_attribute("data-nodes", "5")  # "reports" has no project
    expect(page.locator(f'#graph g.node[data-id="{ids["reports"]}"]')).to_have_count(0)
    expect(page.locator("#graph-title")).to_contain_text("1 hidden by the project filter")
    page.select_option("#project", "")
    expect(graph).to_have_attribute("data-nodes", "6")
    expect(page.locator(f'#graph g.node[data-id="{ids["reports"]}"]')).to_have_count(1)


def test_project_filter(sample: Sample) -> None:
    """The select lists the decisions' projects; a project narrows the overview lists and the
    graph (the centre stays), and survives a reload through the URL."""
    from playwright.sync_api import expect

    ids = sample.ids
    with browser_page(sample.url) as s:
        page = s.page
        open_explorer(page, sample.url)
        options = page.locator("#project option").evaluate_all("os => os.map(o => o.value)")
        assert options[:3] == ["", BILLING, "catalog"]
        page.select_option("#project", "catalog")
        salient = page.locator('#ov-salient[data-state="ready"] li')
        expect(salient).to_have_count(2)
        assert set(salient.evaluate_all("ls => ls.map(l => l.dataset.id)")) == {
            ids["search"],
            ids["nightly"],
        }
        expect(page.locator('#ov-contradictions[data-state="ready"] .ov-empty')).to_be_visible()
        expect(page.locator('#ov-ready[data-state="ready"] li')).to_have_count(0)

        page.select_option("#project", BILLING)
        expect(
            page.locator(f'#ov-salient[data-state="ready"] li[data-id="{ids["pg"]}"]')
        ).to_be_visible()
        expect(page.locator(f'#ov-salient li[data-id="{ids["search"]}"]')).to_have_count(0)
        expect(page.locator("#ov-contradictions li.ov-pair")).to_have_count(1)
        expect(page.locator('#ov-ready li[data-type="unblock"]')).to_have_count(0)  # reports: none
        page.reload()
        expect(page.locator("#project")).to_have_value(BILLING)
        expect(
            page.locator(f'#ov-salient[data-state="ready"] li[data-id="{ids["search"]}"]')
        ).to_have_count(0)
        check_graph_filtered(page, sample)
    assert s.problems == []


def old_server(route: Route) -> None:
    """Answer as a server without the newer methods would: -32601 for listEvents and
    getDecisionHistory; asOf dropped (with a warning, as the lenient params layer does)."""
    request = json.loads(route.request.post_data or "{}")
    method = request.get("method", "")
    if method in ("cstp.listEvents", "cstp.getDecisionHistory"):
        error = {"code": -32601, "message": f"unknown method '{method}'"}
        body = {"jsonrpc": "2.0", "id": request.get("id"), "error": error}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))
        return
    params = request.get("params") or {}
    if "asOf" in params:
        del params["asOf"]
        route.continue_(post_data=json.dumps(request))
        return
    route.continue_()


def test_degrades_on_a_server_without_history(sample: Sample) -> None:
    """No listEvents, no getDecisionHistory, asOf ignored: explicit notes, the timeline goes
    back to live with a message, and no script error anywhere."""
    from playwright.sync_api import expect

    with browser_page(sample.url) as s:
        page = s.page
        page.route("**/cstp", old_server)
        open_explorer(page, sample.url)
        events = page.locator('#ov-events[data-state="unavailable"]')
        expect(events).to_contain_text("Not available on this server (cstp.listEvents)")
        expect(page.locator(f'#ov-salient li[data-id="{sample.ids["pg"]}"]')).to_be_visible()
        page.locator(f'#ov-salient li[data-id="{sample.ids["pg"]}"] button').click()
        history = page.locator('#panel[data-state="ready"] #history[data-state="unavailable"]')
        expect(history).to_contain_text("not available on this server")
        expect(page.locator("#panel-text")).to_have_text("Use PostgreSQL for the billing ledger")
        # The slider still comes from getReplicaStatus; the server ignores asOf: say so.
        expect(page.locator("#asof")).to_be_enabled()
        page.locator("#asof").fill(str(sample.mark))
        expect(page.locator("#error-text")).to_contain_text("ignores asOf")
        expect(page.locator("#asof-banner")).to_be_hidden()
        expect(page.locator("#asof")).to_be_disabled()
        expect(page.locator("#asof-label")).to_contain_text("no time travel")
        expect(page.locator('#graph[data-state="ready"]')).to_have_attribute("data-nodes", "6")
    assert s.problems == []
