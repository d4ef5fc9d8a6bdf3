"""Screenshots of the explorer, checked pixel by pixel, for the README.

The images land in ``$DECIGRAPH_TEST_ARTIFACTS/ui-screens`` (default ``tests/artifacts``); with
``DECIGRAPH_UI_SCREENSHOTS=1`` they are (re)written to ``service/ui/screenshots/`` instead,
which the README shows::

    DECIGRAPH_UI_SCREENSHOTS=1 .venv/bin/pytest tests/e2e/test_ui_screens.py

Each is checked whatever its destination: its size, and colours that prove it shows what it
should (the relations' colours in the graph, the amber of the as-of banner...).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.e2e.test_ui_browser import (
    ARTIFACTS,
    CHROMIUM,
    ROOT,
    Sample,
    browser_page,
    open_explorer,
    serve_sample,
)

if TYPE_CHECKING:
    from PIL.Image import Image
    from playwright.sync_api import Page

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}")
PIL = pytest.importorskip("PIL.Image")
ImageChops = pytest.importorskip("PIL.ImageChops")
ImageStat = pytest.importorskip("PIL.ImageStat")

REGENERATE = os.environ.get("DECIGRAPH_UI_SCREENSHOTS") == "1"
SHOTS = ROOT / "service" / "ui" / "screenshots" if REGENERATE else ARTIFACTS / "ui-screens"
WIDTH, HEIGHT = 1440, 900
# explorer.js's relation colours, as drawn (stroke) in the graph.
RELATION_RGB = {
    "depends_on": (0x25, 0x63, 0xEB),
    "supersedes": (0x7C, 0x3A, 0xED),
    "contradicts": (0xDC, 0x26, 0x26),
    "blocks": (0xEA, 0x58, 0x0C),
    "refines": (0x0D, 0x94, 0x88),
    "relates_to": (0x65, 0xA3, 0x0D),
}
BANNER_RGB = (0xFE, 0xF3, 0xC7)  # the as-of banner's amber
CONTRADICTION_RGB = (0xFE, 0xF2, 0xF2)  # an open contradiction's card
AFTER_RGB = (0x16, 0x65, 0x34)  # an "after" value in the history's change table
# A few more decisions around pg, so that every relation colour shows in the pictures.
EXTRA = [
    ("partition", "Partition the ledger tables by month", "refines", "pg"),
    ("backups", "Take nightly logical backups of the ledger", "relates_to", "pg"),
]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sample]:
    with serve_sample(tmp_path_factory) as made:
        override = {"reason": "sample data"}
        for key, text, kind, target in EXTRA:
            fields = {"decision": text, "project": "billing", "override": override}
            made.ids[key] = made.ok("recordDecision", fields)["id"]
            link = {"sourceId": made.ids[key], "targetId": made.ids[target], "edgeType": kind}
            made.ok("linkDecisions", link)
        made.head = made.ok("getReplicaStatus", {})["seq"]
        yield made


def near(pixel: tuple[int, ...], rgb: tuple[int, int, int], tolerance: int = 18) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], rgb, strict=True))


def count(image: Image, rgb: tuple[int, int, int], tolerance: int = 18) -> int:
    """Pixels of about this colour (antialiased lines keep their colour at the centre)."""
    total = 0
    for n, pixel in image.convert("RGB").getcolors(maxcolors=1 << 24) or []:
        if isinstance(pixel, tuple) and near(pixel, rgb, tolerance):
            total += n
    return total


def shoot(page: Page, name: str) -> tuple[Image, Path]:
    """Save a screenshot as a 256-colour PNG (a quarter of the size, the same to the eye) and
    return it as saved."""
    raw = PIL.open(io.BytesIO(page.screenshot())).convert("RGB")
    assert raw.size == (WIDTH, HEIGHT)
    colours = raw.getcolors(maxcolors=1 << 24) or []
    assert len(colours) > 500  # text, lines and shades, not a flat fill
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    # Octree keeps the few pixels of each edge colour (median cut averages them away).
    palette = raw.quantize(256, method=PIL.Quantize.FASTOCTREE, dither=PIL.Dither.NONE)
    palette.save(path, optimize=True)
    assert path.stat().st_size > 20_000  # a real picture, not a blank page
    image = PIL.open(path).convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    drift = ImageStat.Stat(ImageChops.difference(raw, image)).mean
    assert max(drift) < 6, drift  # the saved picture looks like the page
    return image, path


def crop(image: Image, page: Page, selector: str) -> Image:
    box = page.locator(selector).bounding_box()
    assert box is not None
    left, top = int(box["x"]), int(box["y"])
    return image.crop((left, top, left + int(box["width"]), top + int(box["height"])))


def test_screenshots(sample: Sample) -> None:
    from playwright.sync_api import expect

    ids = sample.ids
    with browser_page(sample.url, width=WIDTH, height=HEIGHT) as s:
        page = s.page
        # 1. The overview: salient decisions, the open contradiction, the queue, recent changes.
        open_explorer(page, sample.url)
        for part in ("ov-contradictions", "ov-ready", "ov-events"):
            expect(page.locator(f"#{part}")).not_to_have_attribute("data-state", "loading")
        page.locator(f'#ov-salient li[data-id="{ids["pg"]}"] button').click()
        expect(page.locator('#panel[data-state="ready"]')).to_be_attached()
        image, _ = shoot(page, "overview.png")
        left = crop(image, page, ".results")
        assert count(left, CONTRADICTION_RGB, 10) > 500
        graph = crop(image, page, "#graph")
        for relation, rgb in RELATION_RGB.items():
            assert count(graph, rgb) > 15, f"no {relation} edge drawn"

        # 2. The graph with the history panel (the update's before/after).
        history = page.locator('#history[data-state="ready"] li[data-op="update"]')
        history.scroll_into_view_if_needed()
        expect(history).to_be_in_viewport()
        image, _ = shoot(page, "history.png")
        panel = crop(image, page, "#panel")
        assert count(panel, AFTER_RGB, 24) > 50  # the new values, in green

        # 3. As of an earlier seq: the banner, the slider in the past, the later node gone.
        page.locator("#panel").evaluate("panel => { panel.scrollTop = 0; }")
        page.locator("#asof").fill(str(sample.mark))
        expect(
            page.locator(f'#graph[data-state="ready"][data-asof="{sample.mark}"]')
        ).to_be_attached()
        expect(page.locator(f'#graph g.node[data-id="{ids["shard"]}"]')).to_have_count(0)
        expect(page.locator('#ov-salient[data-state="ready"]')).to_be_attached()
        expect(page.locator('#panel[data-state="ready"] .panel-past')).to_be_visible()
        image, _ = shoot(page, "as-of.png")
        banner = crop(image, page, "#asof-banner")
        assert count(banner, BANNER_RGB, 10) > 0.6 * banner.width * banner.height
        page.click("#asof-now")
        expect(page.locator('#graph[data-state="ready"][data-asof=""]')).to_be_attached()

        # 4. The derived families on: dashed temporal/entity/semantic edges beside the relations.
        for family in ("temporal", "entity", "semantic", "causal"):
            page.check(f"#fam-{family}")
        families = "relations temporal entity semantic causal"
        expect(page.locator("#graph")).to_have_attribute("data-families", families)
        expect(page.locator("#graph line.edge.derived").first).to_be_attached()
        image, _ = shoot(page, "derived-edges.png")
        graph = crop(image, page, "#graph")
        drawn = page.locator("#graph line.edge.derived").evaluate_all(
            "ls => ls.map(l => l.dataset.type)"
        )
        assert drawn
        assert count(graph, RELATION_RGB["depends_on"]) > 15
    assert s.problems == []
