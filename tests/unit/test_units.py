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
