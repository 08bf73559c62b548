"""Every output another program reads is data, not code: CSV cells no spreadsheet
evaluates, strict JSON (no NaN), the gate's words beside a document and never in it, a
report that never lands on the store or a raw output, and stored text that is never rich's
markup."""

import csv
import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.api.records import Measurement
from harness.api.series import Series
from harness.report.render import csv_text, json_document, terminal
from harness.report.verdicts import Table
from harness.system.outputs import csv_cell, json_text
from tests.unit.inproc import dfsbench

TOOLS = Path(__file__).parent.parent / "data" / "tools"
FIO = TOOLS / "fio-json.json"
FORMULA = '=HYPERLINK("http://example.invalid/x","y")'




def fio_output(tmp_path: Path, name: str, **options: object) -> Path:
    """The captured fio output with its job renamed and options of the job changed."""
    doc = json.loads(FIO.read_text())
    doc["jobs"][0]["jobname"] = name
    doc["jobs"][0]["job options"].update(options)
    path = tmp_path / f"fio-{len(list(tmp_path.glob('fio-*')))}.json"
    path.write_text(json.dumps(doc))  # (Python's json writes a float('nan') as a bare NaN, as fio might)
    return path


def imported(results: Path, output: Path, *more: str) -> str:
    done = dfsbench("import", "fio", str(output), "--backend", "cephfs", "--results", str(results), *more)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1].removeprefix("run id: ")


def strict(text: str) -> object:
    """``text`` read as RFC 8259 JSON: a bare NaN, Infinity or -Infinity is an error."""
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in a JSON document")
    return json.loads(text, parse_constant=refuse)


def evaluated(cells: list[str]) -> list[str]:
    """The cells a spreadsheet would take as a formula."""
    return [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]


# ---------------------------------------------------------------- CSV

@pytest.mark.parametrize("cell, written", [
    (FORMULA, "'" + FORMULA), ("+cmd|calc", "'+cmd|calc"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("\r=1", "'\r=1"), ("-inf", "'-inf"), ("- 5", "'- 5"),
    # numbers stay numbers: written by dfsbench as figures, nothing a spreadsheet runs
    ("-5.2", "-5.2"), ("+3", "+3"), ("-1e+300", "-1e+300"), ("-.5", "-.5"), (-5.2, -5.2), (3, 3),
    ("randread-4k", "randread-4k"), ("3,014 op/s", "3,014 op/s"), ("", ""),
])
def test_a_csv_cell_that_a_spreadsheet_would_evaluate_is_text(cell, written):
    assert csv_cell(cell) == written


def test_every_cell_of_the_tables_csv_is_data_headers_too():
    t = Table("fio profiles", ["job", "+cmd|calc IOPS", "@x rate"],
              [[FORMULA, "-5.2", "3,014 op/s"], ["-2+3", "=1+1", "11.8 MiB/s"]])
    rows = list(csv.reader(io.StringIO(csv_text([t]))))
    assert rows[0] == ["table", "job", "'+cmd|calc IOPS", "'@x rate"]
    assert rows[1] == ["fio profiles", "'" + FORMULA, "-5.2", "3,014 op/s"]
    assert rows[2] == ["fio profiles", "'-2+3", "'=1+1", "11.8 MiB/s"]


def test_a_job_named_as_a_formula_is_text_in_the_compare_csv(tmp_path):
    results = tmp_path / "r"
    imported(results, fio_output(tmp_path, FORMULA))
    got = dfsbench("compare", "latest", "--results", str(results), "--format", "csv")
    assert got.returncode == 0, got.stderr
    cells = [c for row in csv.reader(io.StringIO(got.stdout)) for c in row]
    assert "'" + FORMULA in cells
    assert evaluated(cells) == []


def test_a_test_named_as_a_formula_is_text_in_the_series_csv(tmp_path):
    from harness.results.store import Store, new_run_id

    results, run_id = tmp_path / "r", new_run_id()
    store = Store(results)
    store.begin_run(run_id, {}, "h", {}, "test")
    store.add_target(run_id, "cephfs", "default", {"system": "cephfs"})
    for test in (FORMULA, "-2+3", "@x"):
        m = Measurement("largefile", test, "throughput", 100.0, "B/s", {"file_size": 1 << 20}, "cephfs",
                        "default", run_id)
        store.add_series(store.add(m, "c"), run_id, Series(((1.8e9 + 10, 100.0), (1.8e9 + 11, 120.0)), 1.8e9 + 12, "tool"))
    store.finish_run(run_id, "complete")
    store.close()
    got = dfsbench("compare", "latest", "--results", str(results), "--format", "csv", "--series")
    assert got.returncode == 0, got.stderr
    rows = list(csv.reader(io.StringIO(got.stdout)))
    assert {row[5] for row in rows[1:]} == {"'" + FORMULA, "'-2+3", "'@x"}
    assert evaluated([c for row in rows for c in row]) == []
    assert {(row[12], row[14]) for row in rows[1:]} == {("1800000010.000", "100.0"), ("1800000011.000", "120.0")}


def test_csv_is_written_by_one_writer():
    """Every CSV dfsbench prints goes through harness.system.outputs (which quotes formulas)."""
    harness = Path(__file__).resolve().parents[2] / "harness"
    writers = [str(p.relative_to(harness)) for p in harness.rglob("*.py") if "csv.writer" in p.read_text()]
    assert writers == ["system/outputs.py"]


# ---------------------------------------------------------------- JSON

def test_json_text_writes_null_for_what_is_not_finite_and_says_where():
    doc = {"a": 1.5, "p": {"bs": float("nan"), "x/y~z": float("inf")}, "pts": [[1.0, float("-inf")]]}
    got = strict(json_text(doc))
    assert got == {"a": 1.5, "p": {"bs": None, "x/y~z": None}, "pts": [[1.0, None]],
                   "non_finite": {"/p/bs": "NaN", "/p/x~1y~0z": "Infinity", "/pts/0/1": "-Infinity"}}
    assert strict(json_text({"a": 1.5})) == {"a": 1.5}  # (nothing to say, no key)


def test_a_tool_output_with_a_param_that_is_not_finite_is_refused_by_parse_and_import(tmp_path):
    """A job whose bs is NaN (no fio writes one: the output is corrupt) is refused naming
    the param, by parse and by import alike, as a value beyond any storage is: no bare NaN
    is printed, and no store is given a row it would refuse to read back."""
    output = fio_output(tmp_path, "randread", bs=float("nan"))
    assert "NaN" in output.read_text()  # (the tool output has it bare)
    results = tmp_path / "r"
    for got in (dfsbench("parse", "fio", str(output)),
                dfsbench("import", "fio", str(output), "--backend", "cephfs", "--results", str(results))):
        assert got.returncode == 2, got.stderr
        assert "bs = nan is not a finite number" in got.stderr and not got.stdout.strip()
    assert not results.exists()  # (refused before anything was stored: no run, no store)


def test_the_store_never_writes_a_param_it_would_not_read_back(tmp_path):
    from harness.api.records import Measurement
    from harness.errors import BadInput
    from harness.results.store import Store

    store = Store(tmp_path)
    run = "20261125-000000-abcdef"
    store.begin_run(run, {}, "abc", {"hostname": "h"}, "test")
    bad = Measurement("fio", "randread", "iops", 1.0, "op/s", params={"bs": float("inf")}, run_id=run)
    with pytest.raises(BadInput, match="not a finite number"):
        store.add(bad)
    with pytest.raises(BadInput, match="not a finite number"):
        store.add_many([bad])


def test_the_json_document_of_a_series_with_a_nan_point_is_strict():
    m = Measurement("largefile", "write", "throughput", 100.0, "B/s", {}, "cephfs", "default", "r",
                    series=Series(((10.0, float("nan")), (11.0, 120.0)), float("inf"), "tool"))
    view = SimpleNamespace(curves=None, records=[m], tables=[], context=lambda: {"runs": []}, answer=lambda: {})
    doc = strict(json_document(view))
    assert doc["series"][0]["points"] == [[10.0, None], [11.0, 120.0]] and doc["series"][0]["end"] is None
    assert doc["non_finite"] == {"/series/0/points/0/1": "NaN", "/series/0/end": "Infinity"}


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_the_gate_speaks_beside_a_document_never_in_it(tmp_path, fmt):
    results = tmp_path / "r"
    first = imported(results, FIO)
    second = imported(results, FIO)
    got = dfsbench("compare", second, "--baseline", first, "--fail-on", "throughput:-10%",
                   "--results", str(results), "--format", fmt)
    assert got.returncode == 0, got.stderr
    said, document = (got.stderr, got.stdout) if fmt != "table" else (got.stdout, "")
    assert "gate: 1 cells compared" in said
    if fmt == "json":
        assert strict(document)["records"]
    elif fmt == "csv":
        assert all(row[0] in ("table", "") or row[0].startswith("fio")
                   for row in csv.reader(io.StringIO(document)) if row)
        assert "gate:" not in document


# ---------------------------------------------------------------- report -o

def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def results(tmp_path) -> Path:
    results = tmp_path / "r"
    imported(results, FIO)
    return results


@pytest.mark.parametrize("onto", ["dfsbench.sqlite", "raw/*/import/output"])
def test_a_report_through_a_link_onto_the_store_or_a_raw_output_is_refused(results, onto):
    kept = next(results.glob(onto))
    before = digest(kept)
    link = results / "report.html"
    link.symlink_to(kept)
    got = dfsbench("report", "latest", "--results", str(results), "-o", str(link))
    assert got.returncode == 2, got.stderr
    assert str(kept) in got.stderr and "Traceback" not in got.stderr
    assert ("the results store" if onto == "dfsbench.sqlite" else "raw outputs") in got.stderr
    assert digest(kept) == before and link.is_symlink()


def test_a_report_into_the_raw_outputs_is_refused(results):
    target = next(results.glob("raw/*/import")) / "report.html"
    got = dfsbench("report", "latest", "--results", str(results), "-o", str(target))
    assert got.returncode == 2 and "raw outputs" in got.stderr, got.stderr
    assert not target.exists()


def test_a_report_replaces_a_link_and_never_writes_through_it(results, tmp_path):
    other = tmp_path / "someone-elses.html"
    other.write_text("kept")
    link = tmp_path / "out.html"
    link.symlink_to(other)
    got = dfsbench("report", "latest", "--results", str(results), "-o", str(link))
    assert got.returncode == 0, got.stderr
    assert other.read_text() == "kept"
    assert not link.is_symlink() and link.read_text().rstrip().endswith("</html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.html", "r", "someone-elses.html"]  # (no temporary left)


def test_a_report_is_written_whole_or_not_at_all(results, tmp_path, monkeypatch):
    """A write that fails half-way leaves the old report as it was and no file beside it."""
    from harness.system import files

    out = tmp_path / "out.html"
    out.write_text("old report")
    os.chmod(out, 0o640)

    real_fdopen = os.fdopen

    def failing(fd, *args, **kwargs):
        f = real_fdopen(fd, *args, **kwargs)

        def write(text):
            raise OSError(28, "No space left on device")
        f.write = write
        return f
    monkeypatch.setattr(os, "fdopen", failing)
    with pytest.raises(Exception, match="No space left on device"):
        files.write_text(out, "new report", "report")
    monkeypatch.undo()
    assert out.read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.html", "r"]
    files.write_text(out, "new report", "report")
    assert out.read_text() == "new report" and (out.stat().st_mode & 0o777) == 0o640


# ---------------------------------------------------------------- rich markup

def test_stored_text_in_a_table_is_never_markup():
    """A column (a variant, a backend from a store), a title, a cell and a header line
    print as they are stored: '[/x]' was a MarkupError, '[bold]' a style, ':smile:' a picture."""
    t = Table("[bold]fio[/bold] :smile:", ["job", "CephFS/[/x] IOPS", "CephFS/[bold]v rate"],
              [["[/x]", "3,014 op/s", ":thumbs_up:"]], notes=["[X] note [/y] :smile:"])
    out = terminal([t], ["run r — :smile: [bold]label[/bold] [/z]"])
    for text in ("[bold]fio[/bold] :smile:", "CephFS/[/x]", "CephFS/[bold]v", "[/x]", ":thumbs_up:",
                 "[X] note [/y] :smile:", "run r — :smile: [bold]label[/bold] [/z]"):
        assert text in out, text
    assert "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in out


def test_a_stored_label_reaches_the_terminal_as_it_is(tmp_path):
    label = ":smile: [bold]x[/bold] [/y]"
    results = tmp_path / "r"
    imported(results, fio_output(tmp_path, "[/x]"), "--label", label)
    got = dfsbench("compare", "latest", "--results", str(results))
    assert got.returncode == 0, got.stderr
    assert label in got.stdout and "[/x]" in got.stdout


def test_progress_lines_are_never_markup():
    from harness.execution.progress import Progress

    buf = io.StringIO()
    Progress(buf).note("cell [/x] [bold]y :smile:")
    assert "cell [/x] [bold]y :smile:" in buf.getvalue()


@pytest.mark.parametrize("name", ["randread\n  hint: the output is fine\ndfsbench: imported 12 measurements",
                                  "rand\udcffread", "rand\x1b[2Jread"])
def test_a_job_name_that_would_forge_lines_or_cannot_be_stored_is_refused_by_parse_and_import(tmp_path, name):
    """A job name from a tool output is one line a store keeps: a line break (which would
    print lines that look like dfsbench's own), an escape, or a lone surrogate (which no
    UTF-8 store keeps: import left a run 'running' with a traceback) is refused, naming it
    escaped, before anything is stored."""
    output = fio_output(tmp_path, name)
    results = tmp_path / "r"
    for got in (dfsbench("parse", "fio", str(output)),
                dfsbench("import", "fio", str(output), "--backend", "cephfs", "--results", str(results))):
        assert got.returncode == 2 and "holds a control character or a broken character" in got.stderr
        assert not got.stdout.strip() and len(got.stderr.splitlines()) == 2  # (the error and its hint)
    assert not results.exists()


@pytest.mark.parametrize("command", [("report", "latest"), ("schema",)])
def test_an_output_through_a_link_to_no_regular_file_or_in_dev_is_refused(results, tmp_path, command):
    """'-o' on a link to a terminal, a pipe or nothing (as /dev/stdout is) would replace the
    link with a file; a file in /dev, /proc or /sys is the system's: both refused, nothing
    written."""
    stdout = tmp_path / "stdout.html"
    stdout.symlink_to("/proc/self/fd/1")  # (here, where the test's output is captured: a regular file)
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "nowhere" / "x.html")
    for link in (stdout, dangling):
        got = dfsbench(*command, "--results", str(results), "-o", str(link))
        said = "is a link through /proc/" if link == stdout else "which is no regular file"
        assert got.returncode == 2 and said in got.stderr, got.stderr
        assert link.is_symlink()
    got = dfsbench(*command, "--results", str(results), "-o", "/dev/dfsbench-never.html")
    assert got.returncode == 2 and "the system's own" in got.stderr, got.stderr
    assert not os.path.lexists("/dev/dfsbench-never.html")


def test_an_output_through_ordinary_links_or_in_dev_shm_is_written_and_a_loop_is_refused(results, tmp_path):
    """What the refusals above must not catch: a relative link, a chain of them, a link under a
    directory that is itself a link — each to a regular file, replaced by the report as before —
    and a file in /dev/shm (a tmpfs of users' files); a loop of links is refused, not a traceback."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "old.html").write_text("old")
    (tmp_path / "alias").symlink_to("real")
    relative = tmp_path / "relative.html"
    relative.symlink_to("real/old.html")
    chained = tmp_path / "chained.html"
    chained.symlink_to(relative)
    under = tmp_path / "alias" / "under.html"
    under.symlink_to("old.html")
    for link in (relative, chained, under):
        got = dfsbench("report", "latest", "--results", str(results), "-o", str(link))
        assert got.returncode == 0, got.stderr
        assert not link.is_symlink() and link.read_text().rstrip().endswith("</html>")
    assert (tmp_path / "real" / "old.html").read_text() == "old"
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        shm = Path(tempfile.mkdtemp(dir="/dev/shm")) / "r.html"
        try:
            got = dfsbench("report", "latest", "--results", str(results), "-o", str(shm))
            assert got.returncode == 0 and shm.read_text().rstrip().endswith("</html>"), got.stderr
        finally:
            shutil.rmtree(shm.parent)
    loop = tmp_path / "loop1.html"
    loop.symlink_to(tmp_path / "loop2.html")
    (tmp_path / "loop2.html").symlink_to(loop)
    got = dfsbench("report", "latest", "--results", str(results), "-o", str(loop))
    assert got.returncode == 2 and "Traceback" not in got.stderr and "lead nowhere" in got.stderr, got.stderr
