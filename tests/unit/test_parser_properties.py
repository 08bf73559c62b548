"""Every parser against generated, truncated and corrupted inputs (hypothesis): the only
failure allowed is a DfsbenchError that names the file; never a traceback, a hang, or a
silently absurd number (negative, NaN, infinite, or faster than any storage)."""

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.api import registry
from harness.commands import tools
from harness.errors import DfsbenchError

TOOLS = Path(__file__).parent.parent / "data" / "tools"
SOURCE = "suspect-output.txt"
CASES = 1000
# nothing a client measures is beyond these (1 PiB/s, a billion operations or files a
# second, a year): a value above one is a parse that went wrong
CEILING = {"B/s": 2.0**50, "op/s": 1e9, "files/s": 1e9, "s": 3.2e7, "B": 2.0**60, "%": 1e5}

FIXTURES = {
    "iozone": ["iozone-all-tests.txt", "iozone-cached.txt", "iozone-direct.txt"],
    "fio": ["fio-json.json", "fio-jsonplus.json", "fio-clientserver.json", "fio-rbd.json",
            "fio-jsonplus-mixed.json"],
    "rados-bench": ["rados-write.txt", "rados-seq.txt", "rados-rand.txt"],
    "rbd-bench": ["rbd-bench-write.txt", "rbd-bench-read.txt"],
    "smallfile": ["smallfile-cephfs-create.json", "smallfile-gluster-read.json"],
    "warp": ["../warp/warp-put-1MB-1m.json.zst", "../warp/warp-get-4KB-1m.json.zst"],
}
NASTY = ["-1", "-0", "nan", "NaN", "inf", "-inf", "1e309", "99999999999999999999999", "0", "",
         "1e-320", "０", "\x00", "9" * 400, "-99999999999", "{", "}", "[", "]", '"', ":", ","]


def fixture(name: str) -> str:
    """A real output as its tool wrote it (warp's zstd-compressed JSON decompressed)."""
    return tools.unpacked((TOOLS / name).read_bytes(), TOOLS / name, "a tool").decode()


def check(tool: str, text: str) -> None:
    parser = registry.parser(tool)
    try:
        records = parser.parse(text, SOURCE)
    except DfsbenchError as exc:
        assert SOURCE in exc.message, f"the error does not name the file: {exc.message!r}"
        return
    for m in records:
        if m.value is None:
            continue
        assert isinstance(m.value, (int, float)), m
        assert math.isfinite(m.value), m
        assert m.value >= 0, m
        assert m.value <= CEILING.get(m.unit, 1e18), m


@st.composite
def corrupted(draw, tool: str):
    """A real output of the tool, cut, with lines dropped, doubled or swapped, and
    numbers (or characters) replaced by nasty ones."""
    text = fixture(draw(st.sampled_from(FIXTURES[tool])))
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "double", "swap", "number", "chars"]))
        if action == "drop":
            del lines[i]
        elif action == "double":
            lines.insert(i, lines[i])
        elif action == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif action == "number":
            import re

            numbers = list(re.finditer(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", lines[i]))
            if numbers:
                n = draw(st.sampled_from(numbers))
                lines[i] = lines[i][:n.start()] + draw(st.sampled_from(NASTY)) + lines[i][n.end():]
        else:
            k = draw(st.integers(0, max(0, len(lines[i]) - 1)))
            lines[i] = lines[i][:k] + draw(st.text(max_size=8)) + lines[i][k + 1:]
    text = "".join(lines)
    if draw(st.booleans()):
        text = text[:draw(st.integers(0, len(text)))]
    return text


PROPERTY = settings(max_examples=CASES, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("tool", sorted(FIXTURES))
def test_corrupted_real_outputs_parse_or_fail_cleanly(tool):
    @PROPERTY
    @given(corrupted(tool))
    def run(text: str) -> None:
        check(tool, text)

    run()


@pytest.mark.parametrize("tool", sorted(FIXTURES))
def test_arbitrary_text_parses_or_fails_cleanly(tool):
    @PROPERTY
    @given(st.text(max_size=2000))
    def run(text: str) -> None:
        check(tool, text)

    run()
