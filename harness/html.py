"""The HTML report: one self-contained file (plotly.js inlined, no network needed) with
the runs' environment and topology, every table of the terminal output with its flags,
and charts — iozone heatmaps per system and mode, a ratio heatmap of the first two
systems, bars with 95% confidence intervals for large files, small files and fio
profiles, and fio's latency percentile curves.
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from typing import Any

from harness.compare import CONTROL, IOZONE_COLUMNS, Table, system_name
from harness.records import FLAG_CODES, FLAGS, Measurement, flag_marks
from harness.stats import median, summarize
from harness.units import size
from harness.view import View

Figure = dict[str, Any]


def _systems(records: list[Measurement]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((m.backend, m.variant) for m in records))


def iozone_heatmaps(records: list[Measurement]) -> list[Figure]:
    groups: dict[tuple[str, str, bool], dict[tuple[int, int, str], list[Measurement]]] = defaultdict(
        lambda: defaultdict(list))
    for m in records:
        if m.workload == "iozone" and m.metric == "throughput" and "file_size" in m.params:
            groups[(m.backend, m.variant, bool(m.params.get("direct")))][
                (m.params["file_size"], m.params["record_size"], m.test)].append(m)
    figures = []
    for (backend, variant, direct), cells in groups.items():
        shapes = sorted({(f, r) for f, r, _ in cells})
        tests = [(t, label) for t, label in IOZONE_COLUMNS if any(k[2] == t for k in cells)]
        z, text = [], []
        for f, r in shapes:
            zr, tr = [], []
            for t, _ in tests:
                ms = cells.get((f, r, t), [])
                vals = [m.value for m in ms if m.value is not None]
                flags = {fl for m in ms for fl in m.flags}
                v = median(vals) / 1024 if vals else None
                zr.append(math.log10(v) if v else None)
                tr.append(("—" if v is None else f"{v:,.0f} KB/s") + flag_marks(flags))
            z.append(zr)
            text.append(tr)
        mode = "O_DIRECT" if direct else "cached"
        figures.append({
            "title": f"iozone on {system_name(backend, variant)}, {mode} (KB/s, log colour)",
            "data": [{"type": "heatmap", "z": z, "text": text, "hoverinfo": "text+x+y",
                      "texttemplate": "%{text}", "x": [label for _, label in tests],
                      "y": [f"{size(f)} / {size(r)}" for f, r in shapes], "colorscale": "Viridis",
                      "colorbar": {"title": "log10 KB/s"}}],
            "layout": {"yaxis": {"title": "file / record", "autorange": "reversed"},
                       "height": 160 + 28 * len(shapes)},
        })
    return figures


def ratio_heatmap(records: list[Measurement]) -> list[Figure]:
    systems = [s for s in _systems([m for m in records if m.workload == "iozone"]) if s[0] not in CONTROL]
    if len(systems) < 2:
        return []
    a, b = systems[0], systems[1]
    values: dict[tuple[str, str], dict[tuple[bool, int, int, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    for m in records:
        if m.workload == "iozone" and m.value and (m.backend, m.variant) in (a, b) and "file_size" in m.params:
            values[(m.backend, m.variant)][(bool(m.params.get("direct")), m.params["file_size"],
                                            m.params["record_size"], m.test)].append(m.value)
    common = sorted(set(values[a]) & set(values[b]))
    if not common:
        return []
    rows = sorted({(d, f, r) for d, f, r, _ in common})
    tests = [(t, label) for t, label in IOZONE_COLUMNS if any(k[3] == t for k in common)]
    z, text = [], []
    for d, f, r in rows:
        zr, tr = [], []
        for t, _ in tests:
            k = (d, f, r, t)
            if k in values[a] and k in values[b]:
                ratio = median(values[a][k]) / median(values[b][k])
                zr.append(math.log2(ratio))
                tr.append(f"{ratio:.2f}×")
            else:
                zr.append(None)
                tr.append("—")
        z.append(zr)
        text.append(tr)
    na, nb = system_name(*a), system_name(*b)
    return [{
        "title": f"iozone: {na} ÷ {nb} per cell (above 1: {na} faster)",
        "data": [{"type": "heatmap", "z": z, "text": text, "texttemplate": "%{text}", "hoverinfo": "text+x+y",
                  "x": [label for _, label in tests],
                  "y": [f"{'O_DIRECT' if d else 'cached'} {size(f)} / {size(r)}" for d, f, r in rows],
                  "colorscale": "RdBu", "zmid": 0, "colorbar": {"title": "log2 ratio"}}],
        "layout": {"yaxis": {"autorange": "reversed"}, "height": 160 + 26 * len(rows)},
    }]


def bars(records: list[Measurement], workload: str, metric: str, title: str, unit_label: str,
         scale: float, key: Any, log: bool = False) -> list[Figure]:
    """Grouped bars, one group per row key and one bar per system: the median, with the
    95% confidence interval of the mean as an error bar where there are repeats."""
    picked = [m for m in records if m.workload == workload and m.metric == metric and m.value is not None]
    if not picked:
        return []
    rows = list(dict.fromkeys(key(m) for m in picked))
    data = []
    for system in _systems(picked):
        ys, lo, hi, texts = [], [], [], []
        for row in rows:
            ms = [m for m in picked if (m.backend, m.variant) == system and key(m) == row]
            vals = [m.value / scale for m in ms]
            flags = {f for m in ms for f in m.flags}
            if not vals:
                ys.append(None), lo.append(0), hi.append(0), texts.append("")
                continue
            s = summarize(vals)
            ys.append(s.median)
            ok = not math.isnan(s.ci_low)
            hi.append(s.ci_high - s.median if ok else 0)
            lo.append(s.median - s.ci_low if ok else 0)
            texts.append(f"n={s.n}" + (f", CV {s.cv * 100:.0f}%" if s.n > 1 else "") +
                         "".join(f" [{FLAG_CODES.get(f, f)}]" for f in sorted(flags)))
        data.append({"type": "bar", "name": system_name(*system), "x": [str(r) for r in rows], "y": ys,
                     "text": texts, "textposition": "outside",
                     "error_y": {"type": "data", "symmetric": False, "array": hi, "arrayminus": lo}})
    return [{"title": title, "data": data,
             "layout": {"barmode": "group", "yaxis": {"title": unit_label, "type": "log" if log else "linear"},
                        "height": 420}}]


def latency_curves(records: list[Measurement]) -> list[Figure]:
    """fio's latency percentiles (total latency where measured, else completion latency):
    one line per system and job across p50, p99, p99.9."""
    kind = "lat" if any(m.metric == "lat_p99" for m in records if m.workload == "fio") else "clat"
    points = [f"{kind}_p50", f"{kind}_p99", f"{kind}_p99.9"]
    lines: dict[tuple[tuple[str, str], str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for m in records:
        if m.workload == "fio" and m.metric in points and m.value and m.params.get("host") in (None, "all"):
            lines[((m.backend, m.variant), m.test, m.params.get("direction", ""))][m.metric].append(m.value)
    if not lines:
        return []
    data = []
    for (system, job, direction), by_metric in lines.items():
        data.append({"type": "scatter", "mode": "lines+markers",
                     "name": f"{system_name(*system)} {job} {direction}",
                     "x": ["p50", "p99", "p99.9"],
                     "y": [median(by_metric[p]) * 1000 if by_metric.get(p) else None for p in points]})
    return [{"title": f"fio latency percentiles ({'submission + completion' if kind == 'lat' else 'completion'})",
             "data": data, "layout": {"yaxis": {"title": "ms", "type": "log"}, "height": 480}}]


def figures(records: list[Measurement]) -> list[Figure]:
    out = iozone_heatmaps(records) + ratio_heatmap(records)
    out += bars(records, "largefile", "throughput", "Large files: copy rate (bar: median; whisker: 95% CI of the mean)", "MiB/s", 1 << 20,
                lambda m: f"{m.test} {m.params.get('label') or size(m.params.get('file_size', 0))}")
    out += bars(records, "smallfile", "files_per_sec", "Small files: files per second (bar: median; whisker: 95% CI of the mean)",
                "files/s (log)", 1, lambda m: f"{m.test} {m.params.get('files'):,}", log=True)
    out += bars([m for m in records if m.params.get("host") in (None, "all")], "fio", "iops",
                "fio profiles: IOPS (bar: median; whisker: 95% CI of the mean)", "IOPS (log)", 1,
                lambda m: f"{m.test} {m.params.get('direction')}", log=True)
    out += latency_curves(records)
    return [f for f in out if f["data"]]


def _table_html(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in t.notes)
    return (f"<section class='table'><h3>{html.escape(t.title)}</h3><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>{f'<ul class=notes>{notes}</ul>' if notes else ''}</section>")


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
pre.header { background: #f5f5f5; padding: 1em; white-space: pre-wrap; }
table { border-collapse: collapse; font-size: 13px; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #eee; } td:first-child, td:nth-child(2) { text-align: left; }
ul.notes { font-size: 12px; color: #555; } .chart { margin: 1.5em 0; }
"""


def render(view: View) -> str:
    import plotly.offline

    plotly_js = plotly.offline.get_plotlyjs()
    figs = figures(view.records)
    charts = "".join(f"<div class='chart' id='chart-{i}'></div>" for i in range(len(figs)))
    specs = json.dumps([{"data": f["data"], "layout": {**f["layout"], "title": {"text": f["title"]},
                                                        "margin": {"l": 160}}} for f in figs])
    legend = "".join(f"<li>[{code}] {html.escape(flag)}: {html.escape(FLAGS.get(flag, ''))}</li>"
                     for flag, code in FLAG_CODES.items())
    title = "dfsbench report: " + ", ".join(view.ids)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{STYLE}</style><script>{plotly_js}</script></head>
<body><h1>{html.escape(title)}</h1>
<h2>Runs, environment and topology</h2><pre class="header">{html.escape(chr(10).join(view.header))}</pre>
<h2>Charts</h2>{charts}
<h2>Tables</h2>{''.join(_table_html(t) for t in view.tables)}
<h2>Flags</h2><ul class="notes">{legend}</ul>
<script>
const specs = {specs};
specs.forEach((s, i) => Plotly.newPlot('chart-' + i, s.data, s.layout, {{displaylogo: false, responsive: true}}));
</script></body></html>
"""
