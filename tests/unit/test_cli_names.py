"""Names on the command line are names, and nothing stored reaches the terminal raw."""

from pathlib import Path

import pytest
from tests.unit.inproc import dfsbench

FIO = Path(__file__).parent.parent / "data" / "tools" / "fio-json.json"




@pytest.mark.parametrize("option, value, says", [
    ("--backends", "", "names nothing"), ("--backends", ",", "names nothing"),
    ("--backends", " , ", "names nothing"), ("--workloads", "", "names nothing"),
    ("--backends", "cephfs,,glusterfs", "empty name"), ("--backends", "../x", "is not a name"),
    ("--workloads", "fio\nrw=write", "is not a name"),
])
def test_an_empty_or_odd_list_of_names_is_refused_not_read_as_the_default(tmp_path, option, value, says):
    got = dfsbench("run", option, value, "--results", str(tmp_path / "r"))
    assert got.returncode == 2 and says in got.stderr, got.stderr
    assert "\nrw=write" not in got.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("option, value", [("--backend", "../../etc"), ("--backend", "a/b"),
                                           ("--variant", ".."), ("--variant", "x\x1b[2J")])
def test_import_takes_only_names(tmp_path, option, value):
    args = {"--backend": "cephfs", "--variant": "default", option: value}
    got = dfsbench("import", "fio", str(FIO), *[x for kv in args.items() for x in kv],
                   "--results", str(tmp_path / "r"))
    assert got.returncode == 2 and "is not a name" in got.stderr and "\x1b" not in got.stderr, got.stderr


@pytest.mark.parametrize("command", ["import", "run"])
@pytest.mark.parametrize("label", ["x\u202eabc\x1b[31m", "line\nbreak", "ok\x9b31m", "\u2067isolate"])
def test_a_label_from_the_command_line_is_one_line_of_printable_text(tmp_path, command, label):
    args = ["fio", str(FIO), "--backend", "cephfs"] if command == "import" else ["--backends", "localdir"]
    got = dfsbench(command, *args, "--label", label, "--results", str(tmp_path / "r"))
    assert got.returncode == 2 and "--label: " in got.stderr and "holds a control character" in got.stderr
    assert not any(c in got.stderr for c in "\x1b\x9b\u202e\u2067"), got.stderr
    assert not (tmp_path / "r").exists()


def test_a_stored_label_with_escape_sequences_reaches_the_terminal_escaped(tmp_path):
    import sqlite3

    done = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--label", "ok",
                    "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "r" / "dfsbench.sqlite") as db:  # (a store someone else wrote)
        db.execute("UPDATE runs SET label = ?", ("ok\x1b]0;pwned\x07\x1b[2J\x9b31m",))
    for fmt in ("table", "markdown", "csv"):
        shown = dfsbench("compare", "latest", "--results", str(tmp_path / "r"), "--format", fmt)
        assert shown.returncode == 0, shown.stderr
        assert not any(c in shown.stdout for c in "\x1b\x07\x9b"), fmt
    assert "\\x1b]0;pwned" in dfsbench("compare", "latest", "--results", str(tmp_path / "r")).stdout


@pytest.mark.parametrize("kind", ["fifo", "dir", "devnull"])
def test_a_report_output_that_is_not_a_file_is_refused_at_once(tmp_path, kind):
    done = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out.html"
    if kind == "fifo":
        import os
        os.mkfifo(out)
    elif kind == "dir":
        out.mkdir()
    else:
        out.symlink_to("/dev/null")
    got = dfsbench("report", "latest", "--results", str(tmp_path / "r"), "-o", str(out))
    said = "is a link through /dev/null" if kind == "devnull" else "is not a regular file"
    assert got.returncode == 2 and said in got.stderr, got.stderr


def test_a_report_replaces_a_longer_file_whole(tmp_path):
    done = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out.html"
    out.write_text("x" * 50_000_000)
    got = dfsbench("report", "latest", "--results", str(tmp_path / "r"), "-o", str(out))
    assert got.returncode == 0, got.stderr
    assert out.read_text().rstrip().endswith("</html>")
