"""A cell of a run: every record it stores, whoever made it, carries what the cell says (its
point's values), its repeat and its key; its workload runs on a view of the attachment that
shares what was done to the attachment."""

from __future__ import annotations

from pathlib import Path

from harness.api.contracts import Backend, Cluster, Workload
from harness.api.records import Measurement
from harness.api.sampler import CLIENT, NodeRole, NodeUsage, Sampler
from harness.api.target import Target
from harness.errors import DfsbenchError
from harness.execution.cell import Cell, Run
from harness.execution.plan import build_plan
from harness.execution.progress import Progress
from harness.execution.sweep import Point
from harness.results.store import Store
from harness.system.hosts import LOCAL
from harness.system.ledger import Ledger


class Shared(Backend):
    """A system whose nodes share this machine with the lab's (so its cells measure the host too)."""

    name = "shared"
    requires = frozenset({"toy"})

    def open(self, cluster, workdir):
        raise AssertionError("the test attaches nothing")


class Toy(Workload):
    """One record per cell, a fill of the attachment before it; a cell of size 2 fails."""

    name = "toy"

    def cells(self):
        return [{"size": 1}, {"size": 2}]

    def run(self, target, cell, scratch, raw_dir):
        if target.filled_bytes < cell["size"]:
            target.filled_bytes = cell["size"]
        if cell["size"] == 2:
            raise DfsbenchError("the toy tool failed")
        yield Measurement("toy", "write", "throughput", 1.0, "B/s", dict(cell), target.backend, target.variant)


class Watching(Sampler):
    def start(self):
        pass

    def stop(self):
        return [NodeUsage(LOCAL.label, 1.0, 50.0, 1e6, 0, 0, 0, 0, role=NodeRole(CLIENT)),
                NodeUsage("server1", 1.0, 20.0, 1e6, 0, 0, 0, 0, role=NodeRole("server", ("toy",)))]


def cells(tmp_path: Path) -> tuple[Store, Target, list[Cell]]:
    plan = build_plan({"backends": ["localdir"], "workloads": [{"name": "largefile", "options": {"sizes": ["1MiB"]}}],
                       "repeat": 2})
    store = Store(tmp_path / "results")
    store.begin_run("r1", plan.config.model_dump(mode="json"), plan.config_hash, {}, "test")
    run = Run(plan, store, Progress(quiet=True), "r1")
    toy = Toy(None)
    point = Point({"clients": 1}, [toy], 1)
    cluster = Cluster("toy", {}, Ledger(tmp_path / "ledger.json"), tmp_path, sampler=Watching, host_disk=tmp_path)
    (tmp_path / "mnt").mkdir()
    target = Target("path", tmp_path / "mnt", "shared", "default")
    return store, target, [Cell(run, point, 1, Shared(None), cluster, target, lambda host: tmp_path, toy, params)
                           for params in toy.cells()]


def test_every_record_of_a_cell_says_its_point_repeat_and_key(tmp_path):
    store, _, (good, bad) = cells(tmp_path)
    assert good.measure() and not bad.measure()
    # the workload's, the nodes', this machine's (each made elsewhere); the failure's
    made = {cell.key: {(m.workload, m.test, m.flags) for m in store.measurements_of("r1", cell.key)}
            for cell in (good, bad)}
    assert made == {good.key: {("toy", "write", ()), *(("resources", node, ()) for node in (LOCAL.label, "server1",
                                                                                            "host"))},
                    bad.key: {("toy", "cell", ("failed",))}}
    assert all(m.params["clients"] == 1 and m.repeat == 1 and m.run_id == "r1" for m in store.measurements("r1"))
    stored = store.db.execute("SELECT DISTINCT cell FROM measurements WHERE run_id='r1'").fetchall()
    assert sorted(c for (c,) in stored) == sorted((good.key, bad.key))
    assert [c for (c,) in store.db.execute("SELECT cell FROM cells WHERE status='ok'")] == [good.key]


def test_what_a_cell_did_to_the_attachment_stays_with_the_attachment(tmp_path):
    # (the mark that an image was filled before reading: a later cell, on a view of its own,
    # must not fill it again)
    _, target, (good, bad) = cells(tmp_path)
    good.measure()
    assert target.filled_bytes == 1 and target.lineup is None  # (the cell ran on a view of its own)
    bad.measure()
    assert target.filled_bytes == 2


def test_a_sampler_started_for_a_pass_that_fails_is_stopped(tmp_path):
    # (a node sampler is a thread that asks the engine for every node's counters: one left
    # running by each failed cell would pile up for the rest of the run)
    store, target, (good, bad) = cells(tmp_path)
    ended: list[str] = []

    class Counting(Watching):
        def start(self):
            ended.append("started")

        def stop(self):
            ended.append("stopped")
            return super().stop()

    for cell in (good, bad):
        ended.clear()
        cluster = Cluster("toy", {}, cell.cluster.ledger, tmp_path, sampler=Counting, host_disk=tmp_path)
        assert Cell(cell.run, cell.point, 2, cell.backend, cluster, target, cell.scratch, cell.workload,
                    cell.params).measure() == (cell is good)
        assert ended == ["started", "stopped"], cell.params
