from dataclasses import replace

from harness.compare import largefile_table, smallfile_table, verdict
from harness.render import csv_text, markdown


def test_verdict_respects_direction():
    assert verdict(27.957, 8.158, "s", "GlusterFS", "Ceph") == "Ceph 3.4× faster"
    assert verdict(100.0, 50.0, "B/s", "GlusterFS", "Ceph") == "GlusterFS 2.0× faster"
    assert verdict(1.0, 1.02, "s", "A", "B").startswith("about the same")
    assert verdict(None, 1.0, "s", "A", "B") == "—"


def test_smallfile_table_from_a_real_run(quick_run):
    table = smallfile_table(quick_run)
    assert table is not None
    assert table.columns[:4] == ["mode", "files", "GlusterFS time", "GlusterFS rate"]
    assert table.columns[-1] == "GlusterFS vs CephFS"
    modes = [row[0] for row in table.rows if row[0]]
    assert modes == ["write", "list (ls -l)", "read"]
    assert len(table.rows) == 6  # 3 modes × (256, 1024) files
    assert all(row[-1].endswith("faster") or row[-1].startswith("about") for row in table.rows)


def test_largefile_table_from_a_real_run(quick_run):
    table = largefile_table(quick_run)
    assert table is not None
    assert [row[1] for row in table.rows] == ["256 MiB", "64 MiB", "256 MiB", "64 MiB"]
    assert "MiB/s" in table.rows[0][3]


def test_median_over_repeats_and_flags_are_explained(quick_run):
    again = [replace(m, repeat=1, value=m.value * 3 if m.value else m.value) for m in quick_run]
    third = [replace(m, repeat=2, flags=("no-cache-drop",)) for m in quick_run]
    table = largefile_table(quick_run + again + third)
    assert "[no-cache-drop]" in table.rows[0][2]
    assert any(note.startswith("[no-cache-drop]") for note in table.notes)


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
