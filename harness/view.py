"""What every output of stored runs starts from: the runs' descriptions (environment,
topology, limits, stability) and the comparator's tables over their records, with the
flags their physical limits call for. Terminal, Markdown, CSV and HTML render a View."""

from __future__ import annotations

from dataclasses import dataclass

from harness.compare import Table, stability_notes, system_name, tables
from harness.limits import annotate, describe
from harness.records import Measurement
from harness.store import RunInfo, Store
from harness.units import size


@dataclass
class View:
    ids: list[str]
    infos: dict[str, RunInfo]
    records: list[Measurement]  # annotated with limit flags and ceilings
    header: list[str]
    tables: list[Table]


def build_view(store: Store, ids: list[str], each_repeat: bool = False,
               cv_threshold: float | None = None) -> View:
    raw = [m for run_id in ids for m in store.measurements(run_id)]
    infos = {run_id: store.run(run_id) for run_id in ids}
    header = [line for run_id in ids for line in _header(infos[run_id])]
    header += describe(infos, raw)
    header += [f"  {note}" for note in stability_notes(raw)]
    # runs shown together are pooled cell by cell: say what differs between them
    header += [f"  not comparable: {note}" for note in comparability(list(infos.values()))]
    records = annotate(raw, infos)
    built = tables(records, each_repeat, cv_threshold=cv_threshold)
    if not built:
        header.append("(no measurements stored for this run)")
    return View(ids, infos, records, header, built)


def _header(info: RunInfo) -> list[str]:
    lines = [f"run {info.id} — {info.status}" + (f" — {info.label}" if info.label else "")]
    host = info.host
    lines.append(f"  client: {host.get('hostname')} kernel {host.get('kernel')}, {host.get('cpus')} CPUs, "
                 f"{size(host.get('memory', 0))} RAM")
    for (backend, variant), d in sorted(info.targets.items()):
        bits = [d.get("version") and f"{d.get('system')} {d['version']}",
                d.get("volume_type"), d.get("replicas") and f"{d['replicas']} replicas",
                d.get("osds") and f"{d['osds']} OSDs", d.get("client") and f"client {d['client']}",
                d.get("fs_type")]
        lines.append(f"  {system_name(backend, variant)}: " + ", ".join(str(b) for b in bits if b))
        settings = {**(d.get("volume_options") or {}), **(d.get("client_options") or {})}
        if "rbd_cache" in d:
            settings["rbd_cache"] = "on" if d["rbd_cache"] else "off"
        if settings:
            lines.append("    settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
        if d.get("note"):
            lines.append(f"    note: {d['note']}")
    return lines


def comparability(infos: list[RunInfo]) -> list[str]:
    """What differs between runs in ways that change the numbers: scale, workload options,
    the systems' topology and clients, the client machine."""
    notes = []
    first = infos[0]
    for other in infos[1:]:
        pair = f"{first.id} vs {other.id}"
        for key in ("scale",):
            a, b = first.config.get(key), other.config.get(key)
            if a and b and a != b:
                notes.append(f"{pair}: {key} {a} vs {b}")
        wa = {w.get("name"): w.get("options") for w in first.config.get("workloads") or [] if isinstance(w, dict)}
        wb = {w.get("name"): w.get("options") for w in other.config.get("workloads") or [] if isinstance(w, dict)}
        for name in sorted(set(wa) & set(wb)):
            if wa[name] != wb[name]:
                notes.append(f"{pair}: workload {name} options differ")
        for target in sorted(set(first.targets) & set(other.targets)):
            da, db = first.targets[target], other.targets[target]
            for key in ("replicas", "volume_type", "client", "fs_type", "osds", "bricks", "rbd_cache",
                        "volume_options", "client_options"):
                if da.get(key) != db.get(key):
                    notes.append(f"{pair}: {system_name(*target)} {key} {da.get(key)} vs {db.get(key)}")
        for key in ("cpus", "memory", "kernel"):
            if first.host.get(key) != other.host.get(key):
                notes.append(f"{pair}: client {key} {first.host.get(key)} vs {other.host.get(key)}")
    return notes


