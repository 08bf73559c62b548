"""Benchmark: the small-file engine's create rate against fs_mark's on tmpfs.

tmpfs has no device under it, so both measure only their own cost per file: the engine
must reach at least half of `fs_mark -S 0` (no fsync) with the same file count, file size
and thread count, so that it is never the bottleneck on a real file system. Runs N
alternating pairs (default 5) and prints each rate, the medians and their ratio.

    .venv/bin/python bench/smallfile_vs_fsmark.py [N] [--files 4096] [--threads 4] [--size 40960]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from workloads.engines import smallfile


def fs_mark(top: Path, files: int, size: int, threads: int) -> float:
    out = subprocess.run(["fs_mark", "-d", str(top), "-n", str(files // threads), "-s", str(size),
                          "-t", str(threads), "-S", "0", "-L", "1", "-k"],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s*\d+\s+\d+\s+\d+\s+[\d.]+", line)]
    return float(rows[-1][3])


def engine(top: Path, files: int, size: int, threads: int) -> float:
    per_thread = [files // threads] * threads
    result = smallfile("create", str(top), per_thread, size)
    return result["files"] / result["elapsed"]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("pairs", nargs="?", type=int, default=5)
    p.add_argument("--files", type=int, default=4096)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--size", type=int, default=40960)
    a = p.parse_args()
    if shutil.which("fs_mark") is None:
        print("fs_mark is not installed (Debian package 'fsmark')", file=sys.stderr)
        return 1
    ours, theirs = [], []
    with tempfile.TemporaryDirectory(prefix="dfsbench-bench-") as tmp:
        mnt = Path(tmp)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", str(mnt)], check=True)
        try:
            for i in range(a.pairs):
                order = [("engine", engine), ("fs_mark", fs_mark)]
                if i % 2:
                    order.reverse()
                for name, fn in order:
                    top = mnt / f"{name}-{i}"
                    top.mkdir()
                    rate = fn(top, a.files, a.size, a.threads)
                    (ours if name == "engine" else theirs).append(rate)
                    shutil.rmtree(top)
                print(f"pair {i + 1}: engine {ours[-1]:,.0f} files/s, fs_mark {theirs[-1]:,.0f} files/s")
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"{a.files} files × {a.size} bytes, {a.threads} threads, tmpfs: engine median "
          f"{statistics.median(ours):,.0f} files/s, fs_mark -S 0 median {statistics.median(theirs):,.0f} "
          f"files/s; ratio {ratio:.2f} (target >= 0.50)")
    return 0 if ratio >= 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
