"""Hostile text in a config's free-text path reaches no other program's input as syntax
(issue 20, part 1). A generator of hostile directory names is put into a real run (the
localdir backend, fio with its job file, the largefile engine with its argv); each example is
refused, or runs, and then: every job file has only the lines dfsbench writes, its one
filename names a file inside that directory, every recorded argv holds the directory
whole in one argument, and nothing was written beside the directory.

Before the fix, the name 'a#b' made fio write a file 'a' one level up, outside the target
(measured with fio 3.33; so did 'a;b', and '${HOME}' was expanded)."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import BadInput
from harness.execution.plan import build_plan
from tests.helpers import dfsbench

HOSTILE = "#;$:=,'\"\\ \t\n\r[]{}()*`|&<>!~%é-_."
# what dfsbench itself writes into a job file
JOB_KEYS = {"ioengine", "direct", "filename", "size", "runtime", "ramp_time", "time_based", "group_reporting",
            "lat_percentiles", "rw", "bs", "iodepth", "numjobs", "rwmixread", "clientname", "pool", "rbdname"}


def config(directory: Path) -> dict:
    return {"backends": [{"name": "localdir", "options": {"path": str(directory)}}],
            "workloads": [{"name": "fio", "options": {"size": "256KiB", "runtime_s": 1, "direct": False,
                                                      "profiles": [{"name": "w", "rw": "write", "bs": "4k"}]}},
                          {"name": "largefile", "options": {"sizes": ["256KiB"]}}]}


def fio_lines(job: Path) -> list[tuple[str, str]]:
    found = []
    for line in job.read_text().splitlines():
        if not line or (line.startswith("[") and line.endswith("]")):
            continue
        key, _, value = line.partition("=")
        found.append((key, value))
    return found


def exercise(base: Path, name: str) -> str:
    """Run the config with the directory 'd<name>': 'refused', or 'ran' after every check."""
    directory = base / "place" / f"d{name}"
    try:
        build_plan(config(directory))
    except BadInput:
        return "refused"
    (base / "c.json").write_text(json.dumps(config(directory)))  # (JSON is YAML)
    env = {"DFSBENCH_RESULTS": str(base / "results"), "DFSBENCH_LOCAL_LAB_DIR": str(base / "lab")}
    done = dfsbench("run", str(base / "c.json"), env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = list((base / "results" / "raw").rglob("*.fio"))
    assert jobs, done.stdout + done.stderr
    for job in jobs:
        lines = fio_lines(job)
        assert {k for k, _ in lines} <= JOB_KEYS, lines
        names = [v for k, v in lines if k == "filename"]
        assert len(names) == 1
        # fio reads '\\:' as ':'; the file must be inside the directory
        assert Path(names[0].replace("\\:", ":")).parent == directory, names
    engines = 0
    for argv in (base / "results" / "raw").rglob("*.argv"):
        for arg in json.loads(argv.read_text()):
            if arg.startswith("{"):  # an engine's request: the paths in it are the directory's
                request = json.loads(arg)
                for key in ("src", "top", "path"):
                    if str(directory) in str(request.get(key, "")):
                        assert Path(request[key]).parent == directory, request
                        engines += 1
    assert engines, "no engine was given the directory: nothing checked"
    # nothing was made next to the directory (a file name cut short lands there)
    assert [p.name for p in (base / "place").iterdir()] in ([], [directory.name]), list((base / "place").iterdir())
    return "ran"


@pytest.mark.parametrize("name, outcome", [
    (" a b", "ran"), (":x=1", "ran"), ("'\"()", "ran"), ("[a]{b}", "ran"), ("é,-_.", "ran"),
    ("a#b", "refused"), ("a;b", "refused"), ("${HOME}", "refused"), ("a\nexec_prerun=x", "refused"),
    ("a\rb", "refused"), ("b ", "refused"),
])
def test_each_kind_of_directory_name_is_run_whole_or_refused(tmp_path, name, outcome):
    assert exercise(tmp_path, name) == outcome


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=HOSTILE + "ab", min_size=1, max_size=8))
def test_a_hostile_directory_name_is_refused_or_stays_one_value(tmp_path_factory, name):
    exercise(tmp_path_factory.mktemp("inject"), name)
