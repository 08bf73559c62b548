"""Benchmark: a run as a bundle — `dfsbench export`, `verify` and `import` of one run of N
stored measurements, N/10 cells and N/100 raw outputs, for each N given (default 10,000 and
100,000; the raw outputs are the real tool outputs of tests/data/tools, in turn). The
store's records are filled as bench/compare_speed.py fills them (the records of a real quick
run, each copy a tool run of its own). Target: verify <= 30 s at 100,000 measurements — verify
writes the run to a temporary store and builds its tables, JSON, CSV and HTML report, so it
is bound to take longer than `compare` — and the bundle no larger than the store it came
from.

Each command runs 3 times; printed are the median wall time, the spread (min-max), the CPU
time, the bundle's size beside the run's in the store (its database and its raw outputs'
directory), what export says it wrote, and the machine's load (``os.getloadavg``) before
and after.

    .venv/bin/python bench/bundle_speed.py [N ...] [--keep DIR]
"""

from __future__ import annotations

import hashlib
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from compare_speed import RUN_ID, fill, load, timed
from options import keep_dir

from harness.results.schema import DB_NAME
from harness.results.store import Store
from harness.units import size

TOOLS = Path(__file__).resolve().parents[1] / "tests" / "data" / "tools"
TARGET = 30.0  # seconds, verify at 100,000 measurements


def raw_outputs(root: Path, n: int) -> None:
    """The run's raw outputs: one real tool output per 100 measurements, each in a cell's
    directory of its own, as a run stores them."""
    outputs = sorted(p for p in TOOLS.iterdir() if p.is_file())
    for i in range(max(1, n // 100)):
        source = outputs[i % len(outputs)]
        at = root / "raw" / RUN_ID / f"cell-{i:05d}-r0" / "tool"
        at.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, at / source.name)


def cells(root: Path, n: int) -> None:
    """One cell's outcome per 10 measurements, as a run stores them."""
    store = Store(root)
    try:
        with store.transaction():
            for i in range(max(1, n // 10)):
                store.cell_ended(RUN_ID, f"cell-{i:06d}", "ok")
    finally:
        store.close()


def has_cells(root: Path) -> bool:
    store = Store(root)
    try:
        return bool(store.cell_rows(RUN_ID))
    finally:
        store.close()


def run_bytes(root: Path) -> int:
    """The run's share of the store: its database, and its raw outputs' directory."""
    raw = root / "raw" / RUN_ID
    return (root / DB_NAME).stat().st_size + sum(p.stat().st_size for p in raw.rglob("*") if p.is_file())


def main() -> int:
    args = sys.argv[1:]
    keep = keep_dir(args)
    counts = [int(a) for a in args] or [10_000, 100_000]
    status = 0
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp:
        for n in counts:
            root = (keep or Path(tmp)) / f"n{n}"
            if not (root / DB_NAME).exists():
                fill(root, n)
            if not has_cells(root):  # (nor cells)
                cells(root, n)
            if not (root / "raw" / RUN_ID).is_dir():  # (a store --keep kept from bench/compare_speed has none)
                raw_outputs(root, n)
            bundle = Path(tmp) / f"n{n}.tar.gz"
            cli = [sys.executable, "-m", "harness.cli"]
            medians = {}
            for name, argv in (("export", [*cli, "export", RUN_ID, "-o", str(bundle), "--results", str(root)]),
                               ("verify", [*cli, "verify", str(bundle)]),
                               ("import", [*cli, "import", str(bundle), "--results", f"{tmp}/imported-{n}"])):
                before = load()
                if name == "import":  # (each import into a fresh store: a run already there is refused)
                    times, cpus = [], []
                    for i in range(3):
                        t, c = timed([*argv[:-1], f"{tmp}/imported-{n}-{i}"], runs=1)
                        times += t
                        cpus += c
                else:
                    times, cpus = timed(argv)
                if name == "export":
                    said = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.splitlines()[0]
                    print(f"export says: {said}", flush=True)
                medians[name] = median = statistics.median(times)
                line = (f"{name} of {n:,} measurements: median {median:.2f} s, spread {min(times):.2f}-"
                        f"{max(times):.2f} s ({', '.join(f'{t:.2f}' for t in times)}); CPU median "
                        f"{statistics.median(cpus):.2f} s; load {before} -> {load()}")
                if name == "verify" and n >= 100_000:
                    met = median <= TARGET
                    status |= 0 if met else 1
                    line += f"; target <= {TARGET:.0f} s: {'met' if met else 'NOT met'}"
                print(line, flush=True)
            kept = run_bytes(root)
            made = bundle.stat().st_size
            status |= 0 if made <= kept else 1
            print(f"bundle of {n:,} measurements: {size(made)} ({made:,} bytes), the store's run "
                  f"{size(kept)} ({kept:,} bytes): {made / kept:.2f}x; sha256 "
                  f"{hashlib.sha256(bundle.read_bytes()).hexdigest()[:16]}…", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
