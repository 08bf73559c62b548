"""What every output of stored runs starts from: the records annotated once (limit flags,
ceilings, not-comparable), the runs' context (environment, topology, versions, limits),
and the tables built from the plugins' own specs. Terminal, Markdown, CSV, JSON, HTML and
the regression gate all read a View; none of them decides a flag or a verdict again."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from harness.api.records import Measurement
from harness.api.tables import SystemFacts
from harness.errors import BadInput
from harness.report import cost, load, summary, sweeps
from harness.report.compare import FAILURES_TITLE, stability_notes, tables
from harness.report.limits import annotate, describe, host_bound_advice
from harness.report.verdicts import CV_THRESHOLD, SystemKey, Systems, Table
from harness.results.catalogue import Catalogue
from harness.results.schema import RunInfo
from harness.system import files
from harness.system.names import is_name
from harness.units import moment, rate, size


@dataclass(frozen=True)
class ViewRequest:
    """What an output asks of stored runs: the runs (``ids``, the first what the others are
    set against); ``each_repeat``: iozone's tables per repeat; ``cv_threshold``: above it a
    cell is 'unstable' (default :data:`CV_THRESHOLD`); ``with_tables``: build the tables and
    the answer; ``series``: read the records' figures over time (for what draws or exports
    them); ``reference``: the system (``backend`` or ``backend/variant``) every other is
    compared with (default: the first shown); ``apart``: each run's systems on their own,
    named by the run (its label, else its id), instead of pooled cell by cell — two sites'
    runs of one work side by side; ``baseline``: a run the regression gate sets the runs
    against (:class:`Gate`)."""

    ids: tuple[str, ...]
    each_repeat: bool = False
    cv_threshold: float | None = None
    with_tables: bool = True
    series: bool = True
    reference: str | None = None
    apart: bool = False
    baseline: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", tuple(self.ids))  # (a list given is kept as a tuple: never changed)


@dataclass(frozen=True)
class Gate:
    """What the regression gate (harness.report.gate) sets side by side: the records of the
    runs shown, annotated as the tables show them pooled (never apart: a baseline's systems
    are named as stored), and the baseline run's, annotated on its own."""

    baseline: str
    new: tuple[Measurement, ...]
    old: tuple[Measurement, ...]


@dataclass(frozen=True)
class View:
    """Stored runs as every output reads them, built once (:func:`build_view`) and never
    changed after: its sequences are tuples and its runs a read-only mapping."""

    ids: tuple[str, ...]
    infos: Mapping[str, RunInfo]
    records: tuple[Measurement, ...]  # annotated
    header: tuple[str, ...]
    tables: tuple[Table, ...]
    systems: Systems
    curves: tuple[dict[str, Any], ...] = ()  # a sweep's (harness.report.sweeps)
    summary: tuple[str, ...] = ()  # what the outputs open with (harness.report.summary)
    costs: tuple[cost.Cost, ...] = ()  # what a GiB cost each cell (harness.report.cost)
    gate: Gate | None = None  # where a baseline was asked for (ViewRequest.baseline)

    def context(self) -> dict[str, Any]:
        """The runs as a downstream tool needs them next to the records: environment,
        host, topology and versions of each system, limits, and the header's notes."""
        runs = []
        for run_id, info in self.infos.items():
            runs.append({"run_id": run_id, "status": info.status, "label": info.label,
                         "started": info.started, "config_hash": info.config_hash,
                         "source": info.source, "host": info.host,
                         "limits": (info.config.get("limits") if isinstance(info.config, dict) else None),
                         "systems": [{"backend": b, "variant": v, "name": self.systems.name((b, v)),
                                      "facts": info.systems[(b, v)].to_dict() if (b, v) in info.systems else None,
                                      "description": d} for (b, v), d in info.targets.items()]})
        return {"runs": runs, "notes": self.header}

    def answer(self) -> dict[str, Any]:
        """The answer the outputs open with, as data (:func:`harness.report.summary.answer`)."""
        return summary.answer(self.summary, self.tables, self.records, self.systems, self.costs)


def build_view(catalogue: Catalogue, request: ViewRequest) -> View:
    """The view of the runs ``request`` names, as it asks (:class:`ViewRequest`)."""
    view = _built(catalogue, request)
    if request.baseline is None:
        return view
    # the gate's records: the runs' pooled as the tables pool them (apart, read again pooled),
    # and the baseline's alone
    new = _built(catalogue, ViewRequest(request.ids, with_tables=False, series=False)).records \
        if request.apart else view.records
    old = _built(catalogue, ViewRequest((request.baseline,), with_tables=False, series=False)).records
    return replace(view, gate=Gate(request.baseline, new, old))


def _built(catalogue: Catalogue, request: ViewRequest) -> View:
    ids, each_repeat, cv_threshold = list(request.ids), request.each_repeat, request.cv_threshold
    with_tables, series, reference, apart = request.with_tables, request.series, request.reference, request.apart
    raw = [m for run_id in ids for m in catalogue.measurements(run_id, series)]
    if with_tables and not series and load.needs_series(raw):  # (a fault's seconds above an SLO: their series)
        raw = [m for run_id in ids for m in catalogue.measurements(run_id, True)]
    infos = {run_id: catalogue.run(run_id) for run_id in ids}
    systems = Systems({k: f for info in infos.values() for k, f in info.systems.items()})
    first = next(iter(infos.values()))  # (of the runs as they are, apart or not)
    by_run = {run_id: _differ(first, other, systems) for run_id, other in list(infos.items())[1:]}
    differing = [note for notes in by_run.values() for note in notes]  # (:func:`comparability`)
    marked = differing
    if apart:
        across, not_across = _across(infos, systems, by_run)
        raw, infos = _apart(raw, infos)
        systems = Systems({k: f for info in infos.values() for k, f in info.systems.items()},
                          runs={k: run_id for run_id, info in infos.items() for k in info.targets}, across=across)
    else:  # (pooled, two sites' runs are not repeats of one: what is only said apart is not comparable here)
        marked = [(note, "*" if who is None else who) for note, who in differing]
    systems = replace(systems, reference=reference_of(reference, raw, systems))
    header = [line for run_id in ids for line in _header(infos[run_id], systems)]
    header += describe(infos, raw)
    header += warmups(raw)
    header += [f"  {note}" for note in stability_notes(raw, systems)]
    # runs shown together are pooled cell by cell: say what differs between them
    if apart:  # (each note once; a verdict crosses two runs only where nothing measured differs, so none is marked)
        header += [f"  {'not comparable between the runs' if who is not None else 'measured apart'}: {note}"
                   for note, who in differing]
        header += not_across
        marked = []
    else:
        header += [f"  not comparable: {note}" for note, _ in marked]
    records = annotate(raw, infos)
    header += host_bound_advice(infos, records)
    records = _mark_not_comparable(records, {who for _, who in marked if who is not None})
    built = tables(records, systems, each_repeat, cv_threshold) if with_tables else []
    found = sweeps.curves(records, sweeps.swept(infos), systems,
                          CV_THRESHOLD if cv_threshold is None else cv_threshold)
    if found and with_tables:  # (after the workloads' own tables, before the failed cells)
        at = len(built) - (1 if built and built[-1].title.startswith(FAILURES_TITLE) else 0)
        built[at:at] = sweeps.curve_tables(found, systems)
    held = load.tables(records, load.slo_of(infos), systems.name) if with_tables else []
    if held:  # (what each system holds first: the answer's evidence)
        built[0:0] = held
    if apart:
        header += _judged_across(built, systems)
    if with_tables and not built:
        header.append(f"({len(raw)} measurements stored, none of which a table shows: see --format json)"
                      if raw else "(no measurements stored for this run)")
    # (a stored run is a stranger's: no text of it makes a second line, or one without end)
    header = [files.printable(line, HEADER_MOST) for line in header]
    # the costs per GiB of the cells, and the answer the outputs open with
    records, answer, costs = summary.complete(records, built, systems, with_tables)
    # (the answer's order: the verdicts, what each holds, then bottlenecks and costs)
    at = min(len(summary.pairings(built)), len(answer)) if answer else 0
    named = systems.name(systems.reference) if systems.reference is not None else None
    answer[at:at] = [line for t in held for line in load.summary_lines(t, named)]
    return View(tuple(ids), MappingProxyType(dict(infos)), tuple(records), tuple(header), tuple(built), systems,
                tuple(c.to_dict(systems) for c in found), tuple(files.printable(line, HEADER_MOST) for line in answer),
                tuple(costs))


HEADER_MOST = 4000  # characters of one line of a header or of the answer


def run_names(infos: dict[str, RunInfo]) -> dict[str, str]:
    """Each run's name where runs are shown apart: its label, where it is a name no other
    run shown has, else its id."""
    labels = [info.label for info in infos.values()]
    return {run_id: str(info.label) if is_name(info.label) and labels.count(info.label) == 1
            and info.label not in infos else run_id for run_id, info in infos.items()}


def _apart_key(k: SystemKey, name: str) -> SystemKey:
    """A system of the run named ``name``, shown apart: its variant becomes the run's name
    (or 'VARIANT@RUN')."""
    return (k[0], name if k[1] == "default" else f"{k[1]}@{name}")


def _across(infos: dict[str, RunInfo], systems: Systems,
            by_run: dict[str, list[tuple[str, Any]]]) -> tuple[dict[SystemKey, SystemKey], list[str]]:
    """Runs shown apart: each system of a later run (as shown apart) against itself in the
    first run — where the two runs did the same work (:func:`_same_work`) and nothing that
    changes what was measured differs between them, for every system or for it (``by_run``:
    each later run's differences from the first, :func:`_differ`) — and, for each later
    run, why any system of it is not. What is
    only said — the kind of environment each ran in — does not stop it: the same work on
    another cluster is the comparison ``run --like`` is for."""
    ids = list(infos)
    names = run_names(infos)
    first = infos[ids[0]]
    found: dict[SystemKey, SystemKey] = {}
    why_not: list[str] = []
    for run_id in ids[1:]:
        other = infos[run_id]
        differ = {who for _, who in by_run[run_id]}
        unlike = _same_work(first, other) + (["what was measured differs (above)"] if "*" in differ else [])
        if unlike:
            why_not.append(f"no system of run {run_id} is judged against the first run's: {'; '.join(unlike)}")
            continue
        for k in sorted(k for k in first.targets.keys() & other.targets.keys() if not systems.control(k)):
            if k in differ:
                why_not.append(f"{systems.name(_apart_key(k, names[run_id]))} is not judged against "
                               f"{systems.name(_apart_key(k, names[ids[0]]))}: its setup differs (above)")
            else:
                found[_apart_key(k, names[run_id])] = _apart_key(k, names[ids[0]])
    return found, [f"  across the runs: {line}" for line in why_not]


_ABSENT = object()  # (a key a config has not, which no value it has equals: not even null)

# what of a stored config is not the work: where and how many times it ran, and what the
# report judges it by
NOT_THE_WORK = ("environment", "limits", "repeat", "slo")


def _same_work(first: RunInfo, other: RunInfo) -> list[str]:
    """How two runs' work differs, positively: their configs (but :data:`NOT_THE_WORK`) key
    by key — a key one has and the other has not differs too (a config that names no
    workloads runs every one, with its defaults) — and the dfsbench that ran it (another
    version's default is other work; the tools that ran are each system's, compared by
    :func:`_differ`). Empty: the same work."""
    ca, cb = (info.config if isinstance(info.config, dict) else {} for info in (first, other))
    keys = sorted(str(k) for k in set(ca) | set(cb)
                  if k not in NOT_THE_WORK and ca.get(k, _ABSENT) != cb.get(k, _ABSENT))
    more = f" and {len(keys) - 10} more" if len(keys) > 10 else ""
    out = [f"their configs differ in {', '.join(keys[:10])}{more}"] if keys else []
    va, vb = first.host.get("dfsbench"), other.host.get("dfsbench")
    if va is None or va != vb:
        out.append(f"dfsbench {_stated(va)} vs {_stated(vb)}")
    return out  # (the tools that ran: each system's, :func:`_described`)


def _tools(value: Any) -> Any:
    return ", ".join(f"{k} {v}" for k, v in sorted(value.items())) if isinstance(value, dict) else value


def _judged_across(built: list[Table], systems: Systems) -> list[str]:
    """The pairs the tables judged across two runs shown apart (a system of a later run
    against itself in the first), as the header says them: only those of a cell both sides
    measured fit to compare (a winner, or no significant difference) — as the answer counts
    comparable cells (:meth:`harness.report.summary.Pairing.comparable`), which skips a
    client's row of several."""
    pairs = dict.fromkeys(pair for t in built for v in t.verdicts if v.reason not in ("flags", "missing")
                          and v.ratio is not None  # (a cell both sides measured fit to compare)
                          and not v.per_client  # (a cell of several clients counts by its aggregate row)
                          for pair in ((v.a, v.b), (v.b, v.a)) if systems.across.get(pair[0]) == pair[1])
    if not pairs:
        return []
    return ["  across the runs, judged against itself in the first run (the same work, and nothing measured "
            "differs): " + ", ".join(f"{systems.name(s)} against {systems.name(ref)}" for s, ref in pairs)]


def _apart(raw: list[Measurement], infos: dict[str, RunInfo]) -> tuple[list[Measurement], dict[str, RunInfo]]:
    """The runs' systems told apart by run (:func:`_apart_key`), in its records and its
    run's targets."""
    names = run_names(infos)

    def key(k: SystemKey, run_id: str) -> SystemKey:
        return _apart_key(k, names[run_id])

    records = [replace(m, variant=key((m.backend, m.variant), m.run_id)[1]) if m.run_id in names else m for m in raw]
    apart = {run_id: replace(info, targets={key(k, run_id): d for k, d in info.targets.items()},
                             systems={key(k, run_id): f for k, f in info.systems.items()})
             for run_id, info in infos.items()}
    return records, apart


def _mark_not_comparable(records: list[Measurement], who: set[Any]) -> list[Measurement]:
    """Records of a system whose setup differs between the pooled runs (or of every
    system, when the runs differ as a whole) carry 'not-comparable'."""
    if not who:
        return records
    every = "*" in who
    return [replace(m, flags=(*m.flags, "not-comparable"))
            if (every or (m.backend, m.variant) in who) and "not-comparable" not in m.flags else m
            for m in records]


def _order(fact: Any) -> str:
    """In what order a run's cells went, as its ``order`` fact says (harness.execution.order):
    shuffled (with its seed where it is one), listed, or not recorded (a run of an older
    dfsbench, or made elsewhere: its points went as listed, if it was a dfsbench run)."""
    if not isinstance(fact, dict) or not isinstance(fact.get("shuffle"), bool):
        return ("not recorded (a run of a dfsbench before shuffled orders went as its config lists its cells: the "
                "points of a sweep lowest first, so load and time went together)")
    if fact["shuffle"]:
        seed = fact.get("seed")
        said = f"seed {seed}" if isinstance(seed, int) and not isinstance(seed, bool) else "its seed not recorded"
        return (f"shuffled ({said}): the sweep's points in an order of their own in each repeat, and fio's cells "
                "at each point — a point's load does not follow the time it ran")
    return ("as the config lists them (order: listed): the points of a sweep lowest first, so load and time went "
            "together — a cold start and a neighbour's work land on the first points")


def warmups(records: list[Measurement]) -> list[str]:
    """Per run and workload whose records say their warm-up (``warmup_s``): for the header."""
    found: dict[tuple[str, str], set[float]] = {}
    for m in records:
        w = m.params.get("warmup_s")
        if isinstance(w, (int, float)) and not isinstance(w, bool) and 0 <= w < 1e9:  # (a stored value: any)
            found.setdefault((m.run_id, m.workload), set()).add(float(w))
    out = []
    for (run_id, workload), ws in found.items():
        ran = [w for w in sorted(ws) if w > 0]
        said = (f"ran {' or '.join(f'{w:g} s' for w in ran)} untimed before each timed run (warmup_s), no part of "
                "its figures" if ran else "")
        if 0.0 in ws:
            said += ("; " if said else "") + "no warm-up in some of its cells (warmup_s: 0): their first seconds " \
                "are in their figures"
        out.append(f"  warm-up of run {run_id}: {workload} {said}")
    return out


def _header(info: RunInfo, systems: Systems) -> list[str]:
    lines = [f"run {info.id} — {info.status}" + (f" — {info.label}" if info.label else "")]
    host = info.host
    facts = [f"kernel {host['kernel']}" if host.get("kernel") else "",
             f"{host['cpus']} CPUs" if host.get("cpus") else "",
             f"{size(host['memory'])} RAM" if host.get("memory") else ""]
    came = host.get("bundle")
    if isinstance(came, dict):  # (a run imported from a bundle: made elsewhere)
        checked = "set against its published sum" if came.get("checked_against_published_sum") is True \
            else "not set against a published sum"
        lines.append(f"  from elsewhere: imported {moment(came.get('imported_at'), seconds=False)} from bundle sha256 "
                     f"{came.get('bundle_sha256')} ({checked}), which says it was exported from "
                     f"{came.get('exported_from') or 'an unknown host'} at {moment(came.get('exported_at'), seconds=False)} "
                     f"by dfsbench {came.get('exported_by') or '(not said)'}")
    remote = _client_hosts(info)
    lines.append(f"  {'harness' if remote else 'client'}: "
                 f"{host.get('hostname') or host.get('imported_from') or 'unknown'}"
                 + "".join(f", {f}" for f in facts if f))
    if remote:
        lines.append("  client hosts: " + "; ".join(
            f"{label} (kernel {f.get('kernel')}, {f.get('cpus')} CPUs, {size(f.get('memory') or 0)} RAM"
            + (f", clock {f['clock_offset_s']:+.3f} s" if isinstance(f.get("clock_offset_s"), (int, float)) else "")
            + ")" for label, f in remote.items()))
    for note in dict.fromkeys(d.get("environment_note") for d in info.targets.values() if d.get("environment_note")):
        lines.append(f"  {note}")
    for launched in dict.fromkeys(json.dumps(d["launcher"], sort_keys=True) for d in info.targets.values()
                                  if isinstance(d.get("launcher"), dict)):
        said = json.loads(launched)
        lines.append(f"  clients of a cell on several hosts launched with {said.get('launcher')}: {said.get('why')}")
    tools = host.get("tools") or {}
    if tools:
        lines.append(f"  tools: {_tools(tools)}")
    lines.append(f"  order: {_order(host.get('order'))}")
    for key, d in sorted(info.targets.items()):
        system = info.systems.get(key) or systems.of(key)
        lines.append(f"  {systems.name(key)}: " + ", ".join(system.summary))
        settings = _settings(d, system)
        if settings:
            lines.append("    settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
        if d.get("note"):
            lines.append(f"    note: {d['note']}")
    return lines


def _settings(d: dict[str, Any], facts: SystemFacts) -> dict[str, Any]:
    """The settings a system's facts name in its description: a mapping's items, a
    switch as on or off, any other value as it is."""
    found: dict[str, Any] = {}
    for key in facts.settings:
        value = d.get(key)
        if isinstance(value, dict):
            found.update(value)
        elif isinstance(value, bool):
            found[key] = "on" if value else "off"
        elif value is not None:
            found[key] = value
    return found


# description keys that change the numbers of every system (each system's facts add its own)
# (and the tools that ran on client hosts other than this one, per target)
TOPOLOGY = ("environment", "link", "client_hosts", "replicas", "client", "fs_type", "version", "mounted_by",
            "tools", "tools_by_host")


def _client_hosts(info: RunInfo) -> dict[str, dict[str, Any]]:
    """The client hosts' facts (an existing cluster's SSH clients), as stored with targets."""
    found: dict[str, dict[str, Any]] = {}
    for d in info.targets.values():
        found.update(d.get("client_facts") or {})
    return found


def comparability(infos: list[RunInfo], systems: Systems | None = None) -> list[tuple[str, Any]]:
    """What differs between the first run and each other in ways that change the numbers
    (the first is what the others are pooled with, or judged against apart), each with whom it
    concerns: a system (backend, variant), or '*' for every system (scale, workload
    options, the client machine) — or None for what is only said: the kind of environment
    each ran in (a run made with ``run --like`` elsewhere is the same work on another
    cluster, which is the comparison asked for; its link, its client hosts and the systems'
    replicas, which change what was measured, are not comparable)."""
    systems = systems or Systems()
    return [note for other in infos[1:] for note in _differ(infos[0], other, systems)]


def _differ(first: RunInfo, other: RunInfo, systems: Systems) -> list[tuple[str, Any]]:
    """What differs between two runs (:func:`comparability`)."""
    notes: list[tuple[str, Any]] = []
    pair = f"{first.id} vs {other.id}"
    a, b = first.config.get("scale"), other.config.get("scale")
    if a and b and a != b:
        notes.append((f"{pair}: scale {a} vs {b}", "*"))
    wa, wb = _workload_entries(first), _workload_entries(other)
    for name in sorted(set(wa) & set(wb), key=str):
        differ = [k for k in ("options", "clients", "fault") if wa[name].get(k) != wb[name].get(k)]
        if differ:
            notes.append((f"{pair}: workload {name} {', '.join(differ)} differ", "*"))
    sa, sb = _section(first, "sweep"), _section(other, "sweep")
    if (sa or None) != (sb or None):
        notes.append((f"{pair}: sweep {_stated(sa or None)} vs {_stated(sb or None)}", "*"))
    notes += _environments(first, other, pair)
    for target in sorted(set(first.targets) & set(other.targets)):
        da, db = first.targets[target], other.targets[target]
        fa, fb = (info.systems.get(target) or systems.of(target) for info in (first, other))
        for key in dict.fromkeys((*TOPOLOGY, *fa.topology, *fb.topology)):
            if key == "environment" and _section(first, "environment") != _section(other, "environment"):
                continue  # (said of the runs, below)
            va, vb = _described(first, da, key), _described(other, db, key)
            if va != vb:
                notes.append((f"{pair}: {systems.name(target)} {key} {_stated(va, key)} vs "
                              f"{_stated(vb, key)}", None if key == "environment" else target))
        if fa.layout != fb.layout:
            notes.append((f"{pair}: {systems.name(target)} layout {fa.layout} vs {fb.layout}", target))
    ca, cb = _client_hosts(first), _client_hosts(other)
    if ca or cb:  # the client hosts are what the numbers were measured from
        for key in ("cpus", "memory", "kernel"):
            va, vb = ([f.get(key) for f in hosts.values()] for hosts in (ca, cb))
            if not _same_facts(va, vb, key):
                ta, tb = _two_facts(va, vb, key)
                notes.append((f"{pair}: client hosts' {key} {ta or 'none (the harness host)'} vs "
                              f"{tb or 'none (the harness host)'}", "*"))
    else:
        for key in ("cpus", "memory", "kernel"):
            one, two = [first.host.get(key)], [other.host.get(key)]
            if not _same_facts(one, two, key):
                ta, tb = _two_facts(one, two, key)
                notes.append((f"{pair}: client {key} {ta} vs {tb}", "*"))
    return notes


# two hosts' memory within this share of each other is one size of machine: a kernel keeps
# a little more or less of the same RAM (what MemTotal says differs by MiB between twins)
MEMORY_SAME = 0.02


def _ordered(values: list[Any]) -> list[Any]:
    """Hosts' facts in order: numbers by value, then the rest by their text."""
    numbers = sorted(v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool))
    return [*numbers, *sorted((v for v in values if v not in numbers), key=str)]


def _same_facts(a: list[Any], b: list[Any], key: str) -> bool:
    """Whether two sets of hosts' facts are alike: as many, each the same — but memory,
    alike within :data:`MEMORY_SAME` of the larger."""
    a, b = _ordered(a), _ordered(b)
    if len(a) != len(b):
        return False
    def alike(x: Any, y: Any) -> bool:
        if key == "memory" and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y)):
            return abs(x - y) <= MEMORY_SAME * max(abs(x), abs(y))
        return bool(x == y)
    return all(alike(x, y) for x, y in zip(a, b))


def _described(info: RunInfo, d: dict[str, Any], key: str) -> Any:
    """What a run's attachment says of ``key``: the tools that ran are its client hosts'
    where it had others, else this run's host's (a local client's)."""
    if key == "tools" and d.get(key) is None:
        return info.host.get("tools")
    return d.get(key)


def _facts(values: list[Any], key: str, exact: bool = False) -> str:
    """Hosts' facts as a person reads them, in order: memory in binary units (``exact``:
    in MiB, where two that differ would read alike)."""
    def one(v: Any) -> str:
        if key == "memory" and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1 << 80:
            return f"{v / (1 << 20):,.0f} MiB" if exact else size(int(v))
        return str(v)
    return ", ".join(one(v) for v in _ordered(values))


def _two_facts(a: list[Any], b: list[Any], key: str) -> tuple[str, str]:
    """Two hosts' facts found to differ, as a person tells them apart."""
    ta, tb = _facts(a, key), _facts(b, key)
    def read(text: str) -> str:  # ('2 GiB' and '2.0 GiB' read alike)
        return re.sub(r"\d+(?:\.\d+)?", lambda m: str(float(m.group())), text)
    return (ta, tb) if read(ta) != read(tb) else (_facts(a, key, exact=True), _facts(b, key, exact=True))


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _section(info: RunInfo, key: str) -> Any:
    return info.config.get(key) if isinstance(info.config, dict) else None


def _workload_entries(info: RunInfo) -> dict[str, dict[str, Any]]:
    """A run's workload entries by name, as it stored them (a stored config is a stranger's:
    an entry that is not an object, or whose name is not text, names no workload)."""
    entries = _section(info, "workloads")
    found: dict[str, dict[str, Any]] = {}
    for w in entries if isinstance(entries, list) else []:
        if isinstance(w, dict) and isinstance(w.get("name"), str):
            n = sum(1 for k in found if k == w["name"] or k.startswith(w["name"] + " #"))
            found[w["name"] if n == 0 else f"{w['name']} #{n + 1}"] = w  # (a second entry of one workload)
    return found


ENVIRONMENT_MEASURED = ("clients", "link", "client_links")  # (what of an environment's options changes a figure)


def _environments(first: RunInfo, other: RunInfo, pair: str) -> list[tuple[str, Any]]:
    """Of two runs' environments: of one kind, its client hosts and links, which change
    what is measured (every system's); of two kinds, or one site and another, only said."""
    ea: dict[str, Any] = _object(_section(first, "environment"))
    eb: dict[str, Any] = _object(_section(other, "environment"))
    if ea == eb:
        return []
    if ea.get("kind") != eb.get("kind"):
        return [(f"{pair}: environment {_stated(ea.get('kind'))} vs {_stated(eb.get('kind'))}", None)]
    oa, ob = _object(ea.get("options")), _object(eb.get("options"))
    def measured(value: Any) -> Any:  # (a site's client hosts: how many, not which — nor their keys' paths)
        return f"{len(value)} client hosts" if isinstance(value, list) else value
    notes: list[tuple[str, Any]] = [
        (f"{pair}: environment {key} {_stated(measured(oa.get(key)))} vs {_stated(measured(ob.get(key)))}", "*")
        for key in ENVIRONMENT_MEASURED if measured(oa.get(key)) != measured(ob.get(key))]
    rest = sorted(k for k in set(oa) | set(ob) if k not in ENVIRONMENT_MEASURED and oa.get(k) != ob.get(k))
    if rest:
        notes.append((f"{pair}: environment {_stated(ea.get('kind'))} options {', '.join(map(str, rest))} differ", None))
    return notes


def _stated(value: Any, key: str = "") -> str:
    if key == "link" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return rate(value)
    if key.startswith("tools") and isinstance(value, dict):
        return _tools(value) or "none"
    return "not stated" if value is None or value == "" else str(value)


def reference_of(named: str | None, records: list[Measurement], systems: Systems) -> SystemKey | None:
    """The system ``--reference`` names (``cephfs`` is its default variant), which must be
    one of those measured: BadInput naming them otherwise."""
    if named is None:
        return None
    backend, _, variant = named.partition("/")
    key = (backend, variant or "default")
    present = sorted({(m.backend, m.variant) for m in records})
    compared = [s for s in present if not systems.control(s)]
    shown = ", ".join(b if v == "default" else f"{b}/{v}" for b, v in compared) or "none"
    if key not in present:
        raise BadInput(f"--reference {files.printable(named, 80)}: no such system in these runs",
                       hint=f"name one of: {shown}")
    if systems.control(key):
        raise BadInput(f"--reference {files.printable(named, 80)}: that is the control, shown beside the systems "
                       "and never half of a verdict", hint=f"name one of: {shown}")
    return key
