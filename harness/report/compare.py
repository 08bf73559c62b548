"""The comparator: a pure function of annotated records -> tables (and the chart data the
HTML report draws from them).

The core knows no workload or backend by name. Each workload declares its tables
(``harness.api.tables.TableSpec`` side by side, ``MatrixSpec`` grids like the report's
iozone tables); a workload that declares none gets a generic table of every metric it
stored. Systems are named and classed (control or not) by their backends' declared
facts. The comparison column says which system is better and by how much in the
verdict metric's direction — and never calls a cell a win when either side carries a
flag that makes it unfit (a cache answered, no cache drop, hung, failed, setups differ).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from harness.api import registry
from harness.api.records import (
    CIRCUMSTANTIAL,
    HARNESS_PARAMS,
    OVER_CLIENTS,
    Measurement,
    cell_order,
    flag_marks,
    flag_notes,
    params_keys,
)
from harness.api.tables import Column, MatrixSpec, TableSpec
from harness.report import aggregates, faults, resources
from harness.report.data import keys_of as data_keys
from harness.report.stats import summarize
from harness.report.verdicts import CV_THRESHOLD, SINGLE_RUN_BAND, Cells, SystemKey, Systems, Table, Verdict
from harness.units import size

WIDE_COLUMNS = 10  # beyond this a side-by-side table stops fitting a terminal


def _share_note(cells: Cells) -> list[str]:
    return ["(N%): the rate's share of the network ceiling of its path (see the limits above)"] \
        if cells.ceilings else []


# ---------------------------------------------------------------- side-by-side tables

def _rows(spec: TableSpec, records: list[Measurement], cells: Cells) -> list[tuple[Any, str, str]]:
    """(row key, group label, row label) in the spec's order. A row is one cell identity
    (test and every non-circumstantial parameter); rows whose labels would read the same
    get the parameters that tell them apart appended, so nothing different is pooled."""
    first: dict[Any, Measurement] = {}
    params_key = params_keys()
    for m in records:
        if m.test == "cell" or not spec.select(m):
            continue
        key = (m.test, params_key(m))
        first.setdefault(key, m)
        cells.add(key, m)
    keys = list(first)
    # (in the spec's order, else its tests' as first seen; then by the cell's values, a
    # cell's clients in name order and their aggregate after them: harness.api.records.cell_order)
    tests = {t: i for i, t in enumerate(dict.fromkeys(k[0] for k in keys))}
    keys.sort(key=lambda k: (spec.order(first[k]) if spec.order is not None else tests[k[0]],
                             cell_order(first[k].params)))
    labels = {k: spec.label(first[k]) for k in keys}
    same: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for k in keys:
        same[labels[k]].append(k)
    out = []
    for k in keys:
        group, label = labels[k]
        twins = same[(group, label)]
        if len(twins) > 1:
            params = [json.loads(t[1]) for t in twins]
            mine = json.loads(k[1])
            differing = sorted({p for ps in params for p in ps if any(o.get(p) != mine.get(p) for o in params)})
            label = (label + " " if label else "") + ", ".join(f"{p}={mine[p]}" for p in differing if p in mine)
        out.append((k, group, label))
    return out


def side_by_side(spec: TableSpec, records: list[Measurement], systems: Systems,
                 cv_threshold: float) -> Table | None:
    cells = Cells(cv_threshold=cv_threshold)
    rows = _rows(spec, records, cells)
    if not rows:
        return None
    columns = [c for c in spec.columns if any(m == c.key for (_, _, m) in cells.values)
               or any(m == c.key for (_, _, m) in cells.flags)]
    if not columns:
        return None
    compared = systems.first([s for s in cells.systems if not systems.control(s)])
    # each system against its reference (the first shown, or --reference; like variant with like)
    pairs = systems.pairs(compared) if len(compared) >= 2 and spec.verdict else []
    seen: set[str] = set()
    out: list[list[str]] = []
    verdicts: list[Verdict] = []
    found: list[dict[str, Any]] = []  # (each line as data: harness.report.data)

    def verdict_data(v: Verdict) -> dict[str, Any]:
        return {"of": systems.name(v.b), "against": systems.name(v.a), "metric": v.metric, "text": v.text,
                "faster": systems.name(v.winner) if v.winner is not None else None,
                # (how many times the quicker of the two is as fast, in the metric's direction: the
                # text's figure, whether or not it is a verdict)
                "times": ({"quicker": systems.name(v.a if v.ratio >= 1 else v.b),
                           "value": v.ratio if v.ratio >= 1 else 1 / v.ratio, "unit": "×"}
                          if v.ratio else None),
                "no_verdict": v.reason if v.winner is None else None, "unfit": list(v.unfit),
                "n": {systems.name(v.a): v.n[0], systems.name(v.b): v.n[1]}}

    def row_data(key: Any, s: SystemKey | None) -> dict[str, Any]:
        return {"test": key[0], "params": json.loads(key[1]), **({"backend": s[0], "variant": s[1]} if s else {})}

    def keep(v: Verdict, key: Any, label: str, ref: SystemKey) -> str:
        host = json.loads(key[1]).get("host")
        verdicts.append(replace(v, row=label, per_client=host is not None and host not in OVER_CLIENTS,
                                reference=ref))
        return v.text

    if len(spec.row_header) + len(cells.systems) * len(columns) + max(1, len(pairs)) > WIDE_COLUMNS:
        header = [*spec.row_header, "system", *[c.label for c in columns]]
        against: dict[SystemKey, list[SystemKey]] = {}
        for ref, s in pairs:
            against.setdefault(s, []).append(ref)
        one = {ref for ref, _ in pairs}
        if spec.verdict:
            header.append(f"vs {systems.name(next(iter(one)))}" if len(one) == 1 else "verdict")
        previous = None
        for key, group, label in rows:
            for s in cells.systems:
                if not any((key, s, c.key) in cells.values or cells.flags.get((key, s, c.key))
                           for c in columns):
                    continue
                head = [group, label] if (group, label) != previous else ["", ""]
                previous = (group, label)
                line = [*head, systems.name(s), *[cells.text(key, s, c.key, seen) for c in columns]]
                said = [cells.verdict(key, ref, s, spec.verdict, systems) for ref in against.get(s, [])] \
                    if spec.verdict else []
                if spec.verdict:
                    line.append("; ".join((f"vs {systems.name(ref)}: " if len(one) > 1 else "")
                                          + keep(v, key, f"{group} {label}".strip(), ref)
                                          for ref, v in zip(against.get(s, []), said)))
                out.append(line)
                found.append({**row_data(key, s), "cells": [group, label, systems.name(s),
                                                            *[cells.figure(key, s, c.key, text)
                                                              for c, text in zip(columns, line[3:])],
                                                            *([[verdict_data(v) for v in said]] if spec.verdict
                                                              else [])]})
    else:
        header = list(spec.row_header)
        for s in cells.systems:
            header += [f"{systems.name(s)} {c.label}" for c in columns]
        header += [f"{systems.name(a)} vs {systems.name(b)}" for a, b in pairs]
        previous_group = None
        for key, group, label in rows:
            line = [group if group != previous_group else "", label]
            previous_group = group
            figures: list[Any] = [group, label]
            for s in cells.systems:
                texts = [cells.text(key, s, c.key, seen) for c in columns]
                line += texts
                figures += [cells.figure(key, s, c.key, text) for c, text in zip(columns, texts)]
            said = [cells.verdict(key, a, b, spec.verdict or "", systems) for a, b in pairs]
            for (a, _), v in zip(pairs, said):  # (there are pairs only where the spec names a verdict metric)
                line.append(keep(v, key, f"{group} {label}".strip(), a))
            out.append(line)
            found.append({**row_data(key, None), "cells": [*figures, *(verdict_data(v) for v in said)]})
    keys = data_keys(header)  # (a row's data: its cells in the columns' order, each under its column's key)
    for row in found:
        row.update(zip(keys, row.pop("cells")))
    table = Table(spec.title, header, out, flag_notes(seen) + _share_note(cells), verdicts=verdicts,
                  workload=records[0].workload, keys=keys, data=found)
    table.chart = _bars(spec, rows, cells, systems) or _curves(spec, rows, cells, systems)
    return table




def _bars(spec: TableSpec, rows: list[tuple[Any, str, str]], cells: Cells,
          systems: Systems) -> dict[str, Any] | None:
    if not spec.chart or not any((k, s, spec.chart) in cells.values for k, _, _ in rows
                                 for s in cells.systems):
        return None
    series = []
    for s in cells.systems:
        ys: list[float | None] = []
        lo: list[float] = []
        hi: list[float] = []
        texts: list[str] = []
        ns: list[int] = []  # values behind each bar (one: no interval, no whisker)
        for key, _, _ in rows:
            vals = cells.values.get((key, s, spec.chart))
            value, flags = cells.get(key, s, spec.chart)
            ns.append(len(vals or ()) if value is not None else 0)
            if not vals or value is None:
                ys.append(None)
                lo.append(0.0)
                hi.append(0.0)
                texts.append("")
                continue
            summ = summarize(vals)
            ok = not math.isnan(summ.ci_low)
            ys.append(value)
            hi.append(summ.ci_high - value if ok else 0.0)
            lo.append(value - summ.ci_low if ok else 0.0)
            texts.append(f"n={summ.n}" + (f", CV {summ.cv * 100:.0f}%" if summ.n > 1 else "") + flag_marks(flags))
        series.append({"name": systems.name(s), "y": ys, "lo": lo, "hi": hi, "text": texts, "n": ns})
    return {"kind": "bars", "title": spec.title, "x": [f"{g} {l}".strip() for _, g, l in rows],
            "series": series, "unit": cells.units.get(spec.chart, ""), "metric": spec.chart,
            "log": spec.chart_log}


def _curves(spec: TableSpec, rows: list[tuple[Any, str, str]], cells: Cells,
            systems: Systems) -> dict[str, Any] | None:
    points = [m for m in spec.curves if any(k[2] == m for k in cells.values)]
    if not points:
        return None
    lines = []
    # (a row's profile: its cell without its client, named as its aggregate's row, else its first)
    profiles: dict[Any, str] = {}
    for key, group, label in sorted(rows, key=lambda r: _host_rank_of(r[0]) == 1):
        profiles.setdefault(_without_host(key), f"{group} {label}".strip())
    for s in cells.systems:
        for key, group, label in rows:
            ys = [cells.get(key, s, p)[0] for p in points]
            if any(y is not None for y in ys):
                host = json.loads(key[1]).get("host")
                client = host is not None and host not in OVER_CLIENTS
                lines.append({"name": f"{systems.name(s)} {group} {label}".strip(), "y": ys,
                              "system": systems.name(s), "profile": profiles[_without_host(key)],
                              "client": str(host) if client else None})
    return {"kind": "lines", "title": spec.title, "x": points, "series": lines,
            "unit": cells.units.get(points[0], "")}


def _without_host(key: Any) -> Any:
    params = json.loads(key[1])
    params.pop("host", None)
    return key[0], json.dumps(params, sort_keys=True)


def _host_rank_of(key: Any) -> int:
    host = json.loads(key[1]).get("host")
    return 0 if host is None else 2 if host in OVER_CLIENTS else 1


# ---------------------------------------------------------------- matrices

def matrices(spec: MatrixSpec, records: list[Measurement], systems: Systems, cv_threshold: float,
             each_repeat: bool = False) -> list[Table]:
    """One grid per system and group (and per run and repeat if asked)."""
    groups: dict[tuple[Any, ...], Cells] = defaultdict(lambda: Cells(cv_threshold=cv_threshold))
    labels: dict[tuple[Any, ...], dict[Any, tuple[str, ...]]] = defaultdict(dict)
    for m in records:
        if m.metric != spec.metric or m.test == "cell":
            continue
        try:
            sort_key, row_labels = spec.row(m)
            group = spec.group(m)
        except (KeyError, TypeError):  # a record without the grid's coordinates
            continue
        # what the harness adds to a cell (the phase of a fault, the client of a run on
        # several) is a grid of its own, never pooled into another's cells
        added = ", ".join(f"{k} {m.params[k]}" for k in HARNESS_PARAMS if k in m.params)
        if added:
            group = f"{group}, {added}"
        g = (m.backend, m.variant, group, (m.run_id, m.repeat) if each_repeat else None)
        groups[g].add((sort_key, m.test), m)
        labels[g][sort_key] = row_labels
    out: list[Table] = []
    for g, cells in groups.items():
        backend, variant, group, rep = g
        system = (backend, variant)
        present = {k[0][1] for k in cells.values} | {k[0][1] for k in cells.flags}
        columns = [c for c in spec.columns if c.key in present]
        seen: set[str] = set()
        rows, z, text = [], [], []
        found: list[dict[str, Any]] = []  # (each line as data: harness.report.data, in the records' unit)
        for sort_key in sorted(labels[g]):
            line = list(labels[g][sort_key])
            zr, tr = [], []
            found.append({**dict(zip(data_keys(list(spec.row_header)), line)), "system": systems.name(system)})
            for c in columns:
                value, flags = cells.get((sort_key, c.key), system, spec.metric)
                cell = "—" if value is None else f"{value / spec.scale:.0f}"
                s = cells.summary((sort_key, c.key), system, spec.metric)
                if s is not None and value is not None and math.isfinite(s.cv):
                    cell += f" CV {s.cv * 100:.0f}%"
                share = cells.share((sort_key, c.key), system, spec.metric)
                if share is not None:
                    cell += f" ({share * 100:.0f}%)"
                seen.update(flags)
                line.append(cell + flag_marks(flags))
                found[-1][c.key] = cells.figure((sort_key, c.key), system, spec.metric, line[-1])
                zr.append(value / spec.scale if value else None)
                tr.append(("—" if value is None else f"{value / spec.scale:,.0f} {spec.unit_label}") + flag_marks(flags))
            rows.append(line)
            z.append(zr)
            text.append(tr)
        title = spec.title.format(system=systems.name(system), group=group)
        if rep is not None:
            title += f" — run {rep[0]}, repeat {rep[1] + 1}"
        table = Table(title, [*spec.row_header, *[c.label for c in columns]], rows,
                      flag_notes(seen) + _share_note(cells),
                      keys=[*data_keys(list(spec.row_header)), *[c.key for c in columns]], data=found)
        table.chart = {"kind": "heatmap", "title": title, "x": [c.label for c in columns],
                       "y": [" / ".join(labels[g][k]) for k in sorted(labels[g])], "z": z, "text": text,
                       "unit": spec.unit_label, "scale_group": f"{spec.title}|{group}",
                       "system": systems.name(system), "group": group,
                       "control": systems.control(system), "reference": system == systems.reference}
        out.append(table)
    return out


# ---------------------------------------------------------------- generic, failures, notes

def generic_spec(workload: str, records: list[Measurement]) -> TableSpec:
    """For a workload that declares no table: one row per cell, a column per metric."""
    metrics = list(dict.fromkeys(m.metric for m in records if m.workload == workload and m.test != "cell"))

    def label(m: Measurement) -> tuple[str, str]:
        return m.test, ", ".join(f"{k}={size(v) if k.endswith('size') and isinstance(v, int) else v}"
                                 for k, v in m.params.items() if k not in CIRCUMSTANTIAL)

    return TableSpec(f"{workload}", tuple(Column(m, m) for m in metrics),
                     metrics[0] if metrics else "", label=label)


FAILURES_TITLE = "Cells that failed or hung (no value)"


def failures_table(records: Iterable[Measurement], systems: Systems) -> Table | None:
    """Every cell without a value, once per system, cell and error."""
    grouped: dict[tuple[str, str, str, str, str], list[str]] = {}
    for m in records:
        if m.value is not None or m.metric.endswith("_stonewalled") or \
                {"no-aggregate", "not-noticed", "no-fault"} & set(m.flags):  # (the aggregates and faults tables say why)
            continue
        cell = ", ".join(f"{k}={size(v) if k.endswith('size') and isinstance(v, int) else v}"
                         for k, v in m.params.items() if k not in CIRCUMSTANTIAL)
        key = (systems.name((m.backend, m.variant)), m.workload, cell, ",".join(m.flags),
               str(m.params.get("error") or m.params.get("why") or m.params.get("note", "")))
        tests = grouped.setdefault(key, [])
        if m.test != "cell" and m.test not in tests:
            tests.append(m.test)
    if not grouped:
        return None
    rows = [[system, f"{workload} {', '.join(tests)}".strip(), cell, flags, error]
            for (system, workload, cell, flags, error), tests in grouped.items()]
    flags = {f for row in rows for f in row[3].split(",") if f}
    return Table(FAILURES_TITLE, ["system", "workload", "cell", "flags", "error"],
                 rows, flag_notes(flags), name="failures")


def stability_notes(records: list[Measurement], systems: Systems) -> list[str]:
    """Whose stability the repeats can judge, and whose they cannot (one run per cell)."""
    counts: dict[SystemKey, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
    params_key = params_keys()
    for m in records:
        if m.value is not None:
            counts[(m.backend, m.variant)][(m.workload, m.test, m.metric, params_key(m))] += 1
    repeated = {s for s, c in counts.items() if max(c.values()) > 1}
    if not repeated:
        return [f"every cell was measured once: a difference under {SINGLE_RUN_BAND}× is within one "
                "run's noise; run with --repeat 3 for intervals and significance"] if counts else []
    notes = [f"{systems.name(s)}: cells measured {max(counts[s].values())} times; the tables show their "
             "median and run-to-run CV" for s in counts if s in repeated]
    notes += [f"{systems.name(s)}: one run per cell — its stability cannot be judged from repeats"
              for s in counts if s not in repeated]
    return notes


def presentations(workload: str, records: list[Measurement]) -> tuple[TableSpec | MatrixSpec, ...]:
    cls = registry.find("workload", workload)
    declared = tuple(getattr(cls, "tables", ())) if cls is not None else ()
    return declared or (generic_spec(workload, records),)


RANKS_NOTE = ("host=NAME with ranks: what that host's MPI ranks did together, each rank doing the cell's "
              "work (its ranks' own rows are in the "
              "records: compare --format json)")


def tables(records: list[Measurement], systems: Systems | None = None, each_repeat: bool = False,
           cv_threshold: float | None = None) -> list[Table]:
    """Every table the (annotated) records fill, workload by workload in the order they
    were recorded, then the failed cells."""
    systems = systems or Systems()
    cv = CV_THRESHOLD if cv_threshold is None else cv_threshold
    by_workload: dict[str, list[Measurement]] = defaultdict(list)
    for m in records:
        by_workload[m.workload].append(m)
    built: list[Table] = []
    for workload, mine in by_workload.items():
        if workload == resources.RESOURCES:  # what the lab's nodes spent, not a system's figure
            rows, found = resources.table(mine, systems.name, lambda key: systems.of(key).services)
            if rows:
                marked = {"contended"} if any(row[4] != "—" for row in rows) else set()
                built.append(Table(resources.TITLE, resources.COLUMNS, rows, [resources.NOTE, *flag_notes(marked)],
                                   name="resources", keys=["workload", "cell", "system", "busiest", "contended",
                                                           "this_machine"], data=found))
            continue
        if workload == faults.FAULT:  # what was done to the cluster, and how it came back
            rows = faults.table_rows(mine, systems.name)
            if rows:
                built.append(Table(faults.TITLE, faults.COLUMNS, rows, [faults.NOTE],
                                   faults.timeline_chart(records, systems.name), name="faults",
                                   keys=list(faults.KEYS), data=faults.table_data(mine, systems.name)))
            continue
        # (each rank of a host that ran several: in the records, not in the tables, which
        # show the host's row — its ranks together — beside the aggregate)
        shown = [m for m in mine if "rank" not in m.params]
        for spec in presentations(workload, shown):
            if isinstance(spec, MatrixSpec):
                built += matrices(spec, shown, systems, cv, each_repeat)
            else:
                t = side_by_side(spec, shown, systems, cv)
                if t is not None:
                    if len(shown) < len(mine):
                        t.notes.append(RANKS_NOTE)
                    built.append(t)
    rows, said = aggregates.table(records, systems.name)
    if rows:
        marked = {f for m in records if m.params.get("host") == "all" for f in m.flags}
        built.append(Table(aggregates.TITLE, aggregates.COLUMNS, rows, [aggregates.NOTE, *flag_notes(marked)],
                           name="aggregates", keys=["cell", "system", "clients", "moved", "aggregate", "stonewalled"],
                           data=said))
    failures = failures_table(records, systems)
    return built + ([failures] if failures else [])
