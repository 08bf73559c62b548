import json

import pytest
from dataclasses import replace
from pathlib import Path

from harness.api.records import Measurement
from harness.report.compare import tables
from harness.report.render import csv_text, markdown
from harness.report.verdicts import Cells, Systems


def _table(records, title):
    return next((t for t in tables(records) if t.title.startswith(title)), None)


def smallfile_table(records):
    return _table(records, "Small files")


def largefile_table(records):
    return _table(records, "Large files")


def _judge(a, b, unit, flags_a=(), flags_b=()):
    cells = Cells()
    for backend, values, flags in (("glusterfs", a, flags_a), ("cephfs", b, flags_b)):
        for v in values or [None]:  # a hung or failed cell is a record without a value
            cells.add("row", Measurement("w", "t", "m", v, unit, backend=backend, flags=flags))
    return cells.judge("row", ("glusterfs", "default"), ("cephfs", "default"), "m", Systems())


def test_verdict_respects_direction_and_says_n1():
    assert _judge([27.957], [8.158], "s") == "CephFS 3.4× faster (n=1)"
    assert _judge([100.0], [50.0], "B/s") == "GlusterFS 2.0× faster (n=1)"
    # one run a side cannot tell a 20% difference from noise
    assert _judge([1.0], [1.2], "s") == "within noise (1.20×, n=1)"


def test_verdict_never_calls_a_flagged_cell_a_win():
    # a 6× "win" of a cache is not a win (issue: compare report-2014 printed CephFS 6.2× faster)
    assert _judge([6e8], [1e8], "B/s", flags_a=("exceeds-network",)) == "not comparable: cache [N]"
    assert _judge([6e8, 6.1e8], [1e8, 1.1e8], "B/s", flags_b=("fits-in-cache",)) == "not comparable: cache [C]"
    assert _judge([1.0], [9.0], "s", flags_b=("no-cache-drop",)).startswith("not comparable: no cache drop [D]")
    assert _judge([1.0], [], "s", flags_b=("hung",)) == "not comparable: hung [H]"
    assert _judge([1.0], [], "s", flags_b=("failed",)) == "not comparable: failed [F]"


def test_report_2014_prints_no_win_on_a_cache(tmp_path, capsys):
    from harness.cli import main

    assert main(["compare", "report-2014", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    large = out[out.index("Large files"):out.index("Small files")]
    for line in large.splitlines():
        if line.startswith("│") and ("[N]" in line or "[D]" in line):
            assert "faster" not in line, line
    assert "not comparable: cache [N]" in large or "not comparable: no cache drop [D]" in large


def test_json_carries_every_flag_and_the_context(tmp_path, capsys):
    from harness.cli import main

    assert main(["compare", "report-2014", "--format", "json", "--results", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"][0]["run_id"] == "report-2014" and doc["runs"][0]["limits"]["network"] == "1Gbit"
    assert {s["name"] for s in doc["runs"][0]["systems"]} == {"GlusterFS/sr33", "GlusterFS/vr33", "CephFS"}
    exceeds = [r for r in doc["records"] if "exceeds-network" in r["flags"]]
    iozone = [r for r in exceeds if r["workload"] == "iozone"]
    by_repeat = sorted(sum(1 for r in iozone if r["repeat"] == rep) for rep in (0, 1))
    assert by_repeat == [48, 51]  # the two Ceph iozone runs
    assert {r["backend"] for r in exceeds} == {"cephfs"}
    assert any("fits-in-cache" in r["flags"] for r in doc["records"])


def test_smallfile_engines_are_never_pooled(quick_run):
    imported = [Measurement.from_dict({**m.to_dict(), "params": {**m.params, "engine": "smallfile"}})
                for m in quick_run if m.workload == "smallfile"]
    table = smallfile_table(quick_run + imported)
    engines = [row[1] for row in table.rows]
    assert len(table.rows) == 12 and sum("(smallfile)" in label for label in engines) == 6


def test_a_workload_without_a_table_spec_still_prints(tmp_path):
    records = [Measurement("mystery", "probe", "throughput", 5e6, "B/s", {"depth": 2}, "cephfs")]
    built = tables(records)
    assert built and built[0].title == "mystery" and "4.8 MiB/s" in built[0].rows[0][2]


def test_smallfile_table_from_a_real_run(quick_run):
    table = smallfile_table(quick_run)
    assert table is not None
    assert table.columns[:4] == ["mode", "files", "GlusterFS time", "GlusterFS rate"]
    assert table.columns[-1] == "GlusterFS vs CephFS"
    modes = [row[0] for row in table.rows if row[0]]
    assert modes == ["write", "list (ls -l)", "read"]
    assert len(table.rows) == 6  # 3 modes × (256, 1024) files
    assert all("n=1" in row[-1] for row in table.rows)


def test_largefile_table_from_a_real_run(quick_run):
    table = largefile_table(quick_run)
    assert table is not None
    assert [row[1] for row in table.rows] == ["64 MiB", "256 MiB", "64 MiB", "256 MiB"]  # (by size, not as text)
    assert [row[0] for row in table.rows] == ["write", "", "read", ""]
    assert "MiB/s" in table.rows[0][3]


def test_median_over_repeats_and_flags_are_explained(quick_run):
    again = [replace(m, repeat=1, value=m.value * 3 if m.value else m.value) for m in quick_run]
    third = [replace(m, repeat=2, flags=("no-cache-drop",)) for m in quick_run]
    table = largefile_table(quick_run + again + third)
    assert table.rows[0][2].endswith("[D,U]")  # a 3× spread is unstable too
    assert any(note.startswith("[D] no-cache-drop: ") for note in table.notes)
    assert any(note.startswith("[U] unstable: ") for note in table.notes)


def _repeats(records, factors):
    """The real quick run's records as repeats, each scaled by a factor per backend."""
    out = []
    for rep, by_backend in enumerate(factors):
        out += [replace(m, repeat=rep, value=m.value * by_backend.get(m.backend, 1.0))
                for m in records if m.value is not None]
    return out


def test_repeats_show_ci_cv_and_a_significant_difference(quick_run):
    # three repeats a side, about 2% apart within a backend: CephFS stays ~2.6x faster
    records = _repeats(quick_run, [{"glusterfs": 1.00, "cephfs": 1.01}, {"glusterfs": 1.02, "cephfs": 0.99},
                                   {"glusterfs": 0.98, "cephfs": 1.00}])
    table = smallfile_table(records)
    write = next(r for r in table.rows if r[0] == "write")
    assert "±" in write[2] and "CV 2%" in write[2]
    assert write[-1].startswith("CephFS 2.") and "p<0.001" in write[-1] and "–" in write[-1]


def test_a_difference_inside_the_noise_is_not_a_win(quick_run):
    # the same system measured three times with 15% noise and labelled twice
    same = [m for m in quick_run if m.backend == "cephfs"]
    a = _repeats(same, [{"cephfs": 1.0}, {"cephfs": 1.15}, {"cephfs": 0.85}])
    b = [replace(m, backend="glusterfs") for m in _repeats(same, [{"cephfs": 1.1}, {"cephfs": 0.9}, {"cephfs": 1.02}])]
    table = largefile_table(a + b)
    assert all(row[-1].startswith("no significant difference (p=") for row in table.rows)
    assert any(cell.endswith("U]") for row in table.rows for cell in row)


def test_markdown_and_csv_render_every_row(quick_run):
    tables = [smallfile_table(quick_run), largefile_table(quick_run)]
    md = markdown(tables, ["run x"])
    assert md.count("\n|") >= 6 + 4 + 4
    csv = csv_text(tables)
    assert csv.splitlines()[0].startswith("table,mode,files,GlusterFS time")


def test_report_2014_reference_prints_the_reports_numbers(tmp_path, capsys):
    from harness.cli import main

    # addressable with an empty results directory
    assert main(["compare", "report-2014", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for title in ("iozone on GlusterFS/sr33, cached, KB/s", "iozone on GlusterFS/sr33, O_DIRECT (-I), KB/s",
                  "iozone on GlusterFS/vr33, cached, KB/s", "iozone on CephFS, cached, KB/s"):
        assert title in out
    # cells as the report printed them: iozone KB/s, copy times truncated to seconds
    for cell in ("16996", "11943", "19587", "5'31\"", "2'27\"", "4'11\"", "1'9\"", "0'0.8\"",
                 "0'27\"", "3'15\"", "5'21\"", "2'8\"", "0'0.5\"", "0'23\""):
        assert cell in out, cell
    assert "hung" in out  # iozone -I on the Ceph client
    assert main(["compare", "report-2014", "--each-repeat", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "224863" in out and "83904" in out  # the two Ceph runs, each as printed


def test_regression_gate_on_the_reports_two_ceph_runs(tmp_path, capsys):
    from harness.cli import main

    seed = Path(__file__).resolve().parents[1] / "data" / "seed"
    results = str(tmp_path / "results")
    ids = []
    for name in ("iozone-3.397-ceph-cached.txt", "iozone-3.397-ceph-cached-2.txt"):
        assert main(["import", "iozone", str(seed / name), "--backend", "cephfs", "--results", results]) == 0
        ids.append(capsys.readouterr().out.strip().splitlines()[-1].removeprefix("run id: "))
    first, second = ids
    # against itself nothing regresses
    assert main(["compare", first, "--baseline", first, "--fail-on", "throughput:-10%", "--results", results]) == 0
    assert "72 cells compared" in capsys.readouterr().out
    # the second run's 128 MiB / 4 KiB write fell from 224863 to 83904 KB/s (-62.7%)
    assert main(["compare", second, "--baseline", first, "--fail-on", "throughput:-10%", "--results", results]) == 1
    out = capsys.readouterr().out
    assert "Regressions against" in out and "-62.7%" in out
    # a looser rule lets that through only where the change is smaller
    assert main(["compare", second, "--baseline", first, "--fail-on", "throughput:-99%", "--results", results]) == 0


def test_gate_needs_a_baseline_and_a_valid_rule(tmp_path, capsys):
    from harness.cli import main

    assert main(["compare", "report-2014", "--fail-on", "throughput:-10%", "--results", str(tmp_path)]) == 2
    assert "--fail-on needs --baseline" in capsys.readouterr().err
    assert main(["compare", "report-2014", "--baseline", "report-2014", "--fail-on", "fast",
                 "--results", str(tmp_path)]) == 2
    assert "is not a rule" in capsys.readouterr().err


def test_cv_threshold_is_configurable(quick_run, tmp_path, capsys):
    records = _repeats(quick_run, [{"cephfs": 1.0}, {"cephfs": 1.05}, {"cephfs": 0.95}])  # CV 5%
    default = tables(records)
    assert not any(cell.endswith("U]") for t in default for row in t.rows for cell in row)
    strict = tables(records, cv_threshold=0.01)
    assert any(cell.endswith("U]") for t in strict for row in t.rows for cell in row)


def test_a_cells_clients_come_in_name_order_and_their_aggregate_last():
    from harness.report.compare import tables

    records = [Measurement("largefile", "write", "throughput", v, "B/s",
                           {"file_size": 64 << 20, "host": host, "clients": 2}, "glusterfs", "default", "r", 0, ())
               for host, v in (("all", 3.0), ("client2", 2.0), ("client1", 1.0))]
    table = next(t for t in tables(records) if t.title.startswith("Large files"))
    labels = [" ".join(str(c) for c in row[:2]) for row in table.rows]
    assert [next(h for h in ("client1", "client2", "all") if f"host={h}" in label) for label in labels] == \
        ["client1", "client2", "all"], labels


# ---------------------------------------------------------------- per cell, as record by record

def _mixed_cell_store(root: Path) -> None:
    """Cells whose records could be decided alike and must not be: each repeat run at a time
    of its own, the first inside a fault's window; one above the path's ceiling, one without
    a value (hung), one whose stored value no measurement can have, one of another unit; the
    other system's repeats alike but for their values and times; reads of one cell whose
    caches were dropped on one repeat and not on the other (and, of another, whose cache
    step is null on one and not stored on the other); an aggregate of two clients
    whose parts are within their links on one repeat and, with the same total, one client's
    part above its link on the other."""
    from harness.results.store import Store
    from harness.units import parse_rate

    link = parse_rate("1Gbit")
    T = 1.8e9  # (2027, on the records' clock)
    store = Store(root)
    store.begin_run("r", {"limits": {"network": "1Gbit"}}, "h", {"cpus": 2, "memory": 8 << 30}, "test")
    for backend in ("glusterfs", "cephfs"):
        store.add_target("r", backend, "default", {"system": backend})
    cell = {"file_size": 1 << 30, "block_size": 1 << 20}

    def write(backend, repeat, value, unit="B/s", flags=(), test="write", **more):
        began = T + 100.0 + 20 * repeat  # (repeat 0 from 100 s to 110 s: the fault's 105-109 s)
        return Measurement("largefile", test, "throughput", value, unit,
                           {**cell, "started": began, "ended": began + 10, **more}, backend, "default", "r",
                           repeat, flags)

    moved = link * 10  # what a client moves in 10 s at its link's rate
    records = [write("glusterfs", 0, link * 0.2), write("glusterfs", 1, link * 0.25),
               write("glusterfs", 2, link * 1.5), write("glusterfs", 3, None, flags=("hung",)),
               write("glusterfs", 4, 1e300), write("glusterfs", 5, 5.0, unit="op/s"),
               Measurement("fault", "recovery", "elapsed", 3.0, "s",
                           {"for": "largefile", "injected": T + 105.0, "restored": T + 108.0, "healthy": T + 109.0},
                           "glusterfs", "default", "r", 0),
               *(write("cephfs", rep, link * v) for rep, v in enumerate((0.5, 0.52, 1.2))),
               *(write("cephfs", rep, link * 0.3, test="read", cache=how)
                 for rep, how in enumerate(("sync+drop_caches", "sync"))),
               # (a cache step stored as null says nothing was dropped; none stored says nothing)
               write("cephfs", 0, link * 0.3, test="reread", cache=None), write("cephfs", 1, link * 0.3, test="reread"),
               *(write("cephfs", rep, link * 0.8, test="write", host="all", clients=2, stonewall=[T + 200.0, T + 210.0],
                       moved_each=each)
                 for rep, each in enumerate(({"c1": moved * 0.8, "c2": moved * 0.8}, {"c1": moved * 0.3, "c2": moved * 1.3})))]
    for m in records:
        if m.value == 1e300:  # (as a damaged store or another writer leaves it: past the parsers' bounds)
            seq = store.add(replace(m, value=1.0), "c")
            store.db.execute("UPDATE measurements SET value=1e300 WHERE seq=?", (seq,))
        else:
            store.add(m, "c")
    store.finish_run("r", "complete")
    store.close()


def test_a_cell_decided_once_is_what_its_records_decided_one_by_one_say(tmp_path, monkeypatch):
    """The view decides flags and ceilings once per cell and kind of record; decided record
    by record (each row read on its own, no params shared, each record a cell of its own),
    every record, table, verdict and summary line is the same."""
    import itertools

    from harness.report import limits
    from harness.report.render import json_document, terminal
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    class RowByRow(Catalogue):
        def measurements(self, run_id, series=True):
            return [replace(m, params=dict(m.params)) for m in self.store.measurements_of(run_id, "c")]

    _mixed_cell_store(tmp_path)
    grouped = build_view(Catalogue(tmp_path), ViewRequest(["r"]))
    count = itertools.count()
    monkeypatch.setattr(limits, "params_keys", lambda: lambda m: next(count))
    alone = build_view(RowByRow(tmp_path), ViewRequest(["r"]))
    assert next(count) == len(alone.records)  # (every record was its own cell)
    flags = {(m.backend, m.test, m.repeat, m.unit): m.flags for m in grouped.records if m.workload == "largefile"}
    # (the case is one where a decision per cell could go wrong)
    assert flags[("glusterfs", "write", 0, "B/s")] == ("degraded",)
    assert flags[("glusterfs", "write", 1, "B/s")] == ()
    assert flags[("glusterfs", "write", 2, "B/s")] == ("exceeds-network",)
    assert flags[("glusterfs", "write", 3, "B/s")] == ("hung",)
    assert "implausible" in flags[("glusterfs", "write", 4, "B/s")]
    assert flags[("cephfs", "read", 0, "B/s")] == () and flags[("cephfs", "read", 1, "B/s")] == ("no-cache-drop",)
    assert flags[("cephfs", "reread", 0, "B/s")] == ("no-cache-drop",) and flags[("cephfs", "reread", 1, "B/s")] == ()
    aggregate = {m.repeat: m.flags for m in grouped.records if m.params.get("host") == "all"}
    assert aggregate == {0: (), 1: ("exceeds-network",)}
    assert [m.to_dict() for m in grouped.records] == [m.to_dict() for m in alone.records]
    assert [(t.title, t.columns, t.rows, t.notes) for t in grouped.tables] == \
        [(t.title, t.columns, t.rows, t.notes) for t in alone.tables]
    assert (grouped.header, grouped.summary) == (alone.header, alone.summary)
    assert terminal(grouped.tables, grouped.header) == terminal(alone.tables, alone.header)
    assert json_document(grouped) == json_document(alone)


def test_a_big_table_is_printed_as_rich_prints_it(quick_run):
    """The terminal lays out a table of many rows from the rows that set its widths; what it
    prints is what rich prints of the whole table, in any width, folded cells and wide
    characters included."""
    import io
    import random

    from rich.console import Console

    from harness.report import render
    from harness.report.verdicts import Table

    def both(t: Table, width: int) -> tuple[str, str | None]:
        console = Console(file=io.StringIO(), width=width, highlight=False, force_terminal=False)
        with console.capture() as capture:
            console.print(render._rich_table(t, t.rows))
        laid = render._laid_out(Console(file=io.StringIO(), width=width, highlight=False, force_terminal=False), t)
        return capture.get(), None if laid is None else "".join(line + "\n" for line in laid)

    found = tables(_repeats(quick_run, [{"cephfs": 1.0}, {"cephfs": 1.3}]))
    rnd = random.Random(7)
    words = ["a", "bb", "ccc ", " d", "漢字", "—", "±4%", "x" * 30, "", " ", "1.0 GiB/s [N,C]", "e\u0301", "😀",
             "verylongwordwithoutspaces" * 3]
    for _ in range(60):
        columns = [rnd.choice(["cell", "system", "vs X", "rate", "error", "a b c"]) for _ in range(rnd.randint(1, 6))]
        rows = [[" ".join(rnd.choice(words) for _ in range(rnd.randint(0, 4))) for _ in columns]
                for _ in range(rnd.randint(1, 10))]
        found.append(Table("a title " * rnd.randint(1, 30), columns, rows))
    laid_out = 0
    for t in found:
        for width in (160, 60, 30):
            want, got = both(t, width)
            if got is not None:
                laid_out += 1
                assert got == want, (t.title, width)
    assert laid_out == 3 * len(found)
    # a cell rich would change (a tab, a line break, a control character): rich prints that table
    assert both(Table("t", ["a"], [["x\ty"]]), 80)[1] is None


def test_every_system_is_compared_with_the_reference_named(tmp_path, capsys):
    """The report's runs hold three systems (GlusterFS sr33 and vr33, CephFS): by default each
    is compared with the first shown; --reference names another, and a system the runs do
    not hold is refused naming those they do."""
    from harness.cli import main

    assert main(["compare", "report-2014", "--results", str(tmp_path)]) == 0
    assert "GlusterFS/sr33 vs CephFS" in capsys.readouterr().out
    assert main(["compare", "report-2014", "--results", str(tmp_path), "--reference", "cephfs"]) == 0
    out = capsys.readouterr().out
    assert "CephFS vs GlusterFS/sr33" in out and "GlusterFS/sr33 vs CephFS" not in out
    assert main(["compare", "report-2014", "--results", str(tmp_path), "--reference", "nfs/x"]) == 2
    err = capsys.readouterr().err
    assert "--reference nfs/x: no such system" in err and "cephfs, glusterfs/sr33, glusterfs/vr33" in err


def test_the_control_cannot_be_the_reference(quick_run, tmp_path):
    """The control is shown beside the systems, never half of a verdict: named as the
    reference it is refused, not quietly passed over."""
    from harness.errors import BadInput
    from harness.report.view import reference_of

    with pytest.raises(BadInput, match="that is the control") as err:
        reference_of("localdir", quick_run, Systems())
    assert "cephfs, glusterfs" in (err.value.hint or "") and "localdir" not in (err.value.hint or "")
    assert reference_of("cephfs", quick_run, Systems()) == ("cephfs", "default")


def test_each_system_gets_its_verdict_column_against_the_reference(quick_run):
    """Three systems in a table of one column per system: a verdict column for each of the
    others against the reference (the first two alone left the third without one)."""
    third = [replace(m, backend="blockdev", value=m.value * 2 if m.value else m.value)
             for m in quick_run if m.backend == "cephfs"]
    records = [m for m in quick_run if m.backend != "localdir"] + third  # (three: a column each)
    table = smallfile_table(records)
    names = ["GlusterFS", "CephFS", Systems().name(("blockdev", "default"))]
    assert table.columns[-2:] == [f"GlusterFS vs {names[1]}", f"GlusterFS vs {names[2]}"]
    cephfs_first = next(t for t in tables(records, Systems(reference=("cephfs", "default")))
                        if t.title.startswith("Small files"))
    assert cephfs_first.columns[-2:] == ["CephFS vs GlusterFS", f"CephFS vs {names[2]}"]
    # every row judges both pairs, and the verdicts kept for the answer name both
    assert all(len(row) == len(cephfs_first.columns) for row in cephfs_first.rows)
    assert {(v.a, v.b) for v in cephfs_first.verdicts} == {(("cephfs", "default"), ("glusterfs", "default")),
                                                           (("cephfs", "default"), ("blockdev", "default"))}


def test_a_table_of_a_system_per_line_names_the_reference_its_verdicts_are_against():
    """Two systems in a table of one line per system (fio's percentiles): the verdict column
    is headed by the reference — the first shown — whose own line has none, and the other's
    line has its verdict (a header naming the other system was a bug once)."""
    records = [Measurement("fio", "rr", f"lat_{p}", value * (1 + repeat / 50) * (3 if backend == "cephfs" else 1),
                           "s", {"job": "rr", "direction": "read"}, backend, "default", "r", repeat)
               for backend in ("glusterfs", "cephfs") for repeat in range(3)
               for p, value in (("p50", 1e-3), ("p90", 2e-3), ("p99", 3e-3), ("p99.9", 6e-3))]
    table = next(t for t in tables(records, Systems()) if t.title.startswith("fio total latency percentiles"))
    assert table.columns[2] == "system" and table.columns[-1] == "vs GlusterFS", table.columns
    lines = {row[2]: row[-1] for row in table.rows}
    assert lines["GlusterFS"] == "" and "GlusterFS" in lines["CephFS"] and "faster" in lines["CephFS"], lines


def test_every_time_of_a_table_is_said_in_one_unit(quick_run):
    """A time column showed '36.8 ms' beside '0'0.1"' (172 ms rounded down to 0.1 s): every
    time of a table is said in one unit, chosen for all its cells, with digits enough for
    its smallest; one whose times are all 0.1 s or more keeps the report's style."""
    import re

    from harness.units import column

    for table, unit in ((smallfile_table(quick_run), "ms"), (largefile_table(quick_run), "s")):
        times = [row[i] for row in table.rows for i, name in enumerate(table.columns) if name.endswith(" time")]
        assert len(times) == 18 if unit == "ms" else len(times) == 12
        assert all(re.fullmatch(r"[0-9,]+\.[0-9]+ " + unit, t) for t in times), times
    listing = smallfile_table(quick_run).rows[2:4]
    assert [row[0] for row in listing] == ["list (ls -l)", ""]
    assert [row[4] for row in listing] == ["78.1 ms", "225.8 ms"]  # (CephFS listing 1,024 files: not '0'0.2"')
    assert [column([0.0368, 0.172], "s")(v) for v in (0.0368, 0.172)] == ["36.8 ms", "172.0 ms"]
    assert [column([211e-6, 1.2], "s", "lat_p99")(v) for v in (211e-6, 1.2)] == ["0.21 ms", "1,200.00 ms"]
    assert [column([0.892, 331.654], "s")(v) for v in (0.892, 331.654)] == ["0'0.8\"", "5'31\""]


def test_a_missing_aggregate_of_one_figure_leaves_the_rows_other_verdicts_as_their_values_say():
    """The real container-lab run: in repeat 2, CephFS's clients never ran all at once in
    smallfile's create, so its stonewalled aggregates have no value [A]; its aggregate over
    the span has one, unflagged. The host=all row's verdict on that span figure is a verdict,
    not 'not comparable: no aggregate [A]' beside two unflagged values."""
    from tests.unit.builders import run_records

    records = [m for m in run_records(None) if m.workload == "smallfile"]
    table = next(t for t in tables(records) if t.title.startswith("Small files"))
    rows = [row for row in table.rows if row[1].endswith("host=all")]
    assert len(rows) == 3
    for row in rows:
        values, verdict = row[2:-1], row[-1]
        assert "no aggregate" not in verdict, row  # (no value beside it says [A])
        assert not any("A" in v.rsplit("[", 1)[-1] for v in values if v.endswith("]")), row
    assert rows[0][-1].startswith("no significant difference")  # (create: a verdict on the span figures)


def test_a_figure_that_is_zero_in_every_repeat_shows_no_share_of_it(quick_run):
    """A mean of 0 (an error rate of 0 % each time) has no relative interval or CV: none is
    printed, never 'nan'."""
    zeros = _repeats([replace(m, value=0.0) for m in quick_run if m.value is not None], [{}, {}, {}])
    table = smallfile_table(zeros)
    assert table.rows and not any("nan" in str(cell) for row in table.rows for cell in row)
