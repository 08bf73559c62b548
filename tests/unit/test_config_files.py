"""Files that are not configs (a FIFO, a device, a directory, 50 MB of comments, binary
bytes, other encodings, YAML that nests or expands without end, a key said twice, a plain
``1:30``): ``dfsbench check`` exits 2 with the error and its hint, at once, and never a
traceback or a hang. Each case runs in a process of its own with a time limit, so a
regression fails instead of hanging the suite. Also for the other files a config or a
command names: ``file:`` secrets, fio job files, tool outputs to parse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.commands.tools import parsed as _parsed
from harness.errors import BadInput
from harness.execution.loader import load_yaml
from harness.system import files, secret
from tests.helpers import dfsbench

VALID = "scale: quick\nbackends: [glusterfs]\nworkloads: [{name: largefile, options: {sizes: [16MiB]}}]\n"


def fifo(p: Path) -> None:
    os.mkfifo(p)


def zero(p: Path) -> None:
    p.symlink_to("/dev/zero")


def directory(p: Path) -> None:
    p.mkdir()


def comments(p: Path) -> None:
    p.write_text("# nothing but comments\n" * 2_300_000)  # 50 MB


def binary(p: Path) -> None:
    p.write_bytes(bytes(range(256)) * 40)


def latin1(p: Path) -> None:
    p.write_bytes(("# café\n" + VALID).encode("latin-1"))


def utf16(p: Path) -> None:
    p.write_bytes(VALID.encode("utf-16"))


def bom(p: Path) -> None:
    p.write_bytes(b"\xef\xbb\xbf" + VALID.encode())


def deep(p: Path) -> None:
    p.write_text("scale: " + "[" * 20_000 + "]" * 20_000 + "\n")


def laughs(p: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    p.write_text("\n".join(lines) + "\n")


def merges(p: Path) -> None:
    """Merge keys nested in each other: each level doubles what the one below holds."""
    lines = ["b0: &b0 {k0: 1, k1: 2}"]
    lines += [f"b{i}: &b{i} {{<<: [*b{i - 1}], m: {{<<: *b{i - 1}}}, n: {{<<: *b{i - 1}}}}}" for i in range(1, 40)]
    p.write_text("\n".join(lines) + "\n")


def itself(p: Path) -> None:
    p.write_text("backends: &a [glusterfs, *a]\n")


def twice(p: Path) -> None:
    p.write_text(VALID + "scale: full\n")


def base60(p: Path) -> None:
    p.write_text("backends: [glusterfs]\nworkloads: [{name: largefile, options: {sizes: [1:30]}}]\n")


def long_name(p: Path) -> None:
    pass  # (the path itself is the case: see below)


CASES = {  # what each is refused as, in the error's first line
    fifo: "is a FIFO", zero: "is a character device", directory: "is a directory",
    comments: "larger than 128 KiB", binary: "binary data", latin1: "not UTF-8 text: byte 0xe9 on line 1",
    utf16: "UTF-16", bom: "byte-order mark", deep: "more than 64 deep", laughs: "more than 100,000 values",
    merges: "more than 100,000 values", itself: "refers to itself", twice: "'scale' is given twice",
    base60: "1:30 is read by YAML as a number in base 60", long_name: "a path longer than Linux allows",
}


ROOT = Path(__file__).parents[2]  # (each command runs from the repository's top)


@pytest.mark.parametrize("make", list(CASES), ids=[m.__name__ for m in CASES])
def test_a_file_that_is_not_a_config_is_exit_2_in_one_error(tmp_path, make):
    path = tmp_path / ("x" * 300 if make is long_name else "config.yaml")
    make(path)
    done = dfsbench("check", str(path), timeout=60, cwd=ROOT)
    assert done.returncode == 2, done.stderr[-2000:]
    first, *rest = done.stderr.splitlines()
    assert first.startswith("dfsbench: error: ") and CASES[make] in first, done.stderr
    assert all(line.startswith("  hint: ") for line in rest), done.stderr  # no traceback
    assert done.stdout == ""


def test_a_plain_valid_config_still_loads(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(VALID + "labels: &l {a: 1}\nother: {<<: *l, b: 2}\nwhen: '1:30'\n")
    data = load_yaml(path)
    assert data["other"] == {"a": 1, "b": 2} and data["when"] == "1:30"


def loads_or_is_bad_input(path: Path) -> None:
    try:
        assert isinstance(load_yaml(path), dict)
    except BadInput:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(min_size=1, max_size=400))
def test_any_bytes_load_or_are_bad_input(tmp_path, data):
    """Whatever the bytes, the loader returns a mapping or refuses them as bad input."""
    path = tmp_path / "any.yaml"
    path.write_bytes(data)
    loads_or_is_bad_input(path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list("ab01-_:!&*<>{}[],.#'\"|%@ \n\t\x1b0x2024-02-30~?")), max_size=60))
def test_any_text_loads_or_is_bad_input(tmp_path, text):
    """Text that YAML parses but cannot build (a 30th of February, '0x_', '!!int abc') is
    bad input too, never a traceback."""
    path = tmp_path / "any.yaml"
    path.write_text(text)
    loads_or_is_bad_input(path)


@pytest.mark.parametrize("text", ["when: 2024-02-30\n", "repeat: 0x_\n", "x: !!int abc\n", "x: !!timestamp nope\n",
                                  "x: 0b_\n", "x: " + "9" * 5000 + "\n"])
def test_a_value_yaml_cannot_build_is_bad_input(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(BadInput, match="a value YAML cannot read"):
        load_yaml(path)


def test_a_job_file_that_is_a_fifo_is_refused_by_the_config(tmp_path):
    os.mkfifo(tmp_path / "job.fio")
    config = tmp_path / "c.yaml"
    config.write_text(f"workloads: [{{name: fio, options: {{job_file: {tmp_path / 'job.fio'}}}}}]\n")
    done = dfsbench("check", str(config), timeout=60, cwd=ROOT)
    assert done.returncode == 2 and "job_file" in done.stderr and "is a FIFO" in done.stderr, done.stderr


def test_a_path_with_control_characters_is_shown_escaped(tmp_path):
    path = tmp_path / "a\x1b[31m\nb.yaml"
    done = dfsbench("check", str(path), timeout=60, cwd=ROOT)
    assert done.returncode == 2 and "\x1b" not in done.stderr and "\\x1b" in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_a_secret_file_is_refused_without_its_bytes(tmp_path):
    (tmp_path / "key").write_bytes(b"AQB\xe9secret")
    with pytest.raises(ValueError) as refused:
        secret.expand(f"file:{tmp_path / 'key'}")
    assert "not UTF-8" in str(refused.value) and "0xe9" not in str(refused.value)


@pytest.mark.parametrize("make", [fifo, zero, directory, comments, binary])
def test_a_secret_file_that_is_not_a_small_text_file_is_refused_at_once(tmp_path, make):
    path = tmp_path / "key"
    make(path)
    with pytest.raises(ValueError, match=str(path)):
        secret.expand(f"file:{path}")


def test_a_tool_output_that_is_a_fifo_is_refused_and_a_bom_is_read(tmp_path):
    os.mkfifo(tmp_path / "out")
    with pytest.raises(BadInput, match="is a FIFO"):
        files.read_bytes(tmp_path / "out", "fio output", 1 << 20)
    job = tmp_path / "job.fio"
    os.mkfifo(job)
    done = dfsbench("parse", "fio", str(job), timeout=60, cwd=ROOT)
    assert done.returncode == 2 and "is a FIFO" in done.stderr, done.stderr
    plain = (Path(__file__).parents[1] / "data" / "tools" / "fio-json.json").read_bytes()
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + plain)
    (tmp_path / "plain.json").write_bytes(plain)
    records = _parsed("fio", tmp_path / "bom.json")[0]
    assert records and [m.value for m in records] == [m.value for m in _parsed("fio", tmp_path / "plain.json")[0]]
