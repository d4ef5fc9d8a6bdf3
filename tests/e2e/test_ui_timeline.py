"""The explorer's history panel and timeline (as-of slider), in headless Debian Chromium
against a live ``decigraph serve`` holding the sample graph of test_ui_browser.

The sample: pg is updated (confidence 0.85 -> 0.9, a context added), orm reviewed, then
``Sample.mark`` is taken; "shard" (depends on pg) is recorded after it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.e2e.test_ui_browser import (
    CHROMIUM,
    ORM_LESSONS,
    PG_CHANGES,
    Sample,
    browser_page,
    open_explorer,
    serve_sample,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page, Request

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sample]:
    with serve_sample(tmp_path_factory) as made:
        yield made


def update_seq(sample: Sample) -> int:
    events = sample.ok("getDecisionHistory", {"id": sample.ids["pg"]})["events"]
    (update,) = [e["seq"] for e in events if e["op"] == "update"]
    return int(update)


def open_node(page: Page, node_id: str) -> None:
    from playwright.sync_api import expect

    page.locator(f'#graph g.node[data-id="{node_id}"] circle').click()
    expect(
        page.locator(f'#panel[data-state="ready"][data-id="{node_id}"] #history')
    ).to_be_attached()


def test_history_panel(sample: Sample) -> None:
    """Each event of the selected decision: the update's before/after, the supersession, a
    review's outcome and lessons; derived links folded; a seq chip moves the timeline."""
    from playwright.sync_api import expect

    ids = sample.ids
    with browser_page(sample.url) as s:
        page = s.page
        open_explorer(page, sample.url)
        page.locator(f'#ov-salient li[data-id="{ids["pg"]}"] button').click()
        history = page.locator('#panel[data-state="ready"] #history[data-state="ready"]')
        update = history.locator('li.history-event[data-op="update"]')
        expect(update).to_have_count(1)
        expect(update.locator(".history-head")).to_contain_text("updated")
        expect(update.locator(".history-head")).to_contain_text("explorer")  # the actor
        confidence = update.locator('tr[data-change="confidence"]')
        expect(confidence.locator(".before")).to_have_text("0.85")
        expect(confidence.locator(".after")).to_have_text(str(PG_CHANGES["confidence"]))
        context = update.locator('tr[data-change="context"]')
        expect(context.locator(".before")).to_have_text("—")
        expect(context.locator(".after")).to_have_text(str(PG_CHANGES["context"]))
        supersedes = history.locator('li[data-action="supersedes"]')
        expect(supersedes.locator(f'.history-edge [data-id="{ids["sqlite"]}"]')).to_have_text(
            "Keep the billing ledger in SQLite"
        )
        seqs = [
            int(x)
            for x in history.locator("li.history-event").evaluate_all(
                "ls => ls.map(l => l.dataset.seq)"
            )
        ]
        assert seqs == sorted(seqs, reverse=True)  # newest first
        expect(history.locator('li[data-op="record"][data-action="recorded"]')).to_have_count(1)

        # Links retrieval derived on write are folded behind a box.
        derived = history.locator("li.history-event.derived")
        if derived.count():
            expect(derived.first).to_be_hidden()
            page.check("#history-derived")
            expect(derived.first).to_be_visible()

        open_node(page, ids["orm"])
        review = page.locator('#history li[data-op="review"]')
        expect(review.locator(".badge")).to_have_text("success")
        expect(review.locator(".lessons")).to_contain_text(ORM_LESSONS)
        expect(page.locator("#reviews li[data-outcome='success'] .lessons")).to_contain_text(
            ORM_LESSONS
        )

        open_node(page, ids["sqlite"])
        superseded = page.locator('#history li[data-action="superseded"]')
        expect(superseded.locator(f'[data-id="{ids["pg"]}"]')).to_be_visible()

        # The update's chip: the timeline moves there; later events are marked as later.
        page.locator(f'#graph g.node[data-id="{ids["pg"]}"] circle').click()
        seq = update_seq(sample)
        page.locator(f'#history li[data-op="update"] .seq-chip[data-asof="{seq}"]').click()
        expect(page.locator("#asof-banner")).to_contain_text(f"as of seq {seq}")
        expect(page.locator("#asof")).to_have_value(str(seq))
        later = page.locator(f'#panel[data-state="ready"] #history li[data-seq="{sample.head}"]')
        expect(later).to_have_class(re.compile(r"\bfuture\b"))
    assert s.problems == []


# What dragging the slider does: an input event at every step, no change event until the end.
DRAG = """(values) => {
  const slider = document.getElementById("asof");
  for (const value of values) {
    slider.value = String(value);
    slider.dispatchEvent(new Event("input"));
  }
}"""


def graph_requests(requests: list[Request]) -> list[dict[str, object]]:
    bodies = [json.loads(r.post_data or "{}") for r in requests if r.url.endswith("/cstp")]
    return [b.get("params") or {} for b in bodies if b.get("method") == "cstp.getGraph"]


def test_timeline_redraws_the_past(sample: Sample) -> None:
    """The slider redraws the graph (and the overview and the panel) as of a seq: the node
    recorded later is gone, a banner says so with the event's time; Now brings it back."""
    from playwright.sync_api import expect

    ids = sample.ids
    with browser_page(sample.url) as s:
        page = s.page
        open_explorer(page, sample.url, f"#node={ids['pg']}")
        graph = page.locator('#graph[data-state="ready"]')
        expect(graph).to_have_attribute("data-nodes", "6")
        expect(page.locator(f'#graph g.node[data-id="{ids["shard"]}"]')).to_have_count(1)
        slider = page.locator("#asof")
        expect(slider).to_have_attribute("max", str(sample.head))
        expect(slider).to_have_value(str(sample.head))
        expect(page.locator("#asof-label")).to_contain_text(f"now · seq {sample.head}")
        expect(page.locator("#asof-banner")).to_be_hidden()

        # A drag sends many input events: one request, for where the slider stopped.
        requests: list[Request] = []

        def seen(request: Request) -> None:  # Playwright wants a function, not a bound method
            requests.append(request)

        page.on("request", seen)
        page.evaluate(DRAG, list(range(sample.head - 1, sample.mark - 1, -1)))
        expect(
            page.locator(f'#graph[data-state="ready"][data-asof="{sample.mark}"]')
        ).to_have_attribute("data-nodes", "5")
        asked = [p.get("asOf") for p in graph_requests(requests)]
        assert asked == [sample.mark], asked
        expect(page.locator(f'#graph g.node[data-id="{ids["shard"]}"]')).to_have_count(0)
        expect(page.locator("#graph line.edge")).to_have_count(4)
        banner = page.locator("#asof-banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text(f"as of seq {sample.mark}, ")
        expect(banner).to_contain_text(" UTC")  # the event's time
        expect(page.locator("#graph-title")).to_contain_text(f"as of seq {sample.mark}")
        expect(page.locator("#panel-text")).to_have_text("Use PostgreSQL for the billing ledger")
        expect(page.locator(".panel-past")).to_contain_text(f"seq {sample.mark}")
        assert f"seq={sample.mark}" in page.url
        top = page.locator('#ov-events[data-state="ready"] li[data-seq]').first
        expect(top).to_have_attribute("data-seq", str(sample.mark))

        # Before the update: the panel shows the old confidence.
        before = update_seq(sample) - 1
        slider.fill(str(before))
        expect(page.locator(f'#graph[data-state="ready"][data-asof="{before}"]')).to_be_attached()
        expect(page.locator('#panel[data-state="ready"] [data-field="confidence"]')).to_have_text(
            "85%"
        )

        page.click("#asof-now")
        expect(page.locator('#graph[data-state="ready"][data-asof=""]')).to_have_attribute(
            "data-nodes", "6"
        )
        expect(page.locator(f'#graph g.node[data-id="{ids["shard"]}"]')).to_have_count(1)
        expect(banner).to_be_hidden()
        expect(slider).to_have_value(str(sample.head))
        expect(page.locator('#panel[data-state="ready"] [data-field="confidence"]')).to_have_text(
            "90%"
        )
        assert "seq=" not in page.url
    assert s.problems == []


def test_a_node_recorded_later_is_not_drawn_in_the_past(sample: Sample) -> None:
    """A link to the past (#node=...&seq=...) before the node existed: a clear note on the
    canvas and in the panel, no error; moving to now draws it."""
    from playwright.sync_api import expect

    shard = sample.ids["shard"]
    with browser_page(sample.url) as s:
        page = s.page
        open_explorer(page, sample.url, f"#node={shard}&seq={sample.mark}")
        expect(page.locator('#graph[data-state="missing"]')).to_be_attached()
        expect(page.locator("#graph-empty")).to_contain_text(
            f"not in the graph as of seq {sample.mark}"
        )
        expect(page.locator("#panel-missing")).to_contain_text(f"as of seq {sample.mark}")
        expect(page.locator("#error")).to_be_hidden()
        page.click("#asof-banner-now")
        expect(page.locator('#graph[data-state="ready"]')).to_have_attribute("data-nodes", "2")
        expect(page.locator("#graph g.node.center")).to_have_attribute("data-id", shard)
    assert s.problems == []
