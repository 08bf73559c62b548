import pytest

from harness.units import duration, parse_size, rate, size


@pytest.mark.parametrize("text,expected", [
    ("40KiB", 40960), ("40 KiB", 40960), ("1G", 1 << 30), ("256MiB", 256 << 20),
    ("210MB", 210_000_000), ("4096", 4096), ("2.5GiB", int(2.5 * (1 << 30))),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


def test_parse_size_rejects_garbage():
    with pytest.raises(ValueError):
        parse_size("big")


def test_report_style_durations():
    # the 2014 report's own cells: 5'31", 2'27", 0'34", 0'5", 0'0.8"
    assert duration(331.654) == "5'31\""
    assert duration(147.543) == "2'27\""
    assert duration(128.483) == "2'8\""
    assert duration(34.378) == "0'34\""
    assert duration(5.543) == "0'5.5\""
    assert duration(0.892) == "0'0.8\""
    assert duration(0.0124) == "12.4 ms"


def test_rates_and_sizes_are_binary():
    assert rate(128 * (1 << 20)) == "128.0 MiB/s"
    assert size(40 * 1024) == "40 KiB"
    assert size(2560 << 20) == "2.5 GiB"


def test_largefile_source_has_no_two_equal_4k_blocks(tmp_path):
    """The source is said to defeat dedup: every 4 KiB block must be distinct (issue: a
    64 MiB file had 319 unique blocks of 16,384)."""
    import hashlib

    from workloads.engines import source

    path = tmp_path / "src"
    source(str(path), 64 << 20)
    data = path.read_bytes()
    blocks = {hashlib.blake2b(data[i:i + 4096], digest_size=16).digest() for i in range(0, len(data), 4096)}
    assert len(blocks) == len(data) // 4096 == 16384


def test_progress_lines_do_not_wrap_in_a_narrow_log():
    import io

    from harness.execution.progress import Progress

    out = io.StringIO()
    p = Progress(stream=out)
    p.console.width = 80
    note = "iozone mode=direct file_size=32 MiB on glusterfs/default (repeat 2/3) " * 2
    p.note(note)
    assert len(out.getvalue().splitlines()) == 1


def test_a_column_of_rates_is_said_in_one_unit():
    from harness.units import column

    said = column([0.9 * (1 << 20), 118.2 * (1 << 20), None], "B/s")
    assert [said(v) for v in (0.9 * (1 << 20), 118.2 * (1 << 20), None)] == ["0.90 MiB/s", "118.20 MiB/s", "—"]
    # (one cached value does not turn the column's MiB/s into GiB/s: the unit is its median's)
    said = column([36.7 * (1 << 20), 26.3 * (1 << 20), 5 * (1 << 30)], "B/s")
    assert [said(36.7 * (1 << 20)), said(5 * (1 << 30))] == ["36.7 MiB/s", "5,120.0 MiB/s"]
    # (over RATE_SPAN times apart, a stalled pass's 1 KiB/s beside a read's 1.1 GiB/s: each its own)
    said = column([1024, 1.1 * (1 << 30)], "B/s")
    assert [said(1024), said(1.1 * (1 << 30))] == ["1.0 KiB/s", "1.1 GiB/s"]
