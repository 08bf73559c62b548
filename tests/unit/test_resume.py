"""'run --resume': only the same run goes on, and only once it has stopped."""

import os

import pytest

from harness.errors import BadInput
from harness.execution.plan import build_plan
from harness.execution.progress import Progress
from harness.execution.resume import differences, resumable
from harness.execution.runner import host_facts
from harness.results.store import Store

CONFIG = {"backends": ["localdir"], "workloads": [{"name": "fio", "options": {"size": "16MiB"}}],
          "scale": "quick"}


def stored(tmp_path, status="interrupted", host=None):
    plan = build_plan(CONFIG)
    store = Store(tmp_path)
    store.begin_run("r1", plan.config.model_dump(mode="json"), plan.config_hash, host or host_facts(), "t")
    store.finish_run("r1", status)
    return store


def test_a_changed_config_is_refused_naming_what_changed(tmp_path):
    store = stored(tmp_path)
    changed = build_plan({**CONFIG, "scale": "report",
                          "workloads": [{"name": "fio", "options": {"size": "32MiB"}}]})
    with pytest.raises(BadInput) as err:
        resumable(changed, store, "r1", Progress(quiet=True))
    text = str(err.value)
    assert 'scale: "quick" → "report"' in text
    assert 'workloads[0].options.size: "16MiB" → "32MiB"' in text


def test_a_run_still_running_is_refused(tmp_path):
    store = stored(tmp_path, "running")  # this process is its pid, and alive
    with pytest.raises(BadInput, match="still running"):
        resumable(build_plan(CONFIG), store, "r1", Progress(quiet=True))


def test_a_crashed_run_goes_on_with_its_done_cells_kept(tmp_path):
    store = stored(tmp_path, "running", {**host_facts(), "pid": 2 ** 22 + 1})  # no such process
    store.cell_ended("r1", "a", "ok")
    store.cell_ended("r1", "b", "failed")
    run = resumable(build_plan(CONFIG), store, "r1", Progress(quiet=True))
    assert run.id == "r1" and run.done == {"a"} and run.raw == ("resume-1",)
    assert store.run("r1").status == "running"


def test_differences_name_each_path():
    assert differences({"a": {"b": [1, 2]}, "c": 1}, {"a": {"b": [1, 3]}, "d": 1}) == [
        "a.b[1]: 2 → 3", 'c: 1 → "(absent)"', 'd: "(absent)" → 1']
    assert differences({"x": 1}, {"x": 1}) == []
    assert os.getpid() == host_facts()["pid"]


def test_a_run_with_every_cell_done_resumes_without_a_lab(tmp_path):
    from harness.execution.cell import cell_key
    from harness.execution.runner import execute

    plan = build_plan(CONFIG)
    store = stored(tmp_path)
    for backend in plan.backends:
        for w in plan.workloads:
            for c in w.cells():
                store.cell_ended("r1", cell_key(backend, 0, w.name, c), "ok")

    def no_lab(*args, **kwargs):
        raise AssertionError("a resume with nothing to run brought a lab up")

    object.__setattr__(plan.environment, "up", no_lab)
    run_id, ok = execute(plan, store, Progress(quiet=True), resume="r1")
    assert (run_id, ok) == ("r1", True) and store.run("r1").status == "complete"


def test_a_resume_does_not_attach_again_for_cells_the_attachment_cannot_run(tmp_path):
    """The network baseline does not run on a local directory (no server to reach): the
    first session attaches it, runs the raw-disk baseline, finds iperf3's cells cannot run
    and stores them as 'unsupported'; a resume then has nothing to run and attaches nothing. (Pending was
    decided by the target's kind, running by the attachment: a resume re-attached a backend
    to run nothing.)"""
    import io
    import json

    from harness.execution.cell import UNSUPPORTED, planned
    from harness.execution.runner import execute

    (tmp_path / "d").mkdir()
    config = {"environment": {"kind": "local", "options": {"lab_dir": str(tmp_path / "lab")}},
              "backends": [{"name": "localdir", "options": {"path": str(tmp_path / "d")}}],
              "workloads": [{"name": "rawdisk", "options": {"size": "1MiB"}}, {"name": "iperf3"}],
              "scale": "quick", "order": "listed"}
    store = Store(tmp_path / "results")
    first = io.StringIO()
    run_id, _ = execute(build_plan(config), store, Progress(first))
    assert "attach localdir" in first.getvalue()
    statuses = {json.loads(c)[3]: s for c, s in store.db.execute("SELECT cell, status FROM cells WHERE run_id=?",
                                                                   (run_id,))}
    assert statuses == {"rawdisk": "ok", "iperf3": UNSUPPORTED}  # (a directory on a disk; no server)
    store.finish_run(run_id, "interrupted")
    again = io.StringIO()
    _, ok = execute(build_plan(config), store, Progress(again), resume=run_id)
    assert "attach localdir" not in again.getvalue(), again.getvalue()
    run = resumable(build_plan(config), store, run_id, Progress(quiet=True))
    assert all(p.key in run.done for point in run.points() for b in run.plan.backends
               for p in planned(run, point, 0, b))


def test_check_and_the_progress_count_the_cells_by_the_rule_the_run_runs_them(tmp_path):
    """Every cell run of a plan (each repeat, backend, and workload that takes its targets) is
    what 'check' counts, what the progress numbers, and, in a resume, what is left of it."""
    import argparse
    import contextlib
    import io
    import json

    from harness.execution.cell import every_cell
    from harness.execution.runner import execute

    (tmp_path / "d").mkdir()
    config = {"environment": {"kind": "local", "options": {"lab_dir": str(tmp_path / "lab")}},
              "backends": [{"name": "localdir", "options": {"path": str(tmp_path / "d")}}],
              # (rados-bench takes no directory: none of its cells is the run's)
              "workloads": [{"name": "rawdisk", "options": {"size": "1MiB"}}, {"name": "iperf3"},
                            {"name": "rados-bench", "options": {"seconds": 1}}],
              "scale": "quick", "order": "listed", "repeat": 2}
    with pytest.raises(Exception, match="rados"):  # (a workload no backend takes is the config's error)
        build_plan(config)
    config["workloads"] = config["workloads"][:2]
    plan = build_plan(config)
    raw, iperf = (len(w.cells()) for w in plan.workloads)
    every = [(p.rep, p.workload.name) for p in every_cell(plan)]
    assert every == [(0, "rawdisk")] * raw + [(0, "iperf3")] * iperf + [(1, "rawdisk")] * raw + [(1, "iperf3")] * iperf
    total = 2 * (raw + iperf)
    import yaml

    from harness.commands.run import cmd_check

    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    checked = io.StringIO()
    with contextlib.redirect_stdout(checked):
        cmd_check(argparse.Namespace(config=tmp_path / "c.yaml"))
    assert f"cell runs: {total} in all (every workload's cells on each backend that takes them, in each of 2 " \
           "repeats)" in checked.getvalue() and "workload iperf3: " in checked.getvalue(), checked.getvalue()
    store = Store(tmp_path / "results")
    said = io.StringIO()
    run_id, _ = execute(plan, store, Progress(said))
    # rawdisk's cells run, numbered in the session's; iperf3's are counted, and stored unsupported
    shown = [f"[{n}/{total}] rawdisk" for n in (*range(1, raw + 1), *range(raw + iperf + 1, 2 * raw + iperf + 1))]
    assert all(s in said.getvalue() for s in shown), said.getvalue()
    assert f"[{raw + 1}/{total}]" not in said.getvalue()
    # a resume counts what is left: one rawdisk cell set back to failed
    cell = next(c for c, in store.db.execute("SELECT cell FROM cells WHERE run_id=?", (run_id,))
                if json.loads(c)[3] == "rawdisk" and json.loads(c)[2] == 1)  # (one of repeat 2's)
    store.db.execute("UPDATE cells SET status='failed' WHERE run_id=? AND cell=?", (run_id, cell))
    store.db.commit()
    store.finish_run(run_id, "interrupted")
    again = io.StringIO()
    execute(build_plan(config), store, Progress(again), resume=run_id)
    assert "[1/1] rawdisk" in again.getvalue(), again.getvalue()
