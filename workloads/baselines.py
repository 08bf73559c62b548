"""Baselines: what the hardware under a cluster can do, stored like any measurement so
later checks can compare the systems' numbers with them.

- ``rawdisk``: sequential 1 MiB O_DIRECT write and read (fio) on the storage that backs
  the OSDs and bricks — the ``backing`` directory a backend reports.
- ``iperf3``: the network between the client and the target's server (in the local
  lab that is loopback, and the record says so).
- ``ioping``: request latency on the target (O_DIRECT reads of 4 KiB), like ``ping``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field, PositiveInt

from harness.api.contracts import Bytes, Options, Workload
from harness.api.parsing import tool_parser
from harness.api.records import Measurement
from harness.api.tables import Column, TableSpec
from harness.api.target import Target
from harness.errors import BadInput, DfsbenchError
from harness.system import proc
from harness.system.hosts import LOCAL
from harness.units import size
from workloads.fio.json_output import parse as parse_fio


class RawDiskOptions(Options):
    size: Bytes = Field(description="bytes written then read (accepts 1GiB)")
    block_size: Bytes = Field(1 << 20, description="fio's block size (accepts 1MiB)")
    deadline_s: float = Field(900, gt=0, description="seconds the write or the read may take; past "
                              "it fio is killed and the cell recorded hung")



class RawDisk(Workload):
    name = "rawdisk"
    version_argv = ("fio", "--version")
    tools = (("fio", "fio"),)
    accepts = frozenset({"path", "block", "rbd", "rados"})
    baseline = "storage"
    tables = (TableSpec("Baseline: the raw storage under the cluster (fio, O_DIRECT)",
                        (Column("throughput", "rate"),), None),)
    Options = RawDiskOptions
    options: RawDiskOptions

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        return {"size": 1 << 30 if scale == "report" else 256 << 20}

    def supports(self, target: Target) -> bool:
        return target.backing is not None

    def cells(self) -> list[dict[str, Any]]:
        return [{"rw": rw, "size": self.options.size, "block_size": self.options.block_size}
                for rw in ("write", "read")]

    def unrunnable(self, kind: str) -> tuple[str, str, str] | None:
        o = self.options
        if o.block_size > o.size:  # (fio 3.33: 'size too small, must not be less than minimum block size')
            return "block_size", (f"{size(o.block_size)} is more than size ({size(o.size)}): fio refuses a job whose "
                                  "size is less than its block size"), f"give block_size at most {size(o.size)}"
        return None

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "deadline_s", self.options.deadline_s

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        target.host.require("fio", "fio")
        backing = target.backing
        assert backing is not None  # supports() said so
        path = backing / "dfsbench-rawdisk.data"
        job = raw_dir / f"rawdisk-{cell['rw']}.fio"
        job.write_text("\n".join([f"[rawdisk-{cell['rw']}]", f"filename={path}", f"rw={cell['rw']}",
                                  f"bs={cell['block_size']}", f"size={cell['size']}", "direct=1",
                                  "ioengine=libaio", "iodepth=16", "end_fsync=1"]) + "\n")
        out = raw_dir / f"rawdisk-{cell['rw']}.json"
        try:
            result = target.host.run_tool(["fio", "--output-format=json", str(target.host.put(job, scratch))],
                                   deadline=self.options.deadline_s, output=out)
        finally:
            if cell["rw"] == "read":
                path.unlink(missing_ok=True)
        if not result.ok:
            path.unlink(missing_ok=True)
            raise result.failure(hint=f"output kept in {out}")
        for m in parse_fio(result.output, source=str(out)):
            if m.metric == "throughput":
                yield Measurement("rawdisk", cell["rw"], "throughput", m.value, "B/s",
                                  {"size": cell["size"], "block_size": cell["block_size"],
                                   "path": str(backing), "direct": True},
                                  target.backend, target.variant)


class Iperf3Options(Options):
    seconds: PositiveInt = Field(5, le=3600, description="iperf3's -t: seconds of the measured transfer")
    deadline_s: float = Field(120, gt=0, description="seconds iperf3 may take; past it it is killed and the cell recorded hung")


class Iperf3(Workload):
    name = "iperf3"
    version_argv = ("iperf3", "--version")
    tools = (("iperf3", "iperf3"),)
    accepts = frozenset({"path", "block", "rbd", "rados"})
    baseline = "network"
    tables = (TableSpec("Baseline: the network from the client to the server (iperf3)",
                        (Column("throughput", "rate"),), None,
                        label=lambda m: (m.test, f"{m.params.get('direction')}"
                                                 + (" (loopback)" if m.params.get("loopback") else ""))),)
    Options = Iperf3Options
    options: Iperf3Options

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        return {"seconds": 10 if scale == "report" else 5}

    def supports(self, target: Target) -> bool:
        return bool(target.server_host)

    def cells(self) -> list[dict[str, Any]]:
        return [{"direction": d, "seconds": self.options.seconds} for d in ("to-server", "from-server")]

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        target.host.require("iperf3", "iperf3")
        host = str(target.server_host)
        loopback = host.startswith("127.")
        server_host = target.server or (LOCAL if loopback else None)
        if server_host is None:
            # the server side runs on the host that serves the storage; dfsbench only
            # starts it itself where it can (this host's loopback, a lab's storage node)
            raise DfsbenchError(f"iperf3 needs a server on {host}, where dfsbench cannot start one",
                                hint="start 'iperf3 -s' there, or leave the iperf3 workload out")
        address = host if server_host.local else server_host.address()
        port = proc.free_port(address) if server_host.local else 5201
        server_log = (raw_dir if server_host.local else scratch) / f"iperf3-server-{cell['direction']}.log"
        server = server_host.spawn(["iperf3", "-s", "-1", "--forceflush", "-B", address, "-p", str(port)],
                                   server_log)
        try:
            # not probed by connecting: the one-off server (-1) would take that as its test
            proc.wait_for(lambda: ("Server listening" in server.output(), "not listening yet"),
                          what=f"iperf3 server on {server_host.label} at {address}:{port}", timeout=15,
                          interval=0.1, alive=server.died)
            argv = ["iperf3", "-J", "-c", address, "-p", str(port), "-t", str(cell["seconds"])]
            if cell["direction"] == "from-server":
                argv.append("-R")
            out = raw_dir / f"iperf3-{cell['direction']}.json"
            result = target.host.run_tool(argv, deadline=cell["seconds"] + self.options.deadline_s, output=out)
            if not result.ok:
                raise result.failure(hint=f"output kept in {out}")
        finally:
            server.stop(2)
        bps = parse_iperf3(result.output, str(out))
        yield Measurement("iperf3", "network", "throughput", bps / 8, "B/s",
                          {"server": host if server_host.local else server_host.label,
                           "direction": cell["direction"], "seconds": cell["seconds"], "loopback": loopback},
                          target.backend, target.variant)


@tool_parser("iperf3")
def parse_iperf3(text: str, source: str = "iperf3 output") -> float:
    """Bits per second received, from ``iperf3 -J``."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{source} is not iperf3 JSON output ({exc})", hint="run iperf3 with -J") from None
    if doc.get("error"):
        raise DfsbenchError(f"iperf3: {doc['error']}")
    try:
        return float(doc["end"]["sum_received"]["bits_per_second"])
    except (KeyError, TypeError):
        raise BadInput(f"{source}: iperf3 JSON without end.sum_received") from None



class IopingOptions(Options):
    count: PositiveInt = Field(20, le=100000, description="ioping's -c: requests measured")
    interval_s: float = Field(0.1, ge=0, description="ioping's -i: seconds between requests")
    direct: bool = Field(True, description="ioping's -D: O_DIRECT, the page cache bypassed")
    deadline_s: float = Field(300, gt=0, description="seconds ioping may take; past it it is killed and the cell recorded hung")


class Ioping(Workload):
    name = "ioping"
    version_argv = ("ioping", "-v")
    tools = (("ioping", "ioping"),)
    accepts = frozenset({"path", "block"})
    baseline = "latency"
    tables = (TableSpec("Baseline: request latency (ioping, 4 KiB)",
                        (Column("lat_mean", "mean"), Column("lat_min", "min"), Column("lat_max", "max")),
                        "lat_mean"),)
    Options = IopingOptions
    options: IopingOptions

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        return {"count": 100 if scale == "report" else 20}

    def cells(self) -> list[dict[str, Any]]:
        return [{"count": self.options.count, "request_size": 4096}]

    def lasts(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        # (ioping waits interval_s between its requests: the least the cell takes)
        return "count", cell["count"] * self.options.interval_s

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "deadline_s", self.options.deadline_s

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        target.host.require("ioping", "ioping")
        where = target.directory if target.kind == "path" else Path(target.block.device)
        argv = ["ioping", "-J", "-c", str(cell["count"]), "-i", str(self.options.interval_s)]
        if self.options.direct:
            argv.append("-D")
        out = raw_dir / f"ioping-{uuid.uuid4().hex[:6]}.json"
        result = target.host.run_tool([*argv, str(where)], deadline=self.options.deadline_s, output=out)
        if not result.ok:
            raise result.failure(hint=f"output kept in {out}")
        for m in parse_ioping(result.output, str(out)):
            yield Measurement(m.workload, m.test, m.metric, m.value, m.unit,
                              {**m.params, "direct": self.options.direct},
                              target.backend, target.variant)


@tool_parser("ioping")
def parse_ioping(text: str, source: str = "ioping output") -> list[Measurement]:
    """``ioping -J``: a list of per-request objects, then one with the summary ``stat``
    (times in nanoseconds)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{source} is not ioping JSON output ({exc})", hint="run ioping with -J") from None
    stats = [d["stat"] for d in doc if isinstance(d, dict) and "stat" in d] if isinstance(doc, list) else []
    if not stats:
        raise BadInput(f"{source}: ioping JSON without a summary 'stat'")
    st = stats[-1]
    params = {"requests": st["count"], "request_size": st["size"] // max(st["count"], 1)}
    out = [Measurement("ioping", "latency", metric, st[key] / 1e9, "s", params)
           for metric, key in (("lat_mean", "avg"), ("lat_min", "min"), ("lat_max", "max"))]
    out.append(Measurement("ioping", "latency", "iops", float(st["iops"]), "op/s", params))
    return out
