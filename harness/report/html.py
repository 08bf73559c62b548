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
import re
from collections import defaultdict
from typing import Any

from harness.api.records import FLAGS
from harness.report import summary
from harness.report.timelines import moment_labels
from harness.report.verdicts import Table
from harness.report.view import View
from harness.system.files import printable


def _text(text: str) -> str:
    """A text of the report as HTML shows it: the one escaping rule of every output (its
    control characters shown escaped, harness.system.files.printable), then HTML's; a
    header's line breaks kept."""
    return html.escape("\n".join(printable(line, 1 << 30) for line in str(text).split("\n")))

Figure = dict[str, Any]
_SCALE = {"B/s": (1 << 20, "MiB/s"), "s": (1e-3, "ms")}


def _scaled(unit: str) -> tuple[float, str]:
    return _SCALE.get(unit, (1.0, unit))


def heatmaps(tables: list[Table]) -> list[Figure]:
    """One heatmap per matrix table, on a log colour scale shared by every system of the
    same workload and group (equal colours mean equal numbers across systems), then a
    ratio heatmap of every other system that is not the control against the reference (the
    one --reference names, else the first shown)."""
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
                        "layout": {"yaxis": {"autorange": "reversed", "automargin": True},
                                   "xaxis": {"automargin": True},
                                   "height": 160 + 28 * len(c["y"])}})
    by_group: dict[str, list[Figure]] = defaultdict(list)
    for c in charts:
        if not c["control"]:
            by_group[c["scale_group"]].append(c)
    pairs = []
    for group in by_group.values():
        a = next((c for c in group if c.get("reference")), group[0])
        pairs += [(a, b) for b in group if b is not a and a["y"] == b["y"] and a["x"] == b["x"]]
    for a, b in pairs:
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
                        "layout": {"yaxis": {"autorange": "reversed", "automargin": True},
                                   "xaxis": {"automargin": True},
                                   "height": 160 + 28 * len(a["y"])}})
    return figures


def wrap(label: str, width: int = 18) -> str:
    """A category label broken into lines of about ``width`` characters (at spaces, with
    plotly's <br>), so that a long one is shown whole, never cut."""
    out: list[str] = []
    for word in str(label).split(" "):
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    return "<br>".join(out)


TITLE_WIDTH = 110  # characters of a chart's title on one line (about 1100 pixels of plotly's 17 px type)


def title_lines(title: str) -> str:
    """A chart's title broken at spaces into lines that fit the chart: a title wider than
    the page is cut at both ends, not shrunk (its second line, in small type, is left as it is)."""
    first, sep, rest = title.partition("<br>")
    return wrap(first, TITLE_WIDTH) + sep + rest


def _width(labels: list[str]) -> int:
    """How wide a category label may be on a chart of about 1100 pixels: narrower the more
    categories share it."""
    return max(10, min(24, 120 // max(1, len(labels))))


def _whiskers(values: list[float], n: list[int], div: float) -> list[float]:
    """A bar's whisker, none where one value stands behind it (no interval to draw): plotly
    reads a null as 0 and draws a whisker of no width there; it skips a NaN (written into
    the page's script as the JavaScript NaN)."""
    return [v / div if k > 1 else math.nan for v, k in zip(values, n)]


MOST_COLUMNS = 12  # categories a chart of upright bars shows side by side; more lie down, a row each


def bars(c: dict[str, Any]) -> Figure:
    """Grouped bars per row and system: the median, with the 95% CI of the mean as whiskers
    (none on a bar of one value). Upright with a few rows; lying down, a row's label on a
    line of its own, with more than :data:`MOST_COLUMNS` (side by side, their labels would
    cover each other however they were broken)."""
    div, label = _scaled(c["unit"])
    flat = len(c["x"]) > MOST_COLUMNS
    data = []
    for s in c["series"]:
        n = s.get("n") or [2] * len(s["y"])  # (a chart of an older dfsbench: as it was drawn)
        values = [None if y is None else y / div for y in s["y"]]
        whiskers = {"type": "data", "symmetric": False, "array": _whiskers(s["hi"], n, div),
                    "arrayminus": _whiskers(s["lo"], n, div)}
        if flat:
            data.append({"type": "bar", "orientation": "h", "name": s["name"], "y": list(c["x"]), "x": values,
                         "text": s["text"], "textposition": "outside", "error_x": whiskers})
        else:
            data.append({"type": "bar", "name": s["name"], "x": [wrap(x, _width(c["x"])) for x in c["x"]],
                         "y": values, "text": s["text"], "textposition": "outside", "error_y": whiskers})
    values = [v for d in data for v in (d["x"] if flat else d["y"])]
    axis = {"title": {"text": f"{c['metric']} ({label})" + (", log" if c["log"] else "")},
            "type": "log" if c["log"] else "linear", "automargin": True, **(log_ticks(values) if c["log"] else {})}
    categories = {"automargin": True, **({"autorange": "reversed"} if flat else {"tickangle": 0})}
    return {"title": f"{c['title']}: {c['metric']} (bar: median; whisker: 95% CI of the mean, where n > 1)",
            "data": data,
            "layout": {"barmode": "group",
                       "height": 160 + 12 * len(c["x"]) * max(1, len(data)) if flat else 460,
                       "xaxis": axis if flat else categories, "yaxis": categories if flat else axis}}


def lines(c: dict[str, Any]) -> list[Figure]:
    """A line per row and system over the chart's points (e.g. latency percentiles): a chart
    per profile (the row without its client), each system's aggregate drawn, its clients'
    lines hidden until its one legend entry of them is picked — a legend of a few entries,
    never one to scroll (30 lines of 8 profiles' clients were drawn on one chart)."""
    div, label = _scaled(c["unit"])
    out = []
    for profile in dict.fromkeys(s.get("profile") for s in c["series"]):
        data: list[dict[str, Any]] = []
        mine = [s for s in c["series"] if s.get("profile") == profile]
        aggregated = {s["system"] for s in mine if s.get("client") is None}
        for s in mine:
            line = {"type": "scatter", "mode": "lines+markers", "x": c["x"],
                    "y": [None if y is None else y / div for y in s["y"]]}
            if s.get("client") is None:
                line["name"] = s["system"] if profile is not None else s["name"]
            else:  # (a system's clients: one legend entry that shows or hides them all)
                group = f"{s['system']} each client"
                first = not any(d.get("legendgroup") == group for d in data)
                line.update({"name": group, "legendgroup": group, "showlegend": first,
                             # (a system without an aggregate is drawn by its clients: never hidden)
                             "visible": "legendonly" if s["system"] in aggregated else True,
                             "line": {"dash": "dot", "width": 1}, "text": [s["client"]] * len(c["x"]),
                             "hovertemplate": "%{text}: %{y:.3g}<extra>%{fullData.name}</extra>"})
            data.append(line)
        out.append({"title": f"{c['title']}: {profile}" if profile is not None else c["title"], "data": data,
                    "layout": {"yaxis": {"title": {"text": f"value ({label}, log)"}, "type": "log",
                                         "automargin": True, **log_ticks([y for d in data for y in d["y"]])},
                               "xaxis": {"automargin": True}, "height": 420}})
    return out


def cost_bars(c: dict[str, Any]) -> Figure:
    """Per cell, each system's CPU time per GiB moved on its clients and on its servers
    (harness.report.cost)."""
    data = [{"type": "bar", "name": s["name"], "x": [wrap(x, _width(c["x"])) for x in c["x"]], "y": s["y"],
             "text": [None if y is None else f"{y:.2f}" for y in s["y"]], "textposition": "outside"}
            for s in c["series"]]
    return {"title": c["title"], "data": data,
            "layout": {"barmode": "group", "height": 420, "xaxis": {"automargin": True, "tickangle": 0},
                       "yaxis": {"title": {"text": f"CPU time per GiB moved ({c['unit']})"}, "rangemode": "tozero",
                                 "automargin": True}}}


def summary_html(view: View) -> str:
    """The answer the report opens with (harness.report.summary), or nothing."""
    if not view.summary:
        return ""
    items = "".join(f"<li>{_text(line)}</li>" for line in view.summary)
    return (f"<h2>{_text(summary.TITLE)}</h2><ul class='answer'>{items}</ul>"
            "<p class='notes'>From the verdicts of the tables below (a cell of several clients counts once, by "
            "its aggregate); the bottleneck is each system's busiest node and resource in most of its cells, "
            "as the resource table finds it.</p>")


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
        xs = [x for b in bars for x in (b["start"], b["end"])]
        notes = [{**n, "xref": "x"} for n in moment_labels(f["moments"], xs)]  # (close ones apart)
        out.append({"title": f"{f['title']} (seconds from the injection; red: degraded)", "data": data,
                    "layout": {"shapes": shapes, "annotations": notes, "height": 200 + 30 * len(bars),
                               "xaxis": {"title": "s from the injection"}, "yaxis": {"automargin": True}}})
    return out


PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def sweep_lines(c: dict[str, Any]) -> Figure:
    """A sweep's curve: per system a solid line of its median at each point, and its
    ceiling at each point as a dashed line of the same colour."""
    div, label = _scaled(c["unit"])
    xs = [wrap(x, _width(c["x"])) for x in c["x"]]  # (one set of categories for both lines)
    data = []
    for i, s in enumerate(c["series"]):
        colour = PALETTE[i % len(PALETTE)]
        data.append({"type": "scatter", "mode": "lines+markers", "name": s["name"], "x": xs,
                     "y": [None if y is None else y / div for y in s["y"]], "text": s["text"],
                     "line": {"color": colour}, "legendgroup": s["name"]})
        if any(v is not None for v in s["ceiling"]):
            data.append({"type": "scatter", "mode": "lines", "name": f"{s['name']} ceiling", "x": xs,
                         "y": [None if v is None else v / div for v in s["ceiling"]],
                         "line": {"color": colour, "dash": "dash", "width": 1}, "legendgroup": s["name"]})
    return {"title": f"{c['title']} (solid: median; dashed: the path's ceiling)", "data": data,
            "layout": {"height": 420, "xaxis": {"title": {"text": c["xtitle"]}, "type": "category", "automargin": True},
                       "yaxis": {"title": {"text": f"{c['metric']} ({label})"}, "rangemode": "tozero",
                                 "automargin": True}}}


def log_ticks(values: list[float | None]) -> dict[str, Any]:
    """A log axis's ticks at 1, 2 and 5 of each decade the values span (at least one decade
    below and above them), each labelled in full: plotly's own labels a decade's minor ticks
    with a lone digit in small type."""
    found = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not found:
        return {}
    low, high = math.floor(math.log10(min(found))), math.ceil(math.log10(max(found)))
    ticks = [m * 10.0 ** e for e in range(low, high + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if min(found) / 2.5 <= t <= max(found) * 2.5]
    return {"tickvals": ticks, "ticktext": [f"{t:g}" for t in ticks]}


def _titled(title: str, key: str) -> str:
    """A chart's title on two lines: what it shows, then how to read it (small)."""
    return f"{title}<br><sub>{key}</sub>"


def response_curves(c: dict[str, Any]) -> list[Figure]:
    """Per figure of offered load: per system its achieved rate (x) against its p99 (solid)
    and p50 (dotted) latency (y, log), a point not held hollow; the closed-loop maximum
    (dotted) and the path's ceiling (dashed) as vertical lines of the system's colour."""
    out = []
    for figure in dict.fromkeys(k["figure"] for k in c["curves"]):
        data: list[Figure] = []
        for i, k in enumerate(x for x in c["curves"] if x["figure"] == figure):
            colour = PALETTE[i % len(PALETTE)]
            text = [f"offered {o:,.0f}/s" + ("" if h else " (saturated)") for o, h in zip(k["offered"], k["held"])]
            for tail, dash in (("p99", "solid"), ("p50", "dot")):
                data.append({"type": "scatter", "mode": "lines+markers", "name": f"{k['system']} {tail}",
                             "x": k["x"], "y": [None if v is None else v * 1e3 for v in k[tail]], "text": text,
                             "hovertemplate": "%{x:,.0f} op/s done, %{text}: %{y:.3g} ms<extra></extra>",
                             "line": {"color": colour, "dash": dash}, "legendgroup": k["system"],
                             "marker": {"symbol": ["circle" if h else "circle-open" for h in k["held"]],
                                        "size": 8}})
        ys = [y for d in data for y in d["y"] if y is not None]
        xs = [x for d in data for x in d["x"] if x is not None] + \
            [k[w] for k in c["curves"] if k["figure"] == figure for w in ("closed_loop", "ceiling") if k[w]]
        for i, k in enumerate(x for x in c["curves"] if x["figure"] == figure):
            colour = PALETTE[i % len(PALETTE)]
            for what, dash in (("closed_loop", "dot"), ("ceiling", "dash")):
                if k[what] and ys:  # (a vertical line as a trace: the legend names it, no label to collide)
                    data.append({"type": "scatter", "mode": "lines", "x": [k[what], k[what]],
                                 "y": [min(ys), max(ys)], "legendgroup": k["system"],
                                 "name": f"{k['system']} {'closed-loop max' if what == 'closed_loop' else 'ceiling'}",
                                 "line": {"color": colour, "dash": dash, "width": 1},
                                 "hovertemplate": "%{x:,.0f} op/s<extra>%{fullData.name}</extra>"})
        out.append({"title": _titled(f"{figure}: latency against the load done", "solid: p99, dotted: p50; hollow: "
                                     "saturated; vertical: closed-loop max (dotted), path's ceiling (dashed)"),
                    "data": data,
                    "layout": {"height": 460,
                               "xaxis": {"title": {"text": "operations per second done, all clients (op/s, log)"},
                                         "type": "log", "automargin": True, **log_ticks(xs)},
                               "yaxis": {"title": {"text": "total latency (ms, log)"}, "type": "log",
                                         "automargin": True, **log_ticks(ys)}}})
    return out


def tails(c: dict[str, Any]) -> list[Figure]:
    """Per fault of a cell of offered load: the clients' percentile every second (of their
    merged histograms) in seconds from the injection, the SLO as a horizontal line, the
    fault's moments as vertical ones, and each second in which no I/O completed (a stall)
    marked at the top."""
    out = []
    for f in c["faults"]:
        xs = [t for t, _ in f["series"]]  # (each second's middle; a stall's value is None: a gap)
        data: list[Figure] = [{"type": "scatter", "mode": "lines+markers", "name": f"{f['percentile']} each second",
                               "x": xs, "y": [None if v is None else v * 1e3 for _, v in f["series"]],
                               "connectgaps": False}]
        if f["stalled"]:
            data.append({"type": "scatter", "mode": "markers", "name": "no I/O completed (stall)",
                         "x": f["stalled"], "y": [1.0] * len(f["stalled"]), "yaxis": "y2",
                         "marker": {"symbol": "x", "color": "#d62728", "size": 10}})
        shapes = [{"type": "line", "x0": t, "x1": t, "yref": "paper", "y0": 0, "y1": 1,
                   "line": {"dash": "dot", "width": 1}} for t in f["moments"].values()]
        notes = moment_labels(f["moments"], xs)
        if f["target"]:
            shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": f["target"] * 1e3,
                           "y1": f["target"] * 1e3, "line": {"color": "#d62728", "dash": "dash", "width": 1}})
            notes.append({"xref": "paper", "x": 1.0, "xanchor": "right", "y": math.log10(f["target"] * 1e3),
                          "yanchor": "bottom", "text": f"SLO {f['percentile']} {f['target'] * 1e3:g} ms",
                          "showarrow": False, "font": {"color": "#d62728", "size": 10}})
        ys = [v * 1e3 for _, v in f["series"] if v is not None] + ([f["target"] * 1e3] if f["target"] else [])
        out.append({"title": _titled(f"{f['system']}: {f['figure']} at {f['offered']:,.0f} op/s offered",
                                     f"{f['fault']}; {f['percentile']} of every client's operations each second"),
                    "data": data,
                    "layout": {"height": 420, "shapes": shapes, "annotations": notes,
                               "xaxis": {"title": {"text": "seconds from the injection (s)"}, "automargin": True},
                               "yaxis": {"title": {"text": f"{f['percentile']} total latency (ms, log)"},
                                         "type": "log", "automargin": True, **log_ticks(ys)},
                               "yaxis2": {"overlaying": "y", "range": [0, 1.05], "visible": False}}})
    return out


def figures(tables: list[Table]) -> list[Figure]:
    out = heatmaps(tables)
    for t in tables:
        if t.chart and t.chart["kind"] == "bars":
            out.append(bars(t.chart))
        elif t.chart and t.chart["kind"] == "lines":
            out += lines(t.chart)
        elif t.chart and t.chart["kind"] == "timeline":
            out += timelines(t.chart)
        elif t.chart and t.chart["kind"] == "sweep":
            out.append(sweep_lines(t.chart))
        elif t.chart and t.chart["kind"] == "cost":
            out.append(cost_bars(t.chart))
        elif t.chart and t.chart["kind"] == "load":
            out += response_curves(t.chart)
    return [f for f in out if f["data"]]


def cell_timelines(view: View) -> list[Figure]:
    """Each cell's rate every second, per client stacked, with the fault's window and the
    nodes' CPU and network on the same clock (``harness.report.timelines``)."""
    from harness.report.timelines import figures as over_time

    return over_time(view.records, view.systems.name, lambda key: view.systems.of(key).services)


def _table_html(t: Table) -> str:
    head = "".join(f"<th>{_text(c)}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(f"<td>{_text(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    notes = "".join(f"<li>{_text(n)}</li>" for n in t.notes)
    return (f"<section class='table'><h3>{_text(t.title)}</h3><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>{f'<ul class=notes>{notes}</ul>' if notes else ''}</section>")


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
pre.header { background: #f5f5f5; padding: 1em; white-space: pre-wrap; }
table { border-collapse: collapse; font-size: 13px; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #eee; } td:first-child, td:nth-child(2) { text-align: left; }
ul.notes { font-size: 12px; color: #555; } .chart { margin: 1.5em 0; }
ul.answer { font-size: 15px; line-height: 1.5; } p.notes { font-size: 12px; color: #555; }
"""


# the few tags of plotly's text the charts use themselves; any other '<' in a chart's text (a
# host, a variant or a parameter from a store someone else wrote) is shown, not followed: plotly
# renders <a href>, <span style> and the like in titles, names and labels
_TAGS = re.compile(r"<(?!(?:br|/?b|/?sub|/?extra)>)")


def _inert(value: Any) -> Any:
    if isinstance(value, str):
        return _TAGS.sub("&lt;", value)
    if isinstance(value, list):
        return [_inert(v) for v in value]
    if isinstance(value, dict):
        return {k: _inert(v) for k, v in value.items()}
    return value


def render(view: View) -> str:
    import plotly.offline

    plotly_js = plotly.offline.get_plotlyjs()

    def kind(t: Table) -> str:
        return str(t.chart["kind"]) if t.chart else ""

    # a decision's order: the answer (the verdicts, then what each GiB cost), the comparison
    # of each workload (how each system scales first: a sweep's curves), what a failure did,
    # then each cell over time as an appendix; the tables and flags last
    of = {k: [t for t in view.tables if kind(t) == k] for k in ("load", "sweep", "cost", "timeline")}
    sections = [("", figures(of["cost"])),
                ("The comparison of each workload", figures(of["load"]) + figures(of["sweep"]) + figures(
                    [t for t in view.tables if kind(t) not in ("load", "sweep", "cost", "timeline")])),
                ("Failures: each fault's moments and the records it overlapped",
                 [f for t in of["load"] if t.chart for f in tails(t.chart)] + figures(of["timeline"])),
                ("Appendix: each cell over time", cell_timelines(view))]
    drawn: list[Figure] = []
    parts = []
    for heading, figs in sections:
        if heading and figs:
            parts.append(f"<h2>{_text(heading)}</h2>")
        for f in figs:
            if "note" in f:  # (a figure with a note says why it is not drawn)
                parts.append(f"<p class='notes'>{_text(f['title'])}: {_text(f['note'])}</p>")
            else:
                parts.append(f"<div class='chart' id='chart-{len(drawn)}'></div>")
                drawn.append(f)
    costs = "".join(_table_html(t) for t in of["cost"])
    specs = json.dumps(_inert([{"data": f["data"], "layout": {**f["layout"], "title": {"text": title_lines(f["title"])},
                                                                "margin": {"l": 160}}} for f in drawn]))
    specs = specs.replace("<", "\\u003c")  # (no text of a record can end the script: '</script>')
    legend = "".join(f"<li>[{f.code}] {_text(name)}: {_text(f.meaning)}</li>"
                     for name, f in FLAGS.items())
    title = "dfsbench report: " + ", ".join(view.ids)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_text(title)}</title>
<style>{STYLE}</style><script>{plotly_js}</script></head>
<body><h1>{_text(title)}</h1>
{summary_html(view)}{costs}
{''.join(parts)}
<h2>Runs, environment and topology</h2><pre class="header">{_text(chr(10).join(view.header))}</pre>
<h2>Tables</h2>{''.join(_table_html(t) for t in view.tables if kind(t) != "cost")}
<h2>Flags</h2><ul class="notes">{legend}</ul>
<script>
const specs = {specs};
specs.forEach((s, i) => Plotly.newPlot('chart-' + i, s.data, s.layout, {{displaylogo: false, responsive: true}}));
</script></body></html>
"""
