"""Records over time, for the outputs: every stored series (``harness.api.series``) with
what it is of, the clients' aggregate of each rate every second, and the HTML report's
timeline of each cell — the clients' rates stacked, their aggregate, the fault's window,
and the nodes' CPU and network on the same clock.

A cell's timeline shows its phases (before, during and after a fault) on one axis in
seconds from the fault's injection (or from the cell's first second, without a fault):
they ran one after another on the one clock of the records."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from harness.api.faults import FAULT
from harness.api.records import AMOUNT, CIRCUMSTANTIAL, HARNESS_PARAMS, OVER_CLIENTS, Measurement, describe_cell
from harness.api.sampler import RESOURCES
from harness.api.series import Series, summed
from harness.report import cells
from harness.system import outputs

SUMMED = "summed over the clients, second by second"
# what says which cell a record is of, beside its workload (a resources record names it in 'for')
# (not 'clients': a sweep's point of one client and its point of two are two cells)
_NOT_CELL = CIRCUMSTANTIAL | set(HARNESS_PARAMS) | {"for", "cores", "peak_process", "peak_process_cpu",
                                                    "cpus", "disk", "read_on", "failed_clients", "share",
                                                    "capacity", "role", "serves", "sampled_s"}


def _entry(m: Measurement, s: Series, host: Any, how: str | None = None) -> dict[str, Any]:
    return {"run_id": m.run_id, "backend": m.backend, "variant": m.variant, "repeat": m.repeat,
            "workload": m.workload, "test": m.test, "metric": m.metric, "unit": m.unit, "host": host,
            "phase": m.params.get("phase"), "for": m.params.get("for"),
            "cell": {k: v for k, v in m.params.items() if k not in _NOT_CELL},
            **({"how": how} if how else {}), **s.to_dict()}


def entries(records: Sequence[Measurement]) -> list[dict[str, Any]]:
    """Every record's series, then, per cell, phase, test and rate run on several clients,
    their aggregate every second (host ``all``, ``how`` says it is their sum)."""
    out = []
    groups: dict[tuple[Any, ...], list[Measurement]] = {}
    for m in records:
        if m.series is None:
            continue
        out.append(_entry(m, m.series, m.params.get("host")))
        if m.series.source == "progress" and m.unit in AMOUNT and m.params.get("host") not in OVER_CLIENTS | {None}:
            key = (cells.pass_of(m), m.test, m.metric, m.unit)
            groups.setdefault(key, []).append(m)
    for found in groups.values():
        total = summed(m.series for m in found if m.series is not None)
        if len(found) > 1 and total is not None:
            out.append(_entry(found[0], total, "all", f"{SUMMED} ({len(found)} clients)"))
    return out


def csv_text(found: list[dict[str, Any]]) -> str:
    """One row per point: which series (as in the JSON) and the point's time and value
    (cells that a spreadsheet would evaluate are quoted: :func:`harness.system.outputs.csv_cell`)."""
    def rows() -> Iterator[list[object]]:
        yield ["run_id", "backend", "variant", "repeat", "workload", "test", "metric", "unit", "host", "phase",
               "for", "source", "t", "seconds_from_start", "value"]
        for e in found:
            for t, v in e["points"]:
                yield [e["run_id"], e["backend"], e["variant"], e["repeat"], e["workload"], e["test"],
                       e["metric"], e["unit"], e["host"] or "", e["phase"] or "", e["for"] or "", e["source"],
                       f"{t:.3f}", f"{t - e['begin']:.3f}", repr(v)]
    return outputs.csv_text(rows())


# a node whose CPU stayed under this (% of one core) in the cell is idle there: its lines are
# listed in the legend, not drawn until picked (the lab's nodes of another system, say)
IDLE = 5.0
# the nodes' figures drawn under a timeline: metric, how it is drawn, the axis it goes on
NODE_METRICS = {"cpu": ("CPU", 1.0, "% of one core"), "net_tx": ("network out", 1 << 20, "MiB/s"),
                "net_rx": ("network in", 1 << 20, "MiB/s")}
_RATE_SCALE = {"B/s": (1 << 20, "MiB/s")}
# a cell whose rates cover fewer whole seconds than this is not drawn over time
SHORT_S = 3
# the gap (of the figure's height) between two panels of rates of two units
_PANEL_GAP = 0.06


def _groups(rates: list[Measurement]) -> dict[tuple[Any, ...], list[Measurement]]:
    """A cell's rates by phase, test, metric and unit: what is stacked over the clients."""
    groups: dict[tuple[Any, ...], list[Measurement]] = {}
    for m in rates:
        groups.setdefault((m.params.get("phase"), m.test, m.metric, m.unit), []).append(m)
    return groups


def _whole(s: Series) -> list[tuple[float, float]]:
    """A per-second series' points that cover a whole second: a partial first or last second
    holds what moved in part of it, which drawn as a second's rate would read as a ramp."""
    return [(start, value) for start, _, value in s.whole()]


def _rate_axes(rates: list[Measurement]) -> dict[str, tuple[str, float, str]]:
    """Per unit of the cell's rates, in the order first met: the axis it is drawn on ('y';
    then 'y4', 'y5', …: y2 and y3 are the nodes'), what its values are divided by, and the
    unit then shown. Rates of two units never share an axis (files/s beside B/s would read
    as millions of files a second), nor a panel."""
    axes: dict[str, tuple[str, float, str]] = {}
    for m in rates:
        if m.unit not in axes:
            div, label = _RATE_SCALE.get(m.unit, (1.0, m.unit))
            axes[m.unit] = ("y" if not axes else f"y{len(axes) + 3}", div, label)
    return axes


LABEL_LEVELS = 4  # heights a fault's moment is named at, one below the other where they are close


def moment_labels(moments: dict[str, float], xs: list[float]) -> list[dict[str, Any]]:
    """A fault's moments named beside their lines, upright; one that falls near the one
    before it (within 4 % of the axis: 'noticed' a fraction of a second after 'injected')
    lower down, so that no two labels cover each other."""
    span = max([*xs, *moments.values()], default=1.0) - min([*xs, *moments.values()], default=0.0) or 1.0
    out: list[dict[str, Any]] = []
    last, level = None, 0
    for name, t in sorted(moments.items(), key=lambda kv: kv[1]):  # (levels 1.0, 0.75, 0.5, 0.25: a fault's
        level = (level + 1) % LABEL_LEVELS if last is not None and t - last < 0.04 * span else 0  # four moments)
        out.append({"x": t, "yref": "paper", "y": 1.0 - level / LABEL_LEVELS, "yanchor": "top", "xanchor": "right",
                    "text": name, "showarrow": False, "textangle": -90, "font": {"size": 10}})
        last = t
    return out


def figures(records: Sequence[Measurement], name: Callable[[tuple[str, str]], str],
            services: Callable[[tuple[str, str]], tuple[str, ...]] = lambda key: ()) -> list[dict[str, Any]]:
    """One timeline per cell that has rates per second (:func:`figure`), of that cell's
    records alone (:mod:`harness.report.cells`): its fault, and its own nodes' samples —
    the clients and the storage nodes of the ``services`` its system (backend, variant)
    runs on — within the cell's window. For a cell whose rates cover fewer than ``SHORT_S``
    whole seconds, a title and a ``note`` saying why it is not drawn instead."""
    declared = cells.roles(records)
    out = []
    for (_, backend, variant, repeat, _), found in cells.by_cell(records).items():
        rates = [m for m in found if m.series is not None and m.series.source == "progress"
                 and m.workload not in (FAULT, RESOURCES) and m.params.get("host") not in OVER_CLIENTS]
        if not rates:
            continue
        window = (min(m.series.start for m in rates if m.series), max(m.series.end for m in rates if m.series))
        fault = next((f for f in found if f.workload == FAULT and isinstance(f.params.get("injected"), (int, float))),
                     None)
        theirs = services((backend, variant))
        nodes = [m for m in found if cells.is_node(m) and m.metric in NODE_METRICS and m.series is not None]
        others = sorted({m.test for m in nodes if not cells.own(m, theirs, declared)})
        nodes = [m for m in nodes if cells.own(m, theirs, declared)]
        title = f"{name((backend, variant))}: {rates[0].workload} {cells.described(rates[0], tuple(_NOT_CELL))}" + \
            (f" (repeat {repeat + 1})" if repeat else "")
        what, seconds = max(((f"{test} {metric}" + (f", {phase}" if phase else ""), len(_whole(total)))
                             for (phase, test, metric, _), found in _groups(rates).items()
                             if (total := summed(m.series for m in found if m.series is not None)) is not None),
                            key=lambda found: found[1])
        if seconds < SHORT_S:  # (a line or two of one-second steps: a shape the data does not have)
            out.append({"title": title, "note": f"its longest rate over time ({what}, all its clients) covers "
                                                f"{seconds} whole second(s): too few to draw over time (its "
                                                f"figures are in the tables)"})
            continue
        drawn = figure(title, rates, fault, nodes, window)
        if others:
            drawn["title"] = drawn["title"].removesuffix("</sub>") + \
                f"; not drawn: {', '.join(others)} (another system's nodes)</sub>"
        out.append(drawn)
    return out


def _node_traces(nodes: list[Measurement], window: tuple[float, float],
                 zero: float) -> dict[tuple[str, str], tuple[list[float | None], list[float | None]]]:
    """Per node and figure, its samples within the cell's ``window`` as one stepped line (x, y):
    the samples of the cell's passes (before, during, after a fault) one after another, a gap
    (None) between two passes."""
    segments: dict[tuple[str, str], list[list[tuple[float, float]]]] = {}
    for m in sorted(nodes, key=lambda m: m.series.start if m.series else 0.0):
        assert m.series is not None
        ends = [t for t, _ in m.series.points[1:]] + [m.series.end]
        kept = [(max(t, window[0]), min(end, window[1]), v) for (t, v), end in zip(m.series.points, ends)
                if t < window[1] and end > window[0]]
        if kept:
            segments.setdefault((m.test, m.metric), []).append(
                [(t0, v) for t0, _, v in kept] + [(kept[-1][1], kept[-1][2])])
    out = {}
    for key, parts in segments.items():
        _, scale, _ = NODE_METRICS[key[1]]
        xs: list[float | None] = []
        ys: list[float | None] = []
        for part in parts:
            if xs:
                xs.append(None)
                ys.append(None)
            xs += [t - zero for t, _ in part]
            ys += [v / scale for _, v in part]
        out[key] = (xs, ys)
    return out


def figure(title: str, rates: list[Measurement], fault: Measurement | None,
           nodes: list[Measurement], window: tuple[float, float] | None = None) -> dict[str, Any]:
    """A cell's timeline: each client's rate every second, stacked per phase, test and rate
    (plotly's stackgroup), their aggregate as a line, the fault's window from the injection
    to healthy shaded with its noticed and restored moments marked, and below, on the same
    time axis, each node's CPU and network between its samples."""
    injected = fault.params.get("injected") if fault is not None else None
    zero = float(injected) if isinstance(injected, (int, float)) else min(m.series.start for m in rates if m.series)
    axes = _rate_axes(rates)
    data: list[dict[str, Any]] = []
    for (phase, test, metric, unit), found in _groups(rates).items():
        what = f"{test} {metric}" + (f", {phase}" if phase else "")
        stack = f"{phase}-{test}-{metric}"
        axis, div, label = axes[unit]
        for m in sorted(found, key=lambda m: str(m.params.get("host"))):
            assert m.series is not None
            points = _whole(m.series)
            data.append({"type": "scatter", "mode": "lines", "stackgroup": stack, "line": {"width": 0.5},
                         "name": f"{m.params.get('host') or 'client'}: {what}", "yaxis": axis,
                         "x": [t - zero for t, _ in points], "y": [v / div for _, v in points],
                         "hovertemplate": "%{y:.1f} " + label + " at %{x:.0f} s<extra>%{fullData.name}</extra>"})
        total = summed(m.series for m in found if m.series is not None)
        if total is not None and len(found) > 1:
            points = _whole(total)
            data.append({"type": "scatter", "mode": "lines", "name": f"all clients: {what}", "yaxis": axis,
                         "line": {"color": "black", "width": 2}, "x": [t - zero for t, _ in points],
                         "y": [v / div for _, v in points]})
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    if fault is not None and isinstance(injected, (int, float)):
        healthy = fault.params.get("healthy")
        until = float(healthy) if isinstance(healthy, (int, float)) else max(
            (m.series.end for m in rates if m.series), default=float(injected))
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": 0.0, "x1": until - zero, "y0": 0, "y1": 1,
                       "fillcolor": "rgba(214,39,40,0.12)", "line": {"width": 0}, "layer": "below"})
        moments = {k: float(t) - zero for k in ("injected", "noticed", "restored", "healthy")
                   if isinstance(t := fault.params.get(k), (int, float))}
        for t in moments.values():
            shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": t, "x1": t,
                           "y0": 0, "y1": 1, "line": {"dash": "dot", "width": 1, "color": "#d62728"}})
        xs = [t - zero for m in rates if m.series for t, _ in m.series.points]
        notes += [{**n, "xref": "x", "font": {"size": 10, "color": "#d62728"}} for n in moment_labels(moments, xs)]
    if window is None:
        window = (min(m.series.start for m in rates if m.series), max(m.series.end for m in rates if m.series))
    traces = _node_traces(nodes, window, zero)
    nodes = [m for m in nodes if (m.test, m.metric) in traces]
    busy = {node for (node, metric), (_, ys) in traces.items()
            if metric == "cpu" and max((v for v in ys if v is not None), default=0.0) >= IDLE}
    for (node, metric), (steps, values) in sorted(traces.items()):
        what, _, _ = NODE_METRICS[metric]
        data.append({"type": "scatter", "mode": "lines", "line": {"shape": "hv", "width": 1},
                     "name": f"{node}: {what}", "xaxis": "x", "yaxis": "y2" if metric == "cpu" else "y3",
                     "x": steps, "y": values, "connectgaps": False,
                     "legendgroup": node, "visible": True if node in busy else "legendonly"})
    origin = "the fault's injection" if fault is not None and isinstance(injected, (int, float)) \
        else "the start of the cell's timed I/O"
    # one axis per unit, each in a panel of its own above the nodes' (stacks of two units on
    # one plot would cover each other), the first unit's on top
    top, bottom = (1.0, 0.5) if nodes else (1.0, 0.0)
    height = (top - bottom - _PANEL_GAP * (len(axes) - 1)) / len(axes)
    ids = [axis for axis, _, _ in axes.values()]
    layout: dict[str, Any] = {
        "height": (720 if nodes else 440) + 160 * (len(axes) - 1), "shapes": shapes, "annotations": notes,
        "hovermode": "x",
        "xaxis": {"title": {"text": f"s from {origin} (the records' clock)"}, "anchor": "y3" if nodes else ids[-1]},
        "legend": {"font": {"size": 10}}}
    for i, (axis, _, label) in enumerate(axes.values()):
        high = top - i * (height + _PANEL_GAP)
        layout["yaxis" + axis[1:]] = {"title": {"text": f"rate ({label})"}, "domain": [high - height, high],
                                      "rangemode": "tozero", "anchor": "x"}
    if nodes:
        layout["yaxis2"] = {"title": {"text": "CPU (% of a core)"}, "domain": [0.27, 0.44], "rangemode": "tozero"}
        layout["yaxis3"] = {"title": {"text": "network (MiB/s)"}, "domain": [0.0, 0.21], "rangemode": "tozero"}
    suffix = "shaded: the fault, injection to healthy; " if shapes else ""
    suffix += "stacked: the clients; black: all of them" if any(d["name"].startswith("all clients") for d in data) \
        else "each whole second"
    return {"title": f"{title}: the rate every second<br><sub>{suffix}</sub>",
            "data": data, "layout": layout}
