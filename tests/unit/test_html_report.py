"""The HTML report in a real headless Chromium (Debian's, driven by Playwright): every
chart rendered, no JavaScript error, and a screenshot saved next to the report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def make_report(tmp_path: Path) -> Path:
    results = str(tmp_path / "results")
    # a real lab run's fio output (client/server: per-host and aggregate) next to the 2014 report
    assert main(["import", "fio", str(DATA / "tools" / "fio-jsonplus-latpercentiles.json"), "--backend", "cephfs",
                 "--results", results]) == 0
    out = tmp_path / "report.html"
    assert main(["report", "report-2014", "latest", "-o", str(out), "--results", results]) == 0
    return out


def test_report_is_self_contained(tmp_path):
    text = make_report(tmp_path).read_text()
    assert "<script src=" not in text and "<link " not in text  # everything inline: opens offline
    assert "iozone on GlusterFS/sr33, cached, KB/s (log colour, one scale for every system)" in text
    assert "exceeds-network" in text and "Runs, environment and topology" in text


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")
def test_every_chart_renders_in_headless_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    report = make_report(tmp_path)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.goto(report.as_uri())
        page.wait_for_function("document.querySelectorAll('.chart .main-svg').length > 0")
        charts = page.eval_on_selector_all(".chart", "els => els.map(e => e.querySelectorAll("
                                           "'.heatmaplayer image, .heatmaplayer path, .bars path, "
                                           ".scatterlayer path').length)")
        screenshot = report.with_suffix(".png")
        page.screenshot(path=str(screenshot), full_page=True)
        browser.close()
    assert errors == []
    assert len(charts) >= 6 and all(n > 0 for n in charts), charts
    assert screenshot.stat().st_size > 50_000


def test_heatmaps_share_one_colour_scale_per_group(tmp_path):
    from harness.report.html import heatmaps
    from harness.report.view import build_view
    from harness.results.catalogue import Catalogue

    view = build_view(Catalogue(tmp_path), ["report-2014"])
    maps = [f for f in heatmaps(view.tables) if "log colour" in f["title"] and ", cached," in f["title"]]
    assert len(maps) == 3  # GlusterFS sr33, vr33 and CephFS
    assert len({(f["data"][0]["zmin"], f["data"][0]["zmax"]) for f in maps}) == 1
