"""What the fresh-clone benchmarks (make_test.py, demo_time.py) share: the commit they
measure, said before anything is timed, and a clone of it."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def say_what_is_measured() -> None:
    """The commit a clone gets; a working tree with uncommitted changes is not measured."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    print(f"measuring a clone of HEAD: {git('log', '-1', '--format=%h %s')}")
    if git("status", "--porcelain", "--untracked-files=no"):
        print("  (the working tree has changes that are not committed: they are not measured)")


def clone(into: Path) -> Path:
    """A fresh clone of HEAD in ``into``."""
    where = into / "dfsbench"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(where)], check=True)
    return where
