"""A third party's backend and workload (tests/plugins), registered through entry points
exactly as an installed plugin would be, show up in 'list', 'run', 'compare' (a table and a
verdict) and 'report' with no edit to harness/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"


def dfsbench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    dist = tmp_path / "site" / "dfsbench_toys-0.1.dist-info"
    if not dist.exists():
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dfsbench-toys\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text(
            "[dfsbench.backends]\nnullfs = dfsbench_toys:NullFS\n\n"
            "[dfsbench.workloads]\nstatfs = dfsbench_toys:StatFS\n")
    path = os.pathsep.join([str(tmp_path / "site"), str(PLUGINS), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "DFSBENCH_LAB_DIR": str(tmp_path / "lab"),
           "DFSBENCH_RESULTS": str(tmp_path / "results")}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_toy_plugins_appear_in_tables_verdicts_and_the_report(tmp_path):
    listed = dfsbench(tmp_path, "list")
    assert "nullfs" in listed.stdout and "statfs" in listed.stdout, listed.stderr
    config = tmp_path / "toys.yaml"
    config.write_text("backends:\n  - {name: nullfs, variant: a}\n  - {name: nullfs, variant: b}\n"
                      "workloads:\n  - {name: statfs, options: {calls: 3000}}\nrepeat: 3\n")
    run = dfsbench(tmp_path, "run", str(config))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "statfs: statvfs calls per second" in run.stdout

    compared = dfsbench(tmp_path, "compare", "latest", "--format", "markdown")
    assert compared.returncode == 0, compared.stderr
    table = compared.stdout[compared.stdout.index("statfs: statvfs calls per second"):]
    assert "| test | calls | NullFS/a calls/s | NullFS/b calls/s | NullFS/a vs NullFS/b |" in table
    row = next(line for line in table.splitlines() if line.startswith("| statvfs"))
    verdict = row.rstrip(" |").rsplit("|", 1)[-1].strip()
    assert verdict.startswith(("NullFS/a", "NullFS/b", "no significant difference")), verdict

    records = json.loads(dfsbench(tmp_path, "compare", "latest", "--format", "json").stdout)["records"]
    assert {r["workload"] for r in records} == {"statfs"} and len(records) == 6

    report = tmp_path / "toys.html"
    made = dfsbench(tmp_path, "report", "latest", "-o", str(report))
    assert made.returncode == 0, made.stderr
    html = report.read_text()
    assert "statfs: statvfs calls per second" in html and "NullFS/a" in html
    assert '"type": "bar"' in html  # the workload's declared chart
