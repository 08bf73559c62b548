"""The core's rooms stay small enough for a newcomer to hold in their head (issue 45, 5):
no file of harness/ is over :data:`MOST` lines."""

from __future__ import annotations

from pathlib import Path

MOST = 600
HARNESS = Path(__file__).resolve().parents[2] / "harness"
# files over the bound that another change is splitting now, each with what it is waiting for;
# the test below fails as soon as one of them is within the bound again, so none stays here
WAITING = {"api/contracts.py": "the storage system's contract (issue 45, 1) is being split into required and "
                               "optional parts by that change"}


def _lengths() -> dict[str, int]:
    return {path.relative_to(HARNESS).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for path in sorted(HARNESS.rglob("*.py"))}


def test_no_file_of_harness_is_over_600_lines() -> None:
    over = {path: n for path, n in _lengths().items() if n > MOST and path not in WAITING}
    assert not over, "files of harness/ over {} lines (split each along a seam a reader can hold): {}".format(
        MOST, "; ".join(f"harness/{path}: {n} lines" for path, n in over.items()))


def test_a_file_waiting_for_its_split_is_still_over_the_bound() -> None:
    lengths = _lengths()
    done = [path for path in WAITING if lengths.get(path, 0) <= MOST]
    assert not done, f"{', '.join(done)} no longer needs its place in WAITING: take it out"


def test_the_walk_sees_the_files_of_harness() -> None:
    lengths = _lengths()
    assert "cli.py" in lengths and "results/store.py" in lengths and all(n > 0 for n in lengths.values())
