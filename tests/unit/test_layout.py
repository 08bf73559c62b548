"""The core's rooms stay small enough for a newcomer to hold in their head (issue 45, 5):
no file of harness/ is over :data:`MOST` lines."""

from __future__ import annotations

from pathlib import Path

MOST = 600
HARNESS = Path(__file__).resolve().parents[2] / "harness"


def _lengths() -> dict[str, int]:
    return {path.relative_to(HARNESS).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for path in sorted(HARNESS.rglob("*.py"))}


def test_no_file_of_harness_is_over_600_lines() -> None:
    over = {path: n for path, n in _lengths().items() if n > MOST}
    assert not over, "files of harness/ over {} lines (split each along a seam a reader can hold): {}".format(
        MOST, "; ".join(f"harness/{path}: {n} lines" for path, n in over.items()))


def test_the_walk_sees_the_files_of_harness() -> None:
    lengths = _lengths()
    assert "cli.py" in lengths and "results/store.py" in lengths and all(n > 0 for n in lengths.values())
