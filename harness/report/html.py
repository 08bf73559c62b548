"""The HTML report: one self-contained file (plotly.js inlined, no network needed) with
the runs' environment and topology, every table of the terminal output with its flags,
and the charts the tables carry — heatmaps of matrix tables (one colour scale per
workload and group across systems) and a ratio heatmap of the first two systems, bars
with 95% confidence intervals, percentile curves. Nothing here groups records again.
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from typing import Any

from harness.api.records import FLAGS
from harness.report.compare import Table
from harness.report.view import View

Figure = dict[str, Any]
_SCALE = {"B/s": (1 << 20, "MiB/s"), "s": (1e-3, "ms")}


def _scaled(unit: str) -> tuple[float, str]:
    return _SCALE.get(unit, (1.0, unit))


def heatmaps(tables: list[Table]) -> list[Figure]:
    """One heatmap per matrix table, on a log colour scale shared by every system of the
    same workload and group (equal colours mean equal numbers across systems), then a
    ratio heatmap of the first two systems that are not the control."""
    charts = [t.chart for t in tables if t.chart and t.chart["kind"] == "heatmap"]
    bounds: dict[str, tuple[float, float]] = {}
    for c in charts:
        vals = [v for row in c["z"] for v in row if v]
        if vals:
            lo, hi = bounds.get(c["scale_group"], (math.inf, -math.inf))
            bounds[c["scale_group"]] = (min(lo, min(vals)), max(hi, max(vals)))
    figures = []
    for c in charts:
        lo, hi = bounds.get(c["scale_group"], (1.0, 10.0))
        z = [[math.log10(v) if v else None for v in row] for row in c["z"]]
        figures.append({"title": f"{c['title']} (log colour, one scale for every system)",
                        "data": [{"type": "heatmap", "z": z, "text": c["text"], "texttemplate": "%{text}",
                                  "hoverinfo": "text+x+y", "x": c["x"], "y": c["y"], "colorscale": "Viridis",
                                  "zmin": math.log10(lo), "zmax": math.log10(max(hi, lo * 1.001)),
                                  "colorbar": {"title": f"log10 {c['unit']}"}}],
                        "layout": {"yaxis": {"autorange": "reversed"}, "height": 160 + 28 * len(c["y"])}})
    by_group: dict[str, list[Figure]] = defaultdict(list)
    for c in charts:
        if not c["control"]:
            by_group[c["scale_group"]].append(c)
    for group in by_group.values():
        if len(group) < 2:
            continue
        a, b = group[0], group[1]
        if a["y"] != b["y"] or a["x"] != b["x"]:
            continue
        z, text = [], []
        for ra, rb in zip(a["z"], b["z"]):
            zr, tr = [], []
            for va, vb in zip(ra, rb):
                ok = bool(va and vb)
                zr.append(math.log2(va / vb) if ok else None)
                tr.append(f"{va / vb:.2f}×" if ok else "—")
            z.append(zr)
            text.append(tr)
        figures.append({"title": f"{a['group']}: {a['system']} ÷ {b['system']} per cell (above 1: "
                                 f"{a['system']} faster)",
                        "data": [{"type": "heatmap", "z": z, "text": text, "texttemplate": "%{text}",
                                  "x": a["x"], "y": a["y"], "colorscale": "RdBu", "zmid": 0,
                                  "colorbar": {"title": "log2 ratio"}}],
                        "layout": {"yaxis": {"autorange": "reversed"}, "height": 160 + 28 * len(a["y"])}})
    return figures


def bars(c: dict[str, Any]) -> Figure:
    """Grouped bars per row and system: the median, with the 95% CI of the mean as whiskers."""
    div, label = _scaled(c["unit"])
    data = [{"type": "bar", "name": s["name"], "x": c["x"],
             "y": [None if y is None else y / div for y in s["y"]], "text": s["text"],
             "textposition": "outside",
             "error_y": {"type": "data", "symmetric": False, "array": [h / div for h in s["hi"]],
                         "arrayminus": [lo / div for lo in s["lo"]]}} for s in c["series"]]
    return {"title": f"{c['title']}: {c['metric']} (bar: median; whisker: 95% CI of the mean)", "data": data,
            "layout": {"barmode": "group", "height": 420,
                       "yaxis": {"title": label + (" (log)" if c["log"] else ""),
                                 "type": "log" if c["log"] else "linear"}}}


def lines(c: dict[str, Any]) -> Figure:
    div, label = _scaled(c["unit"])
    data = [{"type": "scatter", "mode": "lines+markers", "name": s["name"], "x": c["x"],
             "y": [None if y is None else y / div for y in s["y"]]} for s in c["series"]]
    return {"title": c["title"], "data": data,
            "layout": {"yaxis": {"title": label, "type": "log"}, "height": 480}}


def timelines(c: dict[str, Any]) -> list[Figure]:
    """Per fault: each record of its cell as a bar over its interval, and the fault's
    moments as lines, in seconds from the injection."""
    out = []
    for f in c["faults"]:
        bars = f["bars"]
        data = [{"type": "bar", "orientation": "h", "y": [b["label"] for b in bars],
                 "base": [b["start"] for b in bars], "x": [b["end"] - b["start"] for b in bars],
                 "marker": {"color": ["#d62728" if b["degraded"] else "#1f77b4" for b in bars]},
                 "hovertemplate": "%{y}: %{base:.1f} s to %{x:.1f} s later<extra></extra>", "showlegend": False}]
        shapes = [{"type": "line", "x0": t, "x1": t, "yref": "paper", "y0": 0, "y1": 1,
                   "line": {"dash": "dot", "width": 1}} for t in f["moments"].values()]
        notes = [{"x": t, "yref": "paper", "y": 1.02, "text": k, "showarrow": False, "textangle": -30}
                 for k, t in f["moments"].items()]
        out.append({"title": f"{f['title']} (seconds from the injection; red: degraded)", "data": data,
                    "layout": {"shapes": shapes, "annotations": notes, "height": 200 + 30 * len(bars),
                               "xaxis": {"title": "s from the injection"}, "yaxis": {"automargin": True}}})
    return out


def figures(tables: list[Table]) -> list[Figure]:
    out = heatmaps(tables)
    for t in tables:
        if t.chart and t.chart["kind"] == "bars":
            out.append(bars(t.chart))
        elif t.chart and t.chart["kind"] == "lines":
            out.append(lines(t.chart))
        elif t.chart and t.chart["kind"] == "timeline":
            out += timelines(t.chart)
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
    figs = figures(view.tables)
    charts = "".join(f"<div class='chart' id='chart-{i}'></div>" for i in range(len(figs)))
    specs = json.dumps([{"data": f["data"], "layout": {**f["layout"], "title": {"text": f["title"]},
                                                        "margin": {"l": 160}}} for f in figs])
    specs = specs.replace("<", "\\u003c")  # (no text of a record can end the script: '</script>')
    legend = "".join(f"<li>[{f.code}] {html.escape(name)}: {html.escape(f.meaning)}</li>"
                     for name, f in FLAGS.items())
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
