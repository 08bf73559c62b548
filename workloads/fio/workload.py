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
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.api.contracts import Workload
from harness.api.histogram import per_second, percentile_of
from harness.api.records import ALL_CLIENTS, TOOL_TOTAL, Measurement, fell_behind
from harness.api.tables import Column, TableSpec
from harness.api.target import CephAccess, Target
from harness.errors import BadInput, DfsbenchError
from harness.system import files, proc
from harness.system.hosts import LOCAL, Host
from harness.units import size
from workloads.fio.json_output import interval_histograms, parse, timed
from workloads.fio.profiles import WARMUP_S, FioOptions, Profile, checked_job_file, job_value, profile_set
from workloads.fio.servers import FioServers


MIXED = ("rw", "readwrite", "randrw")


def offered_per_direction(profile: Profile, offered: int) -> dict[str, int]:
    """I/Os per second a client host offers in each direction: all of it in the profile's
    one direction, or split by its read share where it mixes (fio's default: half); each
    part a whole number and a whole number per job (fio's rate_iops is per job). BadInput
    naming the nearest rates that split, else."""
    parts = _split(profile, offered)
    if parts is None:
        raise BadInput(f"fio profile {files.printable(profile.name)}: {offered} I/Os per second cannot be split "
                       f"in whole I/Os per second over its {profile.numjobs} job(s)"
                       + (" and its read/write mix" if profile.rw in MIXED else ""),
                       hint=split_hint([profile], offered))
    return parts


def split_hint(profiles: Sequence[Profile], offered: int) -> str:
    """What to give instead of ``offered``: the nearest rates below and above it that every
    one of ``profiles`` splits (:func:`offered_per_direction`), where there are any."""
    near = sorted({r for r in (_dividing(profiles, offered, -1), _dividing(profiles, offered, 1)) if r})
    return "give load rates that divide evenly" + (f", e.g. {' or '.join(map(str, near))}" if near else "")


def _split(profile: Profile, offered: int) -> dict[str, int] | None:
    """(:func:`offered_per_direction`'s parts, or None where they are not whole.)"""
    if profile.rw in MIXED:
        mix = 50 if profile.rwmixread is None else profile.rwmixread
        parts = {"read": offered * mix // 100, "write": offered - offered * mix // 100}
        whole = offered * mix % 100 == 0
    else:
        parts = {"read" if "read" in profile.rw else "trim" if "trim" in profile.rw else "write": offered}
        whole = True
    return parts if whole and not any(v % profile.numjobs for v in parts.values()) else None


def _dividing(profiles: Sequence[Profile], offered: int, step: int) -> int | None:
    """The nearest rate from ``offered`` in the direction of ``step`` that every profile's
    jobs and read/write mix divide. Which rates a profile splits repeats every hundred rates
    per job, so every span of the least common multiple of those periods holds one (a
    multiple of it); past SPLIT_SEARCH rates that multiple is the answer."""
    period = math.lcm(*(p.numjobs * 100 for p in profiles))
    for rate in range(offered + step, offered + step * (min(period, SPLIT_SEARCH) + 1), step):
        if rate < 1:
            return None
        if all(_split(p, rate) is not None for p in profiles):
            return rate
    rate = (offered // period + (step > 0)) * period
    return rate if rate >= 1 else None


SPLIT_SEARCH = 100_000


# the deepest queue each engine sets up (measured with fio 3.33 on Linux 6.18, 4 KiB random
# reads): io_uring's ring holds at most 32768 entries (IORING_MAX_ENTRIES; 32769: 'io_queue_init
# ... Invalid argument'); libaio's contexts of all jobs on a host together at most the
# kernel's fs.aio-max-nr, 65536 by default (iodepth 65537, or 2 jobs of 40000: 'Resource
# temporarily unavailable'); the synchronous engines take any depth and keep one in flight
IO_URING_DEEPEST = 32768
FIO_MOST_JOBS = 4096  # (fio 3.33, numjobs=4097: 'error: maximum number of jobs reached')
AIO_MAX_NR_DEFAULT = 65536
AIO_MAX_NR_FILE = Path("/proc/sys/fs/aio-max-nr")


def aio_max_nr() -> int:
    """This host's fs.aio-max-nr, read when asked (an administrator may have raised it; the
    container lab's clients share this kernel); the kernel's default where it cannot be read."""
    try:
        return int(AIO_MAX_NR_FILE.read_text().strip())
    except (OSError, ValueError):
        return AIO_MAX_NR_DEFAULT


def _too_deep(profile: Profile, engine: str, local_servers: int) -> str:
    """Why fio's engine would refuse the profile's queue ('' : it takes it). libaio's limit
    is of the host: every job of the profile (on each of ``local_servers`` fio servers of this
    host) holds a context of its depth."""
    if engine == "io_uring" and profile.iodepth > IO_URING_DEEPEST:
        return (f"iodepth {profile.iodepth} is deeper than io_uring's ring takes ({IO_URING_DEEPEST}): fio's "
                "io_queue_init fails")
    together = profile.iodepth * profile.numjobs * max(1, local_servers)
    most = aio_max_nr() if engine == "libaio" else together
    if together > most:
        return (f"iodepth {profile.iodepth}" + (f" × numjobs {profile.numjobs}" if profile.numjobs > 1 else "")
                + (f" × {local_servers} local servers" if local_servers > 1 else "")
                + f" is {together} asynchronous I/Os in flight on one host, more than libaio takes on this host "
                f"(this host's fs.aio-max-nr is {most}): fio's io_queue_init fails")
    return ""


def load_point(cell: dict[str, Any]) -> dict[str, Any]:
    """What names a cell's point of offered load in its records: its share of the most
    (``offered_fraction``), else its rate (``offered_iops``, per client host). What each
    client offered (``offered_iops_per_client``) says how, and a share's varies."""
    if "offered_fraction" in cell:
        return {"offered_fraction": cell["offered_fraction"]}
    return {"offered_iops": cell["offered_iops"]} if "offered_iops" in cell else {}


def whole_rate(profile: Profile, wanted: float) -> int:
    """The highest rate at or under ``wanted`` that the profile's jobs and read/write mix
    divide into whole I/Os per second (:func:`offered_per_direction`); the least such rate
    where ``wanted`` is under it."""
    def divides(rate: int) -> bool:
        return _split(profile, rate) is not None

    most = profile.numjobs * 100  # (every mix and number of jobs divides this one)
    rate = max(1, int(wanted))
    below = next((r for r in range(rate, max(0, rate - most), -1) if divides(r)), None)
    return below if below is not None else next(r for r in range(1, most + 1) if divides(r))


def rate_lines(profile: Profile, offered: int) -> list[str]:
    """The job lines that make fio offer ``offered`` I/Os per second from the host (each of
    its ``numjobs`` jobs an equal part; fio's rate_iops is per job, reads then writes), with
    arrivals spaced as a Poisson process would, not by the completions."""
    per_job = {d: v // profile.numjobs for d, v in offered_per_direction(profile, offered).items()}
    value = f"{per_job['read']},{per_job['write']}" if profile.rw in MIXED else str(next(iter(per_job.values())))
    return [f"rate_iops={value}", "rate_process=poisson"]


def saturated(records: list[Measurement], offered: dict[str, int], runtime_s: float,
              hosts: int = 1) -> Iterator[Measurement]:
    """The records of a point of offered load, each saying what each client host offered in
    its direction (``offered_iops_per_client``: true of an aggregate over the clients too),
    and flagged ``saturated`` where the direction completed under 95 % of the I/Os its
    ``hosts`` offered over its I/O time by more than Poisson arrivals vary by chance (3
    sigma): its latency is then that of a queue, not of the load asked for. (A direction in
    which fio did no I/O at all has no records to flag: the cell shows no figure for it.)"""
    done: dict[str, tuple[float, float]] = {}  # direction -> (I/Os completed, seconds)
    for m in records:
        if m.metric == "iops" and isinstance(m.value, (int, float)):
            p = m.params
            timed = all(isinstance(p.get(k), (int, float)) for k in ("ops", "started", "ended"))
            seconds = float(p["ended"]) - float(p["started"]) if timed else runtime_s
            done[str(p.get("direction"))] = (float(p["ops"]) if timed else m.value * seconds, seconds)
    for m in records:
        direction = str(m.params.get("direction"))
        if direction not in offered:
            yield m
            continue
        under = False
        if direction in done:
            ops, seconds = done[direction]
            asked = offered[direction] * hosts * seconds
            under = fell_behind(asked, ops)
        offered_by = {"offered_by": hosts} if hosts > 1 else {}  # (fio's total: what its servers offered)
        yield replace(m, params={**m.params, "offered_iops_per_client": offered[direction], **offered_by},
                      flags=(*m.flags, "saturated") if under else m.flags)


def _label(m: Measurement) -> tuple[str, str]:
    host = m.params.get("host")
    where = {None: "", ALL_CLIENTS: "", TOOL_TOTAL: " (fio's total)"}.get(host, f" on {host}")
    return m.test, str(m.params.get("direction", "")) + where


class Fio(Workload):
    name = "fio"
    version_argv = ("fio", "--version")
    tools = (("fio", "fio"),)
    times_phases = True
    ranks = True  # (all_clients: each client's fio is a rank's, held at a gate until the job's ranks go)
    any_order = True  # (each cell lays out, and removes, its own file; a device's fill is the attachment's)
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
                        (Column("lat_p50", "p50"), Column("lat_p90", "p90"), Column("lat_p99", "p99"),
                         Column("lat_p99.9", "p99.9")),
                        "lat_p99", ("job", "direction"), _label,
                        curves=("lat_p50", "lat_p90", "lat_p99", "lat_p99.9")))

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        if scale == "report":
            return {"size": 1 << 30, "runtime_s": 60, "warmup_s": WARMUP_S["report"]}
        return {"size": 256 << 20, "runtime_s": 5, "warmup_s": WARMUP_S["quick"]}

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
        if self.options.load is not None:
            return [{"profile": p.name, **rate} for p in self.profiles() for rate in self.options.load.cells()]
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

    def warmup(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        # (fio's ramp_time, in each job file of a profile; a user's job file says its own)
        return ("warmup_s", float(self.options.warmup_s)) if "profile" in cell and self.options.warmup_s else None

    def warmed(self, cell: dict[str, Any]) -> dict[str, Any]:
        """What a profile's records say of the warm-up before their timed run (``warmup_s``,
        seconds of ramp_time left out of their figures; a user's job file: nothing)."""
        return {"warmup_s": self.options.warmup_s} if "profile" in cell else {}

    def unrunnable(self, kind: str) -> tuple[str, str, str] | None:
        """A profile's block larger than the size its jobs work on (fio refuses the job), a
        queue deeper than the engine's ceiling, or an offered rate its jobs and read/write mix
        cannot split into whole I/Os per second (:func:`offered_per_direction`, asked again as
        the job file is written)."""
        o = self.options
        if o.job_file is not None:
            return None  # (run as it is: fio says what it refuses of it)
        given = o.profiles if isinstance(o.profiles, list) else profile_set(o.profiles)
        every = [q.model_copy(update={key: v for key, v in (("iodepth", o.iodepth), ("numjobs", o.numjobs)) if v})
                 for q in given]
        for k, p in enumerate(every):
            where = f"profiles[{k}]" if isinstance(o.profiles, list) else "profiles"
            if p.bs > o.size:
                key = f"{where}.bs" if isinstance(o.profiles, list) else "size"
                return key, (f"profile {files.printable(p.name)}'s bs ({size(p.bs)}) is more than size "
                             f"({size(o.size)}): fio refuses a job whose size is less than its block size"), \
                    f"give size at least {size(p.bs)}, or the profile a smaller bs"
            if p.numjobs > FIO_MOST_JOBS:
                return f"{where}.numjobs", (f"profile {files.printable(p.name)}: {p.numjobs} jobs are more than fio "
                                            f"runs at once ({FIO_MOST_JOBS})"), f"give numjobs at most {FIO_MOST_JOBS}"
            deep = _too_deep(p, o.ioengine if kind != "rbd" else "rbd", o.local_servers)
            if deep:
                key = "iodepth" if o.iodepth else ("numjobs" if o.numjobs and "numjobs" in deep else
                                                   f"{where}.iodepth")
                return key, f"profile {files.printable(p.name)}: {deep}", \
                    "give a shallower queue (or fewer jobs), or another ioengine" + \
                    (", or raise this host's fs.aio-max-nr (sysctl)" if "fs.aio-max-nr" in deep else "")
            for j, rate in enumerate(o.load.iops or () if o.load is not None else ()):
                try:
                    offered_per_direction(p, rate)
                except BadInput as exc:  # (a rate to give instead splits for every profile, not this one only)
                    return f"load.iops[{j}]", exc.message, split_hint(every, rate)
        return None

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "deadline_s", self.deadline()

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

    def job_text(self, profile: Profile, target: Target, tag: str, offered: int | None = None,
                 gate: str | None = None) -> tuple[str, dict[str, str]]:
        """The profile's job file; ``gate``: the command each of its jobs runs right before its
        I/O, which returns when every client starts (``Host.gate``: the ranks of an MPI job)."""
        o = self.options
        head, env = self.target_lines(target, tag)
        if gate is not None:
            head = [*head, f"exec_prerun={job_value(gate)}"]
        ramp = [f"ramp_time={o.warmup_s}"] if o.warmup_s else []  # (fio leaves it out of every figure)
        lines = ["[global]", *head, f"size={o.size}", f"runtime={o.runtime_s}", *ramp, "time_based=1",
                 "group_reporting=1", "lat_percentiles=1", "", f"[{job_value(profile.name, section=True)}]", f"rw={profile.rw}",
                 f"bs={profile.bs}", f"iodepth={profile.iodepth}", f"numjobs={profile.numjobs}"]
        if profile.rwmixread is not None:
            lines.append(f"rwmixread={profile.rwmixread}")
        if offered is not None:
            lines += rate_lines(profile, offered)
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
        return o.deadline_s or o.runtime_s + o.warmup_s + 120 + o.size / (4 << 20)

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
        or more client hosts, what another client laid out (no cache of the writer's). A
        share of the most it does (``offered_fraction``) is offered after that most is
        measured, closed loop, in the cell."""
        if "offered_fraction" in cell:
            yield from self.run_fraction(target, cell, scratch, raw_dir)
            return
        yield from self.run_once(target, cell, scratch, raw_dir)

    def run_fraction(self, target: Target, cell: dict[str, Any], scratch: Path,
                     raw_dir: Path) -> Iterator[Measurement]:
        """A share of the most the profile does: first run as fast as it can (closed loop,
        every client of the cell at once, without starting the cell's measured work: a
        fault's clock starts with the offered load), then at the share of the clients' mean
        IOPS that each client offers (a whole rate its jobs and mix divide). Its records
        say both (``max_iops_per_client``, ``offered_iops_per_client``); the closed-loop
        run's output is kept beside them."""
        profile = next(p for p in self.profiles() if p.name == cell["profile"])
        share = float(cell["offered_fraction"])
        closed = list(self.run_once(target, {"profile": profile.name}, scratch, raw_dir / "max", starts=False))
        mine = {str(m.params.get("direction")): float(m.value) for m in closed
                if m.metric == "iops" and m.value is not None and "failed" not in m.flags}
        if sum(mine.values()) <= 0:
            raise DfsbenchError(f"fio {profile.name}: the closed-loop run before the load did no I/O, so there is "
                                "no maximum to take a share of", hint=f"see its output in {raw_dir / 'max'}")
        target.post("fio-max-iops", mine)
        target.settle(f"{profile.name}: the most each client does")  # (every client has said its own)
        each = [target.posted("fio-max-iops", h, mine) for h in (target.peers or target.hosts or (target.host,))]
        # (the clients' mean, in all and in each direction: what each offers a share of)
        most = {d: sum(e.get(d, 0.0) for e in each) / len(each) for d in mine}
        rate = whole_rate(profile, share * sum(most.values()))
        records = self.run_once(target, {**cell, "offered_iops": rate}, scratch, raw_dir)
        for m in records:
            direction = str(m.params.get("direction"))
            yield replace(m, params={**m.params, **({"max_iops_per_client": round(most[direction], 1)}
                                                    if direction in most else {})})

    def run_once(self, target: Target, cell: dict[str, Any], scratch: Path,
                 raw_dir: Path, starts: bool = True) -> Iterator[Measurement]:
        """The profile run once, closed loop or at ``offered_iops`` (``starts``: its timed
        I/O begins the cell's measured work, as a timed phase does)."""
        raw_dir.mkdir(parents=True, exist_ok=True)
        profile = next(p for p in self.profiles() if p.name == cell["profile"])
        host, view, writer = target.host, target, target.host
        cache: str | None = None
        self.fill(target, raw_dir, scratch)

        def job(on: Target, of: Host, name: str, where: Path, offered: int | None = None,
                gate: str | None = None) -> tuple[Path, dict[str, str]]:
            """The profile's job file on ``on``'s host, on the file of client ``of``."""
            text, env = self.job_text(profile, on, target.file_of("", of).lstrip("-"), offered, gate)
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
            offered = cell.get("offered_iops")
            name = f"{profile.name}-{offered}iops" if offered is not None else profile.name
            # (where the clients are ranks, each fio sets itself up, then waits for the others)
            path, env = job(view, writer, f"fio-{name}.fio", view.scratch() if view is not target else scratch,
                            offered, view.host.gate(profile.numjobs))
            out = raw_dir / f"fio-{name}.json"
            # (together; its measured I/O, and a fault's clock, begin after the warm-up, where
            # it is the cell's measured work and not the closed-loop run before an offered load)
            view.begin(profile.name if starts else f"{profile.name}, closed loop", self.options.warmup_s,
                       starts=starts)
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
        records = self.timed_records(result, out, view, target, {**extra, **self.warmed(cell)})
        if offered is None:
            yield from records
            return
        point = load_point(cell)
        for m in saturated(list(records), offered_per_direction(profile, offered), self.options.runtime_s):
            yield replace(m, params={**m.params, **point})

    def timed_records(self, result: proc.ToolRun, out: Path, view: Target, target: Target,
                      extra: dict[str, Any]) -> Iterator[Measurement]:
        """The records of a local fio run, each with when its I/O ran on this machine's clock
        and what it moved (where fio's output says so: one job, or group reporting)."""
        timing = timed(result.output)
        here = view.host.here
        histograms = {key: tuple((here(a), here(b), bins) for a, b, bins in intervals)
                      for key, intervals in interval_histograms(result.output).items()}
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
            series = None
            histogram = m.histogram
            p = percentile_of(m.metric)
            if histogram is not None and direction in timing:  # (each interval's too, on this machine's clock)
                histogram = replace(histogram, intervals=histograms.get((direction, m.metric.partition("_")[0]), ()))
                if p is not None:  # (the percentile every second, and the seconds in which nothing completed)
                    series, stalled = per_second([histogram], p)
                    if stalled:
                        params["stalled_s"] = stalled
            yield replace(m, params=params, backend=target.backend, variant=target.variant, progress=progress,
                          series=series, histogram=histogram)

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
                    text, env = self.job_text(profile, target, f"{tag}-h{h}", cell.get("offered_iops"))
                    jobs.append(raw_dir / f"fio-{name}-h{h}.fio")
                    jobs[-1].write_text(text)
            out = raw_dir / f"fio-{name}.json"
            target.begin(name, self.options.warmup_s if "profile" in cell else 0.0)
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
        if cell.get("offered_iops") is not None:  # (each server offered the rate; fio's total, all of theirs)
            offered = offered_per_direction(profile, int(cell["offered_iops"]))
            hosts: dict[Any, list[Measurement]] = {}
            for m in records:
                hosts.setdefault(m.params.get("host"), []).append(m)
            # (fio's total is of the servers that reported: its 'clients')
            records = [replace(r, params={**r.params, **load_point(cell)}) for host, mine in hosts.items()
                       for r in saturated(mine, offered, o.runtime_s,
                                          int(mine[0].params.get("clients") or len(servers)) if host == TOOL_TOTAL else 1)]
        for m in records:
            if o.local_servers and m.params.get("host") == TOOL_TOTAL:  # (all behind this host's one link)
                m = replace(m, params={**m.params, "clients": 1})
            yield replace(m, params={**m.params, **self.warmed(cell)}, backend=target.backend, variant=target.variant)

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
