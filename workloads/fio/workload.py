"""Workload ``fio``: named profile sets from the seed documents, or a user's job file as-is,
on a file in a mount, on a block device, or straight on an RBD image (``ioengine=rbd``).

Profile sets:

- ``seed000`` (default): the eight profiles of the Ceph test notes §2.5 — 4k randwrite and
  randread at queue depth 128, 1M write and read at depth 64, and 4k randwrite, randread,
  write, read at depth 1.
- ``seed002``: the cloud vendor's standard single-queue (depth 1: 4k randwrite, randread,
  randrw) and multi-queue (depth 32: the same plus 1M write, read, rw) profiles.

Output is fio's ``json+``, parsed into one record per job, direction and metric. With
``servers``, fio runs in client/server mode: every server runs the job, and records come
per host plus the aggregate (host ``all``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

from backends.ceph.client import CephAccess
from harness.api.contracts import JOB_SYNTAX, NAME_PATTERN, Bytes, Name, Options, Workload, host_address, host_key
from harness.api.model import ConfigModel, twice
from harness.api.records import ALL_CLIENTS, TOOL_TOTAL, Measurement
from harness.api.series import Series
from harness.api.tables import Column, TableSpec
from harness.api.target import Target
from harness.errors import BadInput, DfsbenchError
from harness.system import files, proc
from harness.system.hosts import LOCAL, Host
from workloads.fio.json_output import interval_latencies, parse, timed
from workloads.fio.servers import FioServers


class Profile(ConfigModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    name: Name
    rw: Literal["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim",
                "randtrim"]
    bs: Bytes
    iodepth: PositiveInt = 1
    numjobs: PositiveInt = 1
    rwmixread: int | None = Field(None, ge=0, le=100)


# the named profile sets: (name, rw, bs, iodepth) of each profile; made Profiles when used
PROFILE_SETS: dict[str, tuple[tuple[str, str, str, int], ...]] = {
    "seed000": (
        ("randwrite-4k-qd128", "randwrite", "4k", 128),
        ("randread-4k-qd128", "randread", "4k", 128),
        ("write-1m-qd64", "write", "1m", 64),
        ("read-1m-qd64", "read", "1m", 64),
        ("randwrite-4k-qd1", "randwrite", "4k", 1),
        ("randread-4k-qd1", "randread", "4k", 1),
        ("write-4k-qd1", "write", "4k", 1),
        ("read-4k-qd1", "read", "4k", 1),
    ),
    "seed002": (
        ("sq-randwrite-4k", "randwrite", "4k", 1),
        ("sq-randread-4k", "randread", "4k", 1),
        ("sq-randrw-4k", "randrw", "4k", 1),
        ("mq-randwrite-4k", "randwrite", "4k", 32),
        ("mq-randread-4k", "randread", "4k", 32),
        ("mq-randrw-4k", "randrw", "4k", 32),
        ("mq-write-1m", "write", "1m", 32),
        ("mq-read-1m", "read", "1m", 32),
        ("mq-rw-1m", "rw", "1m", 32),
    ),
}


def profile_set(name: str) -> list[Profile]:
    return [Profile.model_validate({"name": n, "rw": rw, "bs": bs, "iodepth": depth})
            for n, rw, bs, depth in PROFILE_SETS[name]]


class FioOptions(Options):
    profiles: str | list[Profile] = Field("seed000", description="a named set (seed000, seed002) "
                                          "or a list of {name, rw, bs, iodepth, numjobs, rwmixread}")
    job_file: Path | None = Field(None, description="a .fio job file run as-is instead of profiles; "
                                  "its filename/directory lines are kept")
    size: Bytes = Field(description="bytes each job works on (accepts 1GiB)")
    runtime_s: PositiveInt = Field(description="seconds per profile (time_based)")
    # the engines that do I/O to a file or a device (not null, which measures no storage, nor
    # exec or external, which run or load code)
    ioengine: Literal["libaio", "io_uring", "psync", "sync", "pvsync", "pvsync2", "posixaio", "mmap"] = Field(
        "libaio", description="for files and block devices; RBD images use 'rbd' whatever this says")
    direct: bool = True
    servers: list[str] = Field([], description="fio servers (host or host,port) for client/server "
                               "mode; they must be running 'fio --server' already")
    local_servers: int = Field(0, ge=0, le=16, description="start this many fio servers on this "
                               "host's loopback addresses and run in client/server mode (each "
                               "stands for one load-generating host)")
    all_clients: bool = Field(False, description="in a lab with several client nodes: a fio server "
                              "on each, all running the job at once on their own file (records per "
                              "client and the aggregate, host 'all')")
    deadline_s: float | None = Field(None, gt=0, description="default: runtime + 120 s + layout")
    iodepth: PositiveInt | None = Field(None, le=65536, description="every profile's queue depth instead of "
                                        "its own (e.g. swept: sweep: {iodepth: [1, 16, 64]})")
    numjobs: PositiveInt | None = Field(None, le=256, description="every profile's number of jobs instead "
                                        "of its own")

    @model_validator(mode="after")
    def _one_kind_of_servers(self) -> FioOptions:
        if sum(map(bool, (self.servers, self.local_servers, self.all_clients))) > 1:
            raise ValueError("give one of 'servers', 'local_servers' and 'all_clients'")
        if self.deadline_s is not None and self.deadline_s < self.runtime_s:
            raise ValueError(f"deadline_s: {self.deadline_s:g} s is shorter than runtime_s ({self.runtime_s} s): "
                             "every profile would be stopped as hung before its time is up; give a deadline "
                             "longer than the runtime (or leave it out: runtime + 120 s + the layout)")
        if self.job_file is not None and (self.iodepth or self.numjobs):
            raise ValueError("iodepth and numjobs set the profiles', and a job_file is run as it is: give "
                             "them in the job file")
        return self

    @field_validator("profiles")
    @classmethod
    def _profiles(cls, v: str | list[Profile]) -> str | list[Profile]:
        if isinstance(v, str) and v not in PROFILE_SETS:
            raise ValueError(f"unknown profile set '{files.printable(v)}'; named sets: {', '.join(PROFILE_SETS)}")
        if isinstance(v, list):
            names = [p.name for p in v]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:  # (a profile's name is its cell: two would be pooled as repeats)
                raise ValueError(f"profile name {', '.join(twice)} is given twice; give each profile "
                                 "its own name")
        return v

    @field_validator("servers")
    @classmethod
    def _servers(cls, v: list[str]) -> list[str]:
        """fio's host or host,port, one per host: fio reports each client by its host
        name, so two servers of one host (or one named twice: another case, a trailing dot)
        would be counted as one client that did twice the work."""
        hosts = []
        for server in v:
            host, _, port = server.partition(",")
            hosts.append(host.removeprefix("ip:").removeprefix("ip6:"))  # (fio's own prefixes say the family)
            try:
                host_address(hosts[-1])
            except ValueError as exc:
                raise ValueError(f"'{files.printable(server)}' is not a fio server: {exc}") from None
            if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
                raise ValueError(f"'{files.printable(server)}' is not a fio server (host or host,port "
                                 "with a port of 1 to 65535)")
        found = twice(hosts, host_key)
        if found is not None:
            first, second = (v[j].partition(",")[0] for j in found)
            raise ValueError(f"fio server host {second} is named twice ({first} is the same host): fio reports by "
                             "host, and would count its servers as one client")
        return v

    @field_validator("job_file")
    @classmethod
    def _job_file(cls, v: Path | None) -> Path | None:
        """A regular file of text whose lines run no command and load no code: a config
        travels between strangers, and fio runs ``exec_prerun``/``exec_postrun`` as shell
        commands, ``ioengine=exec`` runs a program, and an ``ioengine`` it does not know
        (``external:/x.so``, a path) it loads with dlopen(3); an ``include``d file would
        go unchecked."""
        if v is None:
            return v
        try:
            checked_job_file(v)
        except BadInput as exc:
            raise ValueError(exc.message) from None
        return v


JOB_LINE_MOST = 4096  # fio reads a job file in pieces of 8 KiB: a longer line is two lines to it


def checked_job_file(path: Path) -> str:
    """The text of a user's job file, read at once (not a FIFO or a device to wait on), if
    no line of it runs a command, loads code, pulls in another file, writes a file of its
    own choosing or names a device (BadInput naming the line, else). What runs is this text,
    as checked (a copy of it), never the file again."""
    text = files.read_text(path, "job file", 1 << 20)
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        read = re.split(r"[#;]", stripped, maxsplit=1)[0]  # (fio ends a line at # or ;)
        why = ""
        if len(line) > JOB_LINE_MOST:
            why = f"a line longer than {JOB_LINE_MOST} characters, which fio would read as several"
        if not why and (not read or read[0] == "["):
            continue
        name, _, value = (part.strip().lower() for part in read.partition("="))
        if why:
            pass
        elif name.startswith("exec_"):
            why = f"fio runs {name} as a shell command"
        elif name.startswith("include"):  # (fio takes any line that starts so as an include)
            why = "it pulls in another file, which is not checked"
        elif name == "ioengine" and value == "exec":
            why = "fio's exec engine runs a program"
        elif name == "ioengine" and (value.startswith("external") or not re.fullmatch(r"[a-z0-9_-]+", value)):
            why = "fio would load it as code (an engine it does not know, it loads with dlopen)"
        elif name.endswith("_log") or name in ("write_iolog", "read_iolog", "output", "trigger-file"):
            why = "fio would write (or read) a file it names, outside the run's directories"
        elif name in ("filename", "directory", "filename_format") and \
                any(part.strip().startswith(("/dev/", "/proc/", "/sys/")) for part in re.split(r"(?<!\\):", value)):
            why = "it names a device or a kernel file; a block device is measured by the blockdev backend"
        if why:
            raise BadInput(f"job file {files.printable(path)}, line {number} ('{files.printable(stripped, 80)}'): "
                           f"{why}; dfsbench runs no job file that runs commands, loads code or writes "
                           "outside its target")
    return text


def _label(m: Measurement) -> tuple[str, str]:
    host = m.params.get("host")
    where = {None: "", ALL_CLIENTS: "", TOOL_TOTAL: " (fio's total)"}.get(host, f" on {host}")
    return m.test, str(m.params.get("direction", "")) + where


class Fio(Workload):
    name = "fio"
    version_argv = ("fio", "--version")
    tools = (("fio", "fio"),)
    times_phases = True
    tool = "fio"
    parser = staticmethod(parse)
    accepts = frozenset({"path", "block", "rbd"})
    Options = FioOptions
    options: FioOptions
    # total latency (submission + completion): a FUSE client's direct I/O waits in
    # submission, so completion latency alone looks tiny
    tables = (TableSpec("fio profiles (aggregate over hosts where there are several)",
                        (Column("iops", "IOPS"), Column("throughput", "rate"), Column("lat_p99", "p99 lat")),
                        "iops", ("job", "direction"), _label, chart="iops", chart_log=True),
              TableSpec("fio total latency percentiles (submission + completion)",
                        (Column("lat_p50", "p50"), Column("lat_p99", "p99"), Column("lat_p99.9", "p99.9")),
                        "lat_p99", ("job", "direction"), _label,
                        curves=("lat_p50", "lat_p99", "lat_p99.9")))

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        if scale == "report":
            return {"size": 1 << 30, "runtime_s": 60}
        return {"size": 256 << 20, "runtime_s": 5}

    @classmethod
    def is_write(cls, record: Measurement) -> bool:
        return record.params.get("direction") == "write"

    def clients_asked(self) -> str | None:
        return "all" if self.options.all_clients else None

    def spreads_itself(self) -> bool:
        return bool(self.options.servers or self.options.local_servers)

    def on_this_host(self) -> str:
        return "local_servers" if self.options.local_servers else ""

    def profiles(self) -> list[Profile]:
        p = self.options.profiles
        found = profile_set(p) if isinstance(p, str) else p
        given = {k: v for k, v in (("iodepth", self.options.iodepth), ("numjobs", self.options.numjobs)) if v}
        if not given:
            return found
        # a profile's name that says its own queue depth ('-qd128', 'sq-'/'mq-': single or
        # multi queue) would say what it no longer runs with: the name loses it (the records
        # carry the iodepth), and profiles that became one job are run once
        out: dict[str, Profile] = {}
        for q in found:
            name = re.sub(r"(^|-)(qd\d+|sq|mq)(?=-|$)", "", q.name).strip("-") if "iodepth" in given else q.name
            out.setdefault(name or q.name, q.model_copy(update={**given, "name": name or q.name}))
        return list(out.values())

    def cells(self) -> list[dict[str, Any]]:
        if self.options.job_file is not None:
            return [{"job_file": str(self.options.job_file)}]
        return [{"profile": p.name} for p in self.profiles()]

    def writes(self, cell: dict[str, Any]) -> int:
        if "profile" not in cell:
            return 0  # a job file of the user's says its own sizes
        jobs = max((p.numjobs for p in self.profiles() if p.name == cell["profile"]), default=1)
        return int(self.options.size) * jobs

    def reaches(self, cell: dict[str, Any]) -> tuple[str, int] | None:
        # every job of a profile (numjobs, and each server's) works on the same filename from
        # its start, size bytes: on a device or an image the cell reaches size, not size × jobs
        return ("size", int(self.options.size)) if "profile" in cell else None  # (a job file: its own)

    def lasts(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return ("runtime_s", float(self.options.runtime_s)) if "profile" in cell else None  # (time_based)

    def refuses(self, kind: str) -> tuple[str, str] | None:
        if self.options.all_clients and kind != "path":
            return "all_clients", (f"fio would run on every client node at once, each on a file of its own in a "
                                   f"mount, and a '{kind}' target is one image or device that they would fight over")
        return None

    # ------------------------------------------------------------ job files

    def target_lines(self, target: Target, tag: str) -> tuple[list[str], dict[str, str]]:
        """The [global] lines that point fio at the target, and the environment it needs
        (``tag`` names the file; in client/server mode it ends with the host's index, so
        hosts never share a file). Every value from a config is one line's value: a control
        character is refused, and a ``:`` in a file name (fio's list separator) escaped."""
        if target.kind == "rbd":
            rbd = target.reach(CephAccess)
            return (["ioengine=rbd", f"clientname={job_value(rbd.client)}", f"pool={job_value(rbd.pool)}",
                     f"rbdname={job_value(rbd.image)}"], dict(rbd.env))
        lines = [f"ioengine={self.options.ioengine}", f"direct={int(self.options.direct)}"]
        if target.kind == "block":
            target.require_destructive("fio")
            return lines + [f"filename={job_value(target.block.device, path=True)}"], {}
        return lines + [f"filename={job_value(target.directory / f'dfsbench-fio-{tag}', path=True)}"], {}

    def job_text(self, profile: Profile, target: Target, tag: str) -> tuple[str, dict[str, str]]:
        o = self.options
        head, env = self.target_lines(target, tag)
        lines = ["[global]", *head, f"size={o.size}", f"runtime={o.runtime_s}", "time_based=1",
                 "group_reporting=1", "lat_percentiles=1", "", f"[{job_value(profile.name, section=True)}]", f"rw={profile.rw}",
                 f"bs={profile.bs}", f"iodepth={profile.iodepth}", f"numjobs={profile.numjobs}"]
        if profile.rwmixread is not None:
            lines.append(f"rwmixread={profile.rwmixread}")
        return "\n".join(lines) + "\n", env

    def fill_text(self, target: Target) -> tuple[str, dict[str, str]]:
        """Write the whole working set once, so reads on a new image or device are not
        answered from holes (an unwritten RBD object or sparse file reads as zeros, free)."""
        head, env = self.target_lines(target, "fill")
        text = "\n".join(["[global]", *head, f"size={self.options.size}", "",
                          "[dfsbench-fill]", "rw=write", "bs=4m", "iodepth=16"]) + "\n"
        return text, env

    # ------------------------------------------------------------ running

    def deadline(self) -> float:
        o = self.options
        # laying a file out through a slow FUSE client is part of the job
        return o.deadline_s or o.runtime_s + 120 + o.size / (4 << 20)

    def argv(self, jobs: list[Path], servers: list[str], out_format: str = "json+") -> list[str]:
        argv = ["fio", f"--output-format={out_format}"]
        if not servers:
            return argv + [str(jobs[0])]
        for server, job in zip(servers, jobs):
            argv += [f"--client={server}", str(job)]
        return argv

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        target.host.require("fio", "fio")
        refused = self.refuses(target.kind)
        if refused is not None:
            raise DfsbenchError(f"{refused[0]} on {target.key}: {refused[1]}", hint=f"leave {refused[0]} out for it")
        if self.spreads_itself():
            yield from self.run_client_server(target, cell, scratch, raw_dir)
        elif "job_file" in cell:
            yield from self.run_job_file(target, cell, scratch, raw_dir)
        else:
            yield from self.run_profile(target, cell, scratch, raw_dir)

    def run_profile(self, target: Target, cell: dict[str, Any], scratch: Path,
                    raw_dir: Path) -> Iterator[Measurement]:
        """One profile on this client (of one, or of several running the cell at once),
        timed by fio itself. On files, each client lays out its own file first (untimed, so
        the timed I/O of every client starts together), and a read profile reads, with two
        or more client hosts, what another client laid out (no cache of the writer's)."""
        profile = next(p for p in self.profiles() if p.name == cell["profile"])
        host, view, writer = target.host, target, target.host
        cache: str | None = None
        self.fill(target, raw_dir, scratch)

        def job(on: Target, of: Host, name: str, where: Path) -> tuple[Path, dict[str, str]]:
            """The profile's job file on ``on``'s host, on the file of client ``of``."""
            text, env = self.job_text(profile, on, target.file_of("", of).lstrip("-"))
            local = raw_dir / name
            local.write_text(text)
            return on.host.put(local, where), env

        own = target.directory / target.file_of("dfsbench-fio", host) if target.kind == "path" else None
        try:
            if own is not None:  # laid out before the clock runs, as fio would at its start
                layout, env = job(target, host, f"fio-{profile.name}-layout.fio", scratch)
                laid = host.run_tool(["fio", "--create_only=1", str(layout)], deadline=self.deadline(),
                                     output=raw_dir / f"fio-{profile.name}-layout.txt", env=env)
                if not laid.ok:
                    raise laid.failure(what="could not lay out fio's file: ")
                if profile.rw in ("read", "randread"):
                    view, writer, cache = target.reader()
            path, env = job(view, writer, f"fio-{profile.name}.fio", view.scratch() if view is not target else scratch)
            out = raw_dir / f"fio-{profile.name}.json"
            view.begin(profile.name)
            result = view.host.run_tool(["fio", "--output-format=json+", "--status-interval=1", str(path)],
                                        deadline=self.deadline(), output=out, env=env)
        except BaseException:
            if own is not None:  # (the cell's own error is the one to report)
                with contextlib.suppress(DfsbenchError):
                    self.remove(host, target, own)
            raise
        if own is not None:
            target.settle("fio")  # (no other client reads this one's file any more)
            self.remove(host, target, own)
        extra = {"cache": cache} if cache else {}
        if view.host.label != host.label:
            extra["read_on"] = view.host.label
        yield from self.timed_records(result, out, view, target, extra)

    def timed_records(self, result: proc.ToolRun, out: Path, view: Target, target: Target,
                      extra: dict[str, Any]) -> Iterator[Measurement]:
        """The records of a local fio run, each with when its I/O ran on this machine's clock
        and what it moved (where fio's output says so: one job, or group reporting)."""
        timing = timed(result.output)
        latencies = interval_latencies(result.output)
        for m in self.records(result, out):
            direction = str(m.params.get("direction"))
            params = {**m.params, **extra}
            progress: tuple[tuple[float, float], ...] = ()
            if direction in timing:
                started, ended, moved, ops, steps = timing[direction]
                when, _ = view.timing(started, ended)
                params.update(when, bytes=moved, ops=ops)
                column = {"throughput": 1, "iops": 2}.get(m.metric)
                if column is not None:
                    progress = view.timing(started, ended, [(p[0], p[column]) for p in steps])[1]
            over = latencies.get((direction, m.metric))
            series = None
            if over and direction in timing:  # (fio's percentiles of each interval, on this machine's clock)
                points = view.timing(timing[direction][0], timing[direction][1], over)[1]
                series = Series(points, view.timing(timing[direction][0], timing[direction][1])[0]["ended"],
                                "interval")
            yield replace(m, params=params, backend=target.backend, variant=target.variant, progress=progress,
                          series=series)

    def run_job_file(self, target: Target, cell: dict[str, Any], scratch: Path,
                     raw_dir: Path) -> Iterator[Measurement]:
        """A user's job file as it is, on this client."""
        job = Path(cell["job_file"])
        env = self.target_lines(target, target.tag)[1] if target.kind == "rbd" else {}
        out = raw_dir / f"fio-{job.stem}.json"
        copy = raw_dir / f"fio-{job.stem}.fio"  # (checked again now, and run as checked)
        copy.write_text(checked_job_file(job))
        target.begin(job.stem)
        result = target.host.run_tool(["fio", "--output-format=json+", "--status-interval=1",
                                       str(target.host.put(copy, scratch))], deadline=self.deadline(), output=out,
                                      env=env)
        yield from self.timed_records(result, out, target, target, {})

    def run_client_server(self, target: Target, cell: dict[str, Any], scratch: Path,
                          raw_dir: Path) -> Iterator[Measurement]:
        """fio's client/server mode, with the user's ``servers`` or ``local_servers`` on this
        host's loopback addresses: this machine is the fio client and holds the job files;
        records per server and fio's own aggregate (host ``all``: its total over the longest
        runtime, which fio alone defines here — it reports no server's start)."""
        tag = target.tag
        o = self.options
        if self.on_this_host() and not target.host.local:
            raise DfsbenchError(f"local_servers start fio servers on this host, and the client of "
                                f"{target.key} is {target.host.name}",
                                hint="use 'all_clients: true' to load it from every client node")
        places: list[tuple[Host, str]] = [(LOCAL, f"127.0.9.{i + 1}") for i in range(o.local_servers)]
        with FioServers(places, raw_dir, scratch) as started:
            servers = o.servers or started
            env: dict[str, str] = {}
            if "job_file" in cell:
                copy = raw_dir / f"fio-{Path(cell['job_file']).stem}.fio"  # (checked again, run as checked)
                copy.write_text(checked_job_file(Path(cell["job_file"])))
                jobs = [copy] * len(servers)
                env = self.target_lines(target, tag)[1] if target.kind == "rbd" else {}
                name = jobs[0].stem
            else:
                profile = next(p for p in self.profiles() if p.name == cell["profile"])
                name = profile.name
                self.fill(target, raw_dir, scratch)
                jobs = []
                for h in range(len(servers)):
                    text, env = self.job_text(profile, target, f"{tag}-h{h}")
                    jobs.append(raw_dir / f"fio-{name}-h{h}.fio")
                    jobs[-1].write_text(text)
            out = raw_dir / f"fio-{name}.json"
            target.begin(name)
            try:
                result = LOCAL.run_tool(self.argv(jobs, servers), deadline=self.deadline(), output=out, env=env)
            finally:  # (where the file system stopped answering, the teardown removes them)
                if target.kind == "path" and target.host.answers(target.directory) is None:
                    target.host.run(["sh", "-c", f'rm -f "$1"/dfsbench-fio-{tag}*', "sh",
                                     str(target.directory)], timeout=600)
        records = self.records(result, out)
        # a server fio could not reach is said only on its stderr (fio exits 0, and prints
        # no total): fewer hosts in the records than servers asked for is a cell not whole
        reported = {m.params.get("host") for m in records} - {TOOL_TOTAL, None}
        silent = len(servers) - len(reported)
        if silent > 0:
            error = f"{silent} of {len(servers)} fio servers reported nothing (see {out.name}.stderr)"
            records = [replace(m, flags=(*m.flags, "incomplete"), params={**m.params, "failed_clients": silent})
                       if m.params.get("host") == TOOL_TOTAL and "incomplete" not in m.flags else m
                       for m in records]
            first = records[0] if records else None
            if not any(m.params.get("host") == TOOL_TOTAL for m in records):  # (say that the total is missing)
                records.append(Measurement("fio", first.test if first else name, "throughput", None, "B/s",
                                           {**(first.params if first else {}), "host": TOOL_TOTAL,
                                            "error": error, "failed_clients": silent}, flags=("failed",)))
        for m in records:
            if o.local_servers and m.params.get("host") == TOOL_TOTAL:  # (all behind this host's one link)
                m = replace(m, params={**m.params, "clients": 1})
            yield replace(m, backend=target.backend, variant=target.variant)

    @staticmethod
    def remove(host: Host, target: Target, own: Path) -> None:
        if host.answers(target.directory) is None:  # (where it does not answer, the teardown removes it)
            host.run(["rm", "-f", str(own)], timeout=600)

    def records(self, result: proc.ToolRun, out: Path) -> list[Measurement]:
        """What fio printed, as records (flagged where it failed or hung after printing)."""
        records: list[Measurement] = []
        if result.output.strip():
            try:
                records = parse(result.output, source=str(out))
            except BadInput:
                if result.ok:
                    raise
        if not records or not result.ok:
            if not records:
                if not result.ok:
                    raise result.failure(hint=f"its output is kept in {out}")
                raise DfsbenchError("fio printed no results", hint=f"its output is kept in {out}")
            # fio printed results and still failed (or hung): keep the numbers, flagged
            flag = "hung" if result.hung else "incomplete"
            records = [replace(m, flags=(*m.flags, flag)) for m in records]
        return records

    def fill(self, target: Target, raw_dir: Path, scratch: Path) -> None:
        # the mark lives on the attachment: a later repeat attaches a new, empty image
        if target.kind not in ("rbd", "block") or \
                target.filled_bytes >= self.options.size:
            return
        text, env = self.fill_text(target)
        job = raw_dir / "fio-fill.fio"
        job.write_text(text)
        result = target.host.run_tool(["fio", str(target.host.put(job, scratch))], deadline=self.deadline(),
                               output=raw_dir / "fio-fill.txt", env=env)
        if not result.ok:
            raise result.failure(what="could not fill the target before reading: ")
        target.filled_bytes = self.options.size


def job_value(value: object, path: bool = False, section: bool = False) -> str:
    """A config's value as the value of one line of a fio job file: refused where it holds a
    control character (a newline would start a line of its own, e.g. ``exec_prerun=``); in
    a file name, fio's list separator ``:`` escaped; a section (job) name only as a name."""
    text = str(value)
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in text):
        raise BadInput(f"{files.printable(text)} holds a control character and cannot be a value in fio's "
                       "job file", hint="give the path, pool or image name without newlines or other "
                                        "control characters")
    # fio ends a value at '#' or ';' (a comment) and expands '$' (${VAR}, $ncpus): measured
    # with fio 3.33, a file name 'a#b' made a file 'a', one level up from where it was meant
    syntax = sorted(set(text) & set(JOB_SYNTAX))
    if syntax or text != text.strip():
        raise BadInput(f"{files.printable(text)} cannot be a value in fio's job file: fio would read "
                       + (f"{' '.join(syntax)} in it as syntax" if syntax else "it without its leading or "
                          "trailing blanks"),
                       hint="give a path, pool or image name without # ; $ and outer blanks")
    if section and not re.fullmatch(NAME_PATTERN, text):
        raise BadInput(f"{text!r} cannot name a job in fio's job file", hint="letters, digits, '_', '.' and '-'")
    return text.replace(":", "\\:") if path else text
