"""The HTML report in a real headless Chromium (Debian's, driven by Playwright): every
chart rendered, no JavaScript error, and a screenshot saved next to the report."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


@contextmanager
def opened(report: Path) -> Iterator[tuple[Any, list[str]]]:
    """The report in headless Chromium once its charts are drawn, and the page's JavaScript
    errors (thrown or logged) so far and until it closes."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.goto(report.as_uri())
        page.wait_for_function("document.querySelectorAll('.chart .main-svg').length > 0")
        try:
            yield page, errors
        finally:
            browser.close()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")
def test_every_chart_renders_in_headless_chromium(tmp_path):
    report = make_report(tmp_path)
    with opened(report) as (page, errors):
        charts = page.eval_on_selector_all(".chart", "els => els.map(e => e.querySelectorAll("
                                           "'.heatmaplayer image, .heatmaplayer path, .bars path, "
                                           ".scatterlayer path').length)")
        screenshot = report.with_suffix(".png")
        page.screenshot(path=str(screenshot), full_page=True)
    assert errors == []
    assert len(charts) >= 6 and all(n > 0 for n in charts), charts
    assert screenshot.stat().st_size > 50_000


def test_heatmaps_share_one_colour_scale_per_group(tmp_path):
    from harness.report.html import heatmaps
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    view = build_view(Catalogue(tmp_path), ViewRequest(["report-2014"]))
    maps = [f for f in heatmaps(view.tables) if "log colour" in f["title"] and ", cached," in f["title"]]
    assert len(maps) == 3  # GlusterFS sr33, vr33 and CephFS
    assert len({(f["data"][0]["zmin"], f["data"][0]["zmax"]) for f in maps}) == 1


def test_every_system_gets_a_ratio_heatmap_against_the_reference(tmp_path):
    """Three systems: each of the other two against the first shown, or against the one
    --reference names (a ratio of the first two alone left the third out)."""
    from harness.report.html import heatmaps
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    def ratios(reference):
        view = build_view(Catalogue(tmp_path), ViewRequest(["report-2014"], reference=reference))
        return sorted(f["title"].split(": ", 1)[1].split(" per cell")[0] for f in heatmaps(view.tables)
                      if "÷" in f["title"] and f["title"].startswith("cached:"))

    assert ratios(None) == ["GlusterFS/sr33 ÷ CephFS", "GlusterFS/sr33 ÷ GlusterFS/vr33"]
    assert ratios("cephfs") == ["CephFS ÷ GlusterFS/sr33", "CephFS ÷ GlusterFS/vr33"]


# every chart's category labels and axes, and its bars' whiskers, as Chromium drew them
CHARTS = """els => els.map(e => ({
    title: (e.querySelector('.gtitle') || {}).textContent || '',
    ytitle: (e.querySelector('.g-ytitle') || {}).textContent || '',
    bars: e.querySelectorAll('.bars path').length,
    whiskers: e.querySelectorAll('.errorbar path').length,
    cut: [...e.querySelectorAll('.xtick text, .ytick text, .gtitle')].filter(t => {
        const r = t.getBoundingClientRect(), s = e.getBoundingClientRect();
        return r.left < s.left - 1 || r.right > s.right + 1 || r.top < s.top - 1 || r.bottom > s.bottom + 1;
    }).length,
    overlap: ['.xtick text', '.ytick text', '.annotation-text, .legendtext'].map(sel => {
        const r = [...e.querySelectorAll(sel)].filter(t => t.textContent.trim())
            .map(t => t.getBoundingClientRect()).filter(b => b.width > 0);
        let n = 0;
        for (let i = 0; i < r.length; i++) for (let j = i + 1; j < r.length; j++)
            if (r[i].left < r[j].right - 1 && r[j].left < r[i].right - 1 &&
                r[i].top < r[j].bottom - 1 && r[j].top < r[i].bottom - 1) n++;
        return n;
    }).reduce((a, b) => a + b, 0),
    marks: [...e.querySelectorAll('.annotation-text')].filter(t => ['injected', 'noticed', 'restored', 'healthy']
        .includes(t.textContent.trim())).length,
    xtitle: (e.querySelector('.g-xtitle') || {}).textContent || ''}))"""


def drawn(report: Path, shot: Path | None = None) -> tuple[list[dict], list[str], list[str]]:
    """(each chart as drawn, the summary's items, the page's JavaScript errors)."""
    with opened(report) as (page, errors):
        charts = page.eval_on_selector_all(".chart", CHARTS)
        first = page.eval_on_selector("h2", "e => e.textContent")
        answer = page.eval_on_selector_all("ul.answer li", "els => els.map(e => e.textContent)")
        if shot is not None:  # the top of the report, as a reader first sees it
            page.screenshot(path=str(shot))
    return charts, [first, *answer], errors


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")
def test_the_report_opens_with_the_answer_and_its_charts_name_units_and_show_whole_labels(tmp_path):
    from tests.unit.builders import stored

    run_id = stored(tmp_path / "results")  # a real container-lab run: largefile from 2 clients, 2 repeats
    report = tmp_path / "lab.html"
    assert main(["report", run_id, "-o", str(report), "--results", str(tmp_path / "results")]) == 0
    charts, answer, errors = drawn(report, tmp_path / "lab-top.png")
    assert errors == []
    assert answer[0] == "The answer"
    assert any(line.startswith("largefile (elapsed), GlusterFS vs CephFS") for line in answer), answer
    assert any(line.startswith("GlusterFS — bottleneck: the busiest was") and "CPU-s/GiB on the clients" in line
               for line in answer), answer
    cost = next(c for c in charts if c["title"].startswith("CPU time per GiB moved"))
    assert cost["bars"] >= 4 and cost["ytitle"] == "CPU time per GiB moved (CPU-s/GiB)"
    throughput = next(c for c in charts if c["title"].startswith("Large files"))
    assert throughput["ytitle"] == "throughput (MiB/s)" and throughput["whiskers"] > 0  # (n=2: an interval)
    assert all(c["cut"] == 0 and c["overlap"] == 0 for c in charts), charts
    assert (tmp_path / "lab-top.png").stat().st_size > 20_000

    # the 2014 report's cells were each measured once: bars without whiskers, not zero-width ones
    old = make_report(tmp_path / "2014")
    charts, answer, errors = drawn(old)
    assert errors == [] and answer[0] == "The answer"
    single = next(c for c in charts if c["title"].startswith("Large files"))
    assert single["bars"] > 0 and single["whiskers"] == 0, single
    assert all(c["cut"] == 0 and c["overlap"] == 0 for c in charts), charts
    assert all("(" in c["ytitle"] for c in charts if c["bars"]), charts  # (every bar chart names its unit)


def test_markup_from_a_store_is_shown_not_followed_in_charts():
    from harness.report.html import _inert

    spec = {"title": "a <a href='http://x'>link</a><br>b <b>bold</b>", "hovertemplate": "%{y}<extra></extra>",
            "name": ["<span style='color:red'>x</span>"]}
    assert _inert(spec) == {"title": "a &lt;a href='http://x'>link&lt;/a><br>b <b>bold</b>",
                            "hovertemplate": "%{y}<extra></extra>", "name": ["&lt;span style='color:red'>x&lt;/span>"]}


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")
def test_a_load_run_reads_as_a_decision_whose_charts_name_their_units_and_labels_stay_apart(tmp_path):
    """A real container-lab run of offered load through a fault (tests/data/docker-run-load):
    the answer names each system's knee, the response curves and each fault's p99 every
    second come before the appendix, every axis says its unit, no label is cut or covers
    another (a log axis labelled at 1, 2 and 5, a fault's moments apart, vertical lines named
    in the legend)."""
    from tests.unit.builders import stored_with_series

    run_id = stored_with_series(tmp_path / "results", "docker-run-load")
    report = tmp_path / "load.html"
    assert main(["report", run_id, "-o", str(report), "--results", str(tmp_path / "results")]) == 0
    charts, answer, errors = drawn(report, tmp_path / "load-top.png")
    assert errors == [] and answer[0] == "The answer"
    assert "fio randwrite-4k-qd16 write (2 clients): the most load each holds at a steady p99 (its knee) — " \
           "GlusterFS 400 op/s (n=1 per point; stopped at 800 op/s: p99 106.4 ms > 2 × the lowest load's 17.2 ms), " \
           "CephFS 200 op/s (n=1 per point; stopped at 400 op/s [S]: saturated), SeaweedFS none held (n=1 per " \
           "point; stopped at the lowest load, 200 op/s [S,W]: saturated)" in answer, answer
    curves = [c for c in charts if "latency against the load done" in c["title"]]
    tails = [c for c in charts if "each second" in c["title"] and "offered" in c["title"]]
    assert len(curves) == 2 and len(tails) == 6, [c["title"] for c in charts]
    assert all(c["ytitle"] == "total latency (ms, log)" and c["xtitle"] ==
               "operations per second done, all clients (op/s, log)" for c in curves)
    assert all(c["ytitle"] == "p99 total latency (ms, log)" and c["xtitle"] == "seconds from the injection (s)"
               for c in tails)
    titles = [c["title"] for c in charts]
    first_appendix = next(i for i, t in enumerate(titles) if "the rate every second" in t)
    assert titles.index(curves[0]["title"]) < titles.index(tails[0]["title"]) < first_appendix
    assert all(c["cut"] == 0 and c["overlap"] == 0 for c in charts), [c for c in charts if c["cut"] or c["overlap"]]
    assert all("(" in c["ytitle"] for c in charts if c["ytitle"]), charts  # (every axis says its unit)


def test_a_tables_text_reaches_the_page_through_the_one_escaping_rule():
    """Whatever a table holds (a stored name, a plugin's column), its control characters
    are shown escaped in the page as on the terminal, then HTML-escaped: none reaches it raw."""
    from harness.report.html import _table_html
    from harness.report.verdicts import Table

    page = _table_html(Table("t\x1b[2J", ["sys\x07tem"], [["<b>\x9bx\r"]], notes=["n\x1b]0;x"]))
    assert not [c for c in "\x1b\x07\x9b\r" if c in page], page
    assert "t\\x1b[2J" in page and "&lt;b&gt;\\x9bx\\r" in page and "sys\\x07tem" in page


def test_no_chart_of_percentiles_needs_a_scrolling_legend(tmp_path):
    """A real container-lab run of three systems on two clients over 20 profiles (offered
    loads and a fault's phases): its percentiles were 180 lines on one chart. A chart per
    profile draws each system's aggregate and hides its clients' lines behind one legend
    entry a system: never more than six entries, three lines drawn."""
    from harness.report.html import lines
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue
    from tests.unit.builders import stored_with_series

    run_id = stored_with_series(tmp_path, "docker-run-load")
    chart = next(t.chart for t in build_view(Catalogue(tmp_path), ViewRequest([run_id])).tables
                 if t.chart and t.chart["kind"] == "lines")
    assert len(chart["series"]) == 180
    found = lines(chart)
    assert len(found) == 20
    assert "fio total latency percentiles (submission + completion): randwrite-4k-qd16 write" in [
        f["title"] for f in found]
    for f in found:
        shown = [d["name"] for d in f["data"] if d.get("visible", True) is True]
        legend = [d["name"] for d in f["data"] if d.get("showlegend", True)]
        assert shown == ["GlusterFS", "CephFS", "SeaweedFS"], shown
        assert sorted(legend) == sorted(["GlusterFS", "CephFS", "SeaweedFS", "GlusterFS each client",
                                         "CephFS each client", "SeaweedFS each client"]), legend
        assert sum(1 for d in f["data"] if d.get("visible") == "legendonly") == 6  # (2 clients a system)
    # a system whose clients' histograms could not be merged (no aggregate) is drawn by its clients
    without = {**chart, "series": [s for s in chart["series"] if not (s["system"] == "CephFS" and s.get("client") is None)]}
    for f in lines(without):
        shown = [d["name"] for d in f["data"] if d.get("visible", True) is True]
        assert shown == ["GlusterFS", "CephFS each client", "CephFS each client", "SeaweedFS"], shown


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")
def test_a_faults_marks_stay_apart_where_its_moments_are_close(tmp_path):
    """The real load run with each fault noticed 0.2 s after its injection and healthy 0.2 s
    after its restore: every chart that marks a fault's moments (each fault's p99 every
    second, its cell's timeline, the records against the fault — which drew none of a fio
    cell's, whose fault names its profile) labels them with no label covering another."""
    from tests.unit.builders import stored_with_series

    def close(d):
        p = d["params"]
        if d["workload"] == "fault" and isinstance(p.get("injected"), (int, float)):
            p["noticed"] = p["injected"] + 0.2
            if isinstance(p.get("restored"), (int, float)):
                p["healthy"] = p["restored"] + 0.2
        return d
    run_id = stored_with_series(tmp_path / "results", "docker-run-load", close)
    report = tmp_path / "close.html"
    assert main(["report", run_id, "-o", str(report), "--results", str(tmp_path / "results")]) == 0
    charts, _, errors = drawn(report, tmp_path / "close.png")
    assert errors == []
    marked = [c["title"] for c in charts if c["marks"] == 4]  # (6 faults: injected, noticed, restored, healthy)
    assert len(marked) == 18 and sum("red:degraded" in t.replace(" ", "") for t in marked) == 6, marked
    assert all(c["overlap"] == 0 for c in charts), [(c["title"], c["overlap"]) for c in charts if c["overlap"]]
