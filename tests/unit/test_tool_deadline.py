"""A tool that passes its deadline is killed with its whole process group, and what it
printed before is kept (the report's iozone -I hung on one client)."""

from __future__ import annotations

import shutil
import time

import pytest

from harness.api.target import Target
from harness.system import proc
from workloads.iozone import Iozone, IozoneOptions


def test_run_tool_kills_the_group_and_keeps_partial_output(tmp_path):
    marker = tmp_path / "grandchild.pid"
    script = f"echo first line; sleep 60 & echo $! > {marker}; wait"
    start = time.monotonic()
    result = proc.run_tool(["sh", "-c", script], deadline=0.5, output=tmp_path / "out.txt", grace=1)
    assert result.hung and not result.ok
    assert result.output == "first line\n"
    assert time.monotonic() - start < 10
    grandchild = int(marker.read_text())
    time.sleep(0.2)
    assert proc.start_ticks(grandchild) is None or not proc.ProcessId.of(grandchild).alive()
    assert "passed its deadline" in result.problem()


@pytest.mark.skipif(shutil.which("iozone") is None, reason="iozone3 is not installed")
def test_iozone_past_its_deadline_is_recorded_as_hung(tmp_path):
    work = tmp_path / "target"
    work.mkdir()
    raw = tmp_path / "raw"
    raw.mkdir()
    # 1 GiB with 4 KiB O_DIRECT records cannot finish in half a second anywhere
    options = IozoneOptions(file_sizes=[1 << 30], record_sizes=[4096], modes=["direct"], deadline_s=0.5)
    target = Target("path", work, "localdir", "default")
    records = list(Iozone(options).run(target, {"mode": "direct", "file_size": 1 << 30}, tmp_path, raw))
    assert records and all(m.value is None and m.flags == ("hung",) for m in records)
    assert {m.test for m in records} == {"write", "rewrite", "read", "reread", "random_read", "random_write"}
    assert "passed its deadline" in records[0].params["error"]
    assert list(work.iterdir()) == []  # its file is removed
    assert (raw / f"iozone-direct-{1 << 30}.txt").exists()


def test_the_tools_argv_is_kept_next_to_its_output(tmp_path):
    import json

    from harness.system.proc import run_tool

    out = tmp_path / "echo.txt"
    run_tool(["echo", "hello"], deadline=10, output=out)
    assert json.loads((tmp_path / "echo.txt.argv").read_text()) == ["echo", "hello"]


def test_a_tool_killed_at_its_deadline_is_hung_not_failed(tmp_path):
    """Whatever a workload does with it, the error of a tool past its deadline flags its
    cell hung (a stopped fio that printed nothing was recorded 'failed')."""
    from harness.errors import Hung

    hung = proc.run_tool(["sleep", "30"], deadline=0.3, output=tmp_path / "a.txt", grace=1)
    assert isinstance(hung.failure(), Hung)
    failed = proc.run_tool(["sh", "-c", "exit 3"], deadline=10, output=tmp_path / "b.txt")
    error = failed.failure(what="could not fill: ")
    assert not isinstance(error, Hung) and error.message.startswith("could not fill: sh -c exit 3 exited with code 3")
