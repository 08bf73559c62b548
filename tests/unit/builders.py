"""What several unit test modules build alike, from real data: a store holding a real
container-lab run, the 2014 report's run replayed as if measured in a lab, a workload as a
config would give it, a client's scratch directories, and a config of the ``existing``
environment. A module, not a test module: the tests import it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.api.records import Measurement
from harness.execution.plan import build_plan
from harness.report.limits import annotate
from harness.results.catalogue import Catalogue
from harness.results.store import Store

DATA = Path(__file__).parent.parent / "data"
LARGEFILE = {"backends": ["localdir"], "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]}}]}


def run_records(repeat: int | None = 0) -> list[Measurement]:
    """The records of a real container-lab run (tests/data/docker-run-cost.jsonl), of one
    repeat, or of all of them (None), each with the cell it was stored in (:func:`with_cell`)."""
    lines = (DATA / "docker-run-cost.jsonl").read_text().splitlines()
    found = [with_cell(json.loads(line)) for line in lines]
    return [m for m in found if repeat is None or m.repeat == repeat]


def with_cell(d: dict[str, Any]) -> Measurement:
    """A record of an exported real run, with the cell the run stored it in: the export
    dropped the store's cell column, given back under "cell" (a node's and a fault's record
    name their cell; a workload's record is of the pass whose nodes' window holds it; a
    record of a cell without nodes or a fault has none)."""
    m = Measurement.from_dict(d)
    return replace(m, cell=d["cell"]) if isinstance(d.get("cell"), str) else m


def stored(tmp_path: Path) -> str:
    """The real run's records in a store of their own, with its config, host and targets as
    dfsbench run stored them."""
    run = json.loads((DATA / "docker-run-cost-run.json").read_text())
    store = Store(tmp_path)
    store.begin_run(run["run_id"], run["config"], run["config_hash"], run["host"], "run")
    for t in run["targets"]:
        store.add_target(run["run_id"], t["backend"], t["variant"], t["description"], t["repeat"])
    store.add_many(run_records(None))
    store.finish_run(run["run_id"], "complete")
    store.close()
    return str(run["run_id"])


def stored_with_series(tmp_path: Path, name: str, change: Callable[[dict], dict] | None = None) -> str:
    """A real run exported with its records' series (tests/data/NAME.jsonl, each record's
    series under 'series', and NAME-run.json) in a store of its own, as dfsbench run stored
    it (each record's dict through ``change`` first, where given); its run id."""
    from harness.api.series import Series

    run = json.loads((DATA / f"{name}-run.json").read_text())
    store = Store(tmp_path)
    store.begin_run(run["run_id"], run["config"], run["config_hash"], run["host"], "run")
    for t in run["targets"]:
        store.add_target(run["run_id"], t["backend"], t["variant"], t["description"], t["repeat"])
    for line in (DATA / f"{name}.jsonl").read_text().splitlines():
        d = json.loads(line) if change is None else change(json.loads(line))
        seq = store.add(Measurement.from_dict(d), d.get("cell"))
        s = d.get("series")
        if s:
            store.add_series(seq, run["run_id"], Series(tuple((float(t), float(v)) for t, v in s["points"]),
                                                        float(s["end"]), s["source"], float(s["begin"])))
    store.finish_run(run["run_id"], "complete")
    store.close()
    return str(run["run_id"])


def replay():
    """The 2014 report's reference run, and its records annotated with the limits it declares."""
    catalogue = Catalogue(Path("/nonexistent"))  # reference runs need no store
    info = catalogue.run("report-2014")
    return info, annotate(catalogue.measurements("report-2014"), {"report-2014": info})


def lab(info, link, nodes=3, links=None, client_facts=None):
    """The replayed run as if measured in a lab: every link shaped to ``link``, the data on
    ``nodes`` storage nodes (facts as the backends now declare them)."""
    from harness.results.catalogue import system_facts

    targets = {key: {**d, "link": link, "storage_nodes": nodes, "links": links or {},
                     "client_facts": client_facts or {}} for key, d in info.targets.items()}
    systems = {key: system_facts(key[0], d) for key, d in targets.items()}
    return replace(info, config={}, targets=targets, systems=systems)


def workload(name: str, options: dict):
    """The workload as a config naming it on localdir builds it."""
    return build_plan({"backends": ["localdir"], "workloads": [{"name": name, "options": options}]}).workloads[0]


def scratch_of(root: Path):
    """Each client host's scratch directory under ``root``, made when first asked for."""
    def scratch(host) -> Path:
        where = root / "scratch" / host.label
        where.mkdir(parents=True, exist_ok=True)
        return where
    return scratch


def existing(tmp_path, **client):
    """A config of the ``existing`` environment with one client host (``client``: its
    settings; a key file made in ``tmp_path``) running LARGEFILE."""
    key = tmp_path / "id"
    key.write_text("k")
    return {"environment": {"kind": "existing", "options": {"clients": [{"key": str(key), **client}]}},
            **LARGEFILE}
