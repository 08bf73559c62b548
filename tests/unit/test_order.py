"""The order a run's cells go in (the config's ``order``; issue 44): shuffled by default — the
sweep's points in each repeat and fio's cells at each point, from a seed stored with the run and
said as it starts — so that neither a sweep's values nor a load's rates line up with time;
the same seed, the same order (and 'run --resume' keeps the first session's); 'order: listed'
runs them as the config lists them, as dfsbench did before."""

from __future__ import annotations

import io
import json
import shutil

import pytest

from harness.errors import BadInput
from harness.execution.cell import Run, cell_key
from harness.execution.order import SEEDS, Order, ordered, stored_order
from harness.execution.plan import build_plan
from harness.execution.runner import blocks
from harness.execution.schema import Config

RATES = [100, 200, 400, 800, 1600]
FIO = {"name": "fio", "options": {"profiles": [{"name": "rr", "rw": "randread", "bs": "4k"}],
                                  "load": {"iops": RATES}}}


def plan_of(**config):
    return build_plan({"environment": "local", "backends": ["localdir"], "workloads": [FIO], **config})


def rates(order: Order, plan, rep: int = 0, at: int = 0) -> list[int]:
    point = plan.points[at]
    fio = point.workloads[0]
    return [c["offered_iops"] for c in order.cells(fio, 0, fio.cells(), rep, at)]


def test_the_same_seed_draws_the_same_order_and_another_seed_another():
    plan = plan_of(sweep={"iodepth": [1, 4, 16, 64]})
    listed = [p.values["iodepth"] for p in plan.points]
    assert listed == [1, 4, 16, 64]

    def points(seed, rep=0):
        return [p.values["iodepth"] for p in Order(seed).points(plan.points, rep)]

    assert points(1234) == points(1234) and rates(Order(1234), plan) == rates(Order(1234), plan)
    assert sorted(points(1234)) == listed and sorted(rates(Order(1234), plan)) == RATES
    assert points(1234) != points(1235) and rates(Order(1234), plan) != rates(Order(1235), plan)
    # over seeds, the lowest load is as often late as early: no order stands for all of them
    assert len({tuple(points(seed)) for seed in range(20)}) > 10
    assert len({tuple(rates(Order(seed), plan)) for seed in range(20)}) > 10
    assert {rates(Order(seed), plan)[0] for seed in range(20)} == set(RATES)
    # each repeat, and each point, has an order of its own
    assert len({tuple(points(7, rep)) for rep in range(6)}) > 1
    assert len({tuple(rates(Order(7), plan, 0, at)) for at in range(4)}) > 1


def test_listed_keeps_the_configs_order_and_every_repeat_of_a_point_before_the_next():
    plan = plan_of(sweep={"iodepth": [1, 4, 16]}, repeat=2, order="listed")
    run = Run(plan, None, None, "r", order=ordered(plan.config.order))
    assert not run.order.shuffled
    assert [(p.values["iodepth"], reps) for p, reps in blocks(run)] == [(1, (0, 1)), (4, (0, 1)), (16, (0, 1))]
    assert rates(run.order, plan) == RATES
    shuffled = Run(plan, None, None, "r", order=Order(3))
    # shuffled, each repeat goes over every point in an order of its own
    got = [(p.values["iodepth"], reps) for p, reps in blocks(shuffled)]
    assert [reps for _, reps in got] == [(0,)] * 3 + [(1,)] * 3
    assert [d for d, _ in got[:3]] == [p.values["iodepth"] for p in Order(3).points(plan.points, 0)]
    assert sorted(d for d, _ in got[3:]) == [1, 4, 16]


def test_a_workload_outside_the_sweep_runs_after_its_points_and_cells_that_need_their_order_keep_it():
    plan = build_plan({"environment": "local", "backends": ["localdir"], "sweep": {"iodepth": [1, 4, 16]},
                       "workloads": [FIO, {"name": "largefile", "sweep": False, "options": {"sizes": ["1MiB", "2MiB",
                                                                                                   "4MiB"]}}]})
    for seed in range(10):
        assert Order(seed).points(plan.points, 0)[-1] is plan.points[-1] and not plan.points[-1].values
    largefile = plan.points[-1].workloads[0]
    assert not largefile.any_order
    assert all(Order(seed).cells(largefile, 0, largefile.cells(), 0, 3) == largefile.cells() for seed in range(10))


def test_the_config_asks_for_an_order_by_name_or_by_its_seed_and_a_nonsense_one_is_refused():
    assert Config.model_validate({}).order.shuffle and Config.model_validate({}).order.seed is None
    drawn = ordered(Config.model_validate({}).order)
    assert drawn.shuffled and 0 <= drawn.seed < SEEDS
    assert ordered(Config.model_validate({"order": {"seed": 42}}).order) == Order(42)
    assert ordered(Config.model_validate({"order": "shuffled"}).order).shuffled
    assert ordered(Config.model_validate({"order": "listed"}).order) == Order(None)
    with pytest.raises(BadInput, match="order: 'ascending' is no order: give shuffled or listed"):
        plan_of(order="ascending")
    with pytest.raises(BadInput, match="a seed orders nothing where the cells run as listed"):
        plan_of(order={"shuffle": False, "seed": 3})
    with pytest.raises(BadInput, match="order.seed"):
        plan_of(order={"seed": -1})
    # a run goes on in the order its first session stored; one stored before 'order' went as listed
    assert stored_order({"shuffle": True, "seed": 42}) == Order(42)
    assert stored_order({"shuffle": False, "seed": None}) == stored_order(None) == Order(None)


def test_check_says_the_order_a_seed_gives(tmp_path):
    from tests.unit.inproc import dfsbench

    path = tmp_path / "c.yaml"
    path.write_text(json.dumps({"backends": ["localdir"], "workloads": [FIO], "order": {"seed": 5}}))
    done = dfsbench("check", str(path))
    assert done.returncode == 0, done.stderr
    shown = ", ".join(f"offered_iops={r}" for r in rates(Order(5), plan_of()))
    assert "order: shuffled, seed 5" in done.stdout
    assert "fio's cells in repeat 1: " + shown.replace(", ", "; ").replace("offered_iops", "profile=rr offered_iops") \
        in done.stdout
    path.write_text(json.dumps({"backends": ["localdir"], "workloads": [FIO]}))
    assert "order: shuffled, from a seed drawn as the run starts" in dfsbench("check", str(path)).stdout
    path.write_text(json.dumps({"backends": ["localdir"], "workloads": [FIO], "order": "listed"}))
    assert "order: as listed (order: listed)" in dfsbench("check", str(path)).stdout


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_a_run_goes_in_its_seeds_order_stores_the_seed_and_a_resume_keeps_it(tmp_path):
    from harness.execution.progress import Progress
    from harness.execution.runner import execute
    from harness.results.store import Store

    (tmp_path / "d").mkdir()
    fio = {"name": "fio", "options": {"profiles": [{"name": "rr", "rw": "randwrite", "bs": "4k"}], "size": "1MiB",
                                      "runtime_s": 1, "warmup_s": 0, "direct": False, "ioengine": "psync",
                                      "load": {"iops": [100, 200, 300]}}}
    config = {"environment": {"kind": "local", "options": {"lab_dir": str(tmp_path / "lab")}},
              "backends": [{"name": "localdir", "options": {"path": str(tmp_path / "d")}}], "workloads": [fio]}
    plan = build_plan(config)
    seed = next(s for s in range(100) if rates(Order(s), plan) != [100, 200, 300])
    store = Store(tmp_path / "results")
    said = io.StringIO()
    run_id, ok = execute(build_plan({**config, "order": {"seed": seed}}), store, Progress(said))
    assert ok
    assert f"cells in shuffled order, seed {seed}" in said.getvalue()
    assert store.run(run_id).host["order"] == {"shuffle": True, "seed": seed}

    def ran(run: str) -> list[int]:
        iops = [m for m in store.measurements(run) if m.metric == "iops"]
        return [m.params["offered_iops"] for m in sorted(iops, key=lambda m: m.params["started"])]

    assert ran(run_id) == rates(Order(seed), plan)
    # a cell's key is its own, whatever the order: a resume finds them as the first session left them
    fio_w = plan.workloads[0]
    keys = {c for (c,) in store.db.execute("SELECT cell FROM cells WHERE run_id=?", (run_id,))}
    assert keys == {cell_key(plan.backends[0], 0, fio_w, c) for c in fio_w.cells()}
    store.cell_ended(run_id, cell_key(plan.backends[0], 0, fio_w, fio_w.cells()[1]), "failed")
    store.finish_run(run_id, "interrupted")
    again = io.StringIO()
    _, ok = execute(build_plan({**config, "order": {"seed": seed}}), store, Progress(again), resume=run_id)
    assert ok and f"seed {seed}" in again.getvalue()
    # without a seed, one is drawn, said and stored; 'listed' goes as the config lists
    drawn, _ = execute(build_plan(config), store, Progress(quiet=True))
    fact = store.run(drawn).host["order"]
    assert fact["shuffle"] and isinstance(fact["seed"], int)
    assert ran(drawn) == rates(Order(fact["seed"]), plan)
    listed, _ = execute(build_plan({**config, "order": "listed"}), store, Progress(quiet=True))
    assert store.run(listed).host["order"] == {"shuffle": False, "seed": None}
    assert ran(listed) == [100, 200, 300]


def test_the_header_says_in_what_order_a_run_went_and_its_warm_up():
    """What a reader needs to tell load from time: the order (shuffled with its seed, or as
    listed: lowest load first, as runs before the order existed went) and each workload's
    warm-up, from what the run stored."""
    from harness.api.records import Measurement
    from harness.report.view import _order, warmups

    assert _order({"shuffle": True, "seed": 42}).startswith("shuffled (seed 42)")
    assert _order({"shuffle": True, "seed": "42"}).startswith("shuffled (its seed not recorded)")
    assert _order({"shuffle": False, "seed": None}).startswith("as the config lists them (order: listed)")
    for fact in (None, {"seed": 42}, ["x"], {"shuffle": "yes"}):  # (an older run's, or a stranger's)
        assert _order(fact).startswith("not recorded"), fact
    records = [Measurement("fio", "p", "iops", 1.0, "op/s", {"warmup_s": 5}, run_id="r"),
               Measurement("fio", "p", "lat_p99", 1.0, "s", {"warmup_s": 5}, run_id="r"),
               Measurement("smallfile", "create", "elapsed", 1.0, "s", {}, run_id="r")]
    assert warmups(records) == ["  warm-up of run r: fio ran 5 s untimed before each timed run (warmup_s), no part "
                                "of its figures"]
    off = [Measurement("fio", "p", "iops", 1.0, "op/s", {"warmup_s": w}, run_id="s") for w in (0, -3, 10 ** 400)]
    assert warmups(off) == ["  warm-up of run s: fio no warm-up in some of its cells (warmup_s: 0): their first "
                            "seconds are in their figures"]
