"""`ipuplan report`: one self-contained page for a build-and-run directory, a full-size SigLIP plan and an
INFEASIBLE verdict, driven in the system Chromium by playwright: hover a cell, click a tile, read the tooltips,
take a screenshot."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import MODELS, ROOT
from tests.tests_helpers import run_main

SMALL = ROOT / "targets" / "small64.yaml"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
browser_only = pytest.mark.skipif(CHROMIUM is None, reason="needs the system Chromium (.ci/run installs it)")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("rep")
    assert run_main("build", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "2", "-o", d) == 0
    np.save(d / "x.npy", np.random.default_rng(3).standard_normal((2, 3, 28, 28)).astype(np.float32))
    assert run_main("run", d / "model.ipupkg", "--pixels", d / "x.npy", "--profile", d / "profile.json") == 0
    assert run_main("report", d) == 0
    return d


@pytest.fixture(scope="module")
def siglip(tmp_path_factory, siglip_b2):
    """The page of the session's SigLIP b2 build, written elsewhere (the build stays read-only)."""
    r, built = siglip_b2
    assert r.code == 0, r.out
    d = tmp_path_factory.mktemp("sigrep")
    assert run_main("report", built, "-o", d / "report.html") == 0
    return d


@pytest.fixture(scope="module")
def infeasible(tmp_path_factory):
    d = tmp_path_factory.mktemp("infrep")
    assert run_main("solve", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "2", "--headroom", "600000",
                    "-o", d) == 1
    assert run_main("report", d) == 0
    return d


def _data(page: Path) -> dict:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page.read_text(), re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_page_is_self_contained(small):
    html = (small / "report.html").read_text()
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html) and "<script src" not in html
    d = _data(small / "report.html")
    assert d["head"]["verdict"] == "FIT" and len(d["memory"]["tile_group"]) == 64
    assert d["time"]["profile"] and len(d["exchange"]["tables"]) == 64


def test_siglip_report_size(siglip):
    size = (siglip / "report.html").stat().st_size
    d = _data(siglip / "report.html")
    assert size < 5 * 2**20 and len(d["memory"]["tile_group"]) == 1472 and d["memory"]["step_names"]


def _open(path: Path, screenshot: Path | None = None):
    from playwright.sync_api import sync_playwright
    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = b.new_page(viewport={"width": 1100, "height": 1300})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-rendered='1']", timeout=30_000)
    return pw, b, page, errors


@browser_only
@pytest.mark.parametrize("which", ["small", "siglip"])
def test_browser_tooltips_and_placement(which, request, tmp_path):
    d = request.getfixturevalue(which)
    pw, b, page, errors = _open(d / "report.html")
    try:
        page.hover("#heat", position={"x": 450, "y": 230})
        tip = page.inner_text("#tip")
        assert re.search(r"tile \d+ · \S+:[xc]", tip) and "live" in tip and "largest" in tip
        page.click("#heat", position={"x": 200, "y": 100})
        title = page.inner_text("#placetitle")
        assert re.match(r"tile \d+: \d+ buffers", title)
        page.hover("#place", position={"x": 450, "y": 500})
        assert "[0x" in page.inner_text("#tip") or page.inner_text("#tip")
        page.select_option("#region", "region1")
        assert "region1" in page.inner_text("#heatscale") and "auto: the fullest cell" in page.inner_text("#heatscale")
        page.select_option("#scale", "fixed")
        assert "fixed at the tile's capacity" in page.inner_text("#heatscale")
        # the axes and the colour bar are drawn beside the map: tick labels left of it, the bar right of it
        inked = page.evaluate("""() => { const c = document.getElementById('heataxes').getContext('2d');
            const ink = (x, y, w, h) => c.getImageData(x, y, w, h).data.some((v, i) => i % 4 === 3 && v > 0);
            return [ink(0, 10, 66, 430), ink(70, 442, 820, 40), ink(910, 10, 20, 430)]; }""")
        assert inked == [True, True, True]
        for legend in ("#placelegend", "#xlegend", "#tlegend"):
            assert page.is_visible(legend)
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        assert (tmp_path / "report.png").stat().st_size > 20_000 and not errors
    finally:
        b.close()
        pw.stop()


@browser_only
def test_browser_infeasible_shows_the_certificate(infeasible):
    pw, b, page, errors = _open(infeasible / "report.html")
    try:
        assert page.is_visible("#infeasible") and "memory[" in page.inner_text("#irows") and not errors
        head = page.inner_text("#ihead")
        assert re.search(r"lacks [\d,]+ B on tile \d+ at \S+", head), head
        # the page leads with it: the explanation comes before the memory section
        assert page.evaluate("() => document.getElementById('infeasible').compareDocumentPosition("
                             "document.getElementById('memory')) & Node.DOCUMENT_POSITION_FOLLOWING")
        assert page.locator("#ilive tr").count() > 0 and page.locator("#ialt li").count() > 0
    finally:
        b.close()
        pw.stop()
