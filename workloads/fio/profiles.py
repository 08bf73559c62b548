"""fio's profiles and options: the named profile sets, what a config may say of the
workload, and the checks that keep a job file's text (a user's, or a value written into
dfsbench's own) from running a command, loading code or writing outside its target."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PositiveInt, field_validator, model_validator

from harness.api.contracts import JOB_SYNTAX, NAME_PATTERN, Bytes, Name, Options, host_address, host_key
from harness.api.model import SITE, ConfigModel, twice
from harness.errors import BadInput
from harness.system import files


# seconds of fio's ramp_time before each profile's timed run, at each scale (FioOptions.warmup_s)
WARMUP_S = {"report": 5, "quick": 1}


class Profile(ConfigModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    name: Name = Field(description="the profile's name in the tables (e.g. 4k-randread)")
    rw: Literal["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim",
                "randtrim"] = Field(description="fio's --rw: the I/O pattern")
    bs: Bytes = Field(description="fio's --bs: the block size (accepts 4k, 1MiB)")
    # (how deep an engine takes, and how many jobs fio runs: Fio.unrunnable)
    iodepth: PositiveInt = Field(1, description="fio's --iodepth: I/Os in flight per job")
    numjobs: PositiveInt = Field(1, description="fio's --numjobs: jobs (processes) running the profile")
    rwmixread: int | None = Field(None, ge=0, le=100, description="with rw or randrw: the percentage of reads")


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


class Load(ConfigModel):
    """Offered load (open loop): each rate a cell of its own, requests arriving at that rate
    from fio's own limiter whether or not the earlier ones have completed."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    # (at most 10^9 a second: beyond what any storage does, as records hold)
    iops: list[Annotated[int, Field(gt=0, le=10**9)]] | None = Field(
        None, min_length=1, max_length=64, description="I/Os per second offered by each client host, one cell "
        "each (e.g. [200, 400, 800])")
    fraction_of_max: list[Annotated[float, Field(gt=0, le=1)]] | None = Field(
        None, min_length=1, max_length=64, description="shares of the most each client host does (measured "
        "first in the cell, closed loop, and kept with its records), one cell each (e.g. [0.25, 0.5, 0.9, 1.0])")

    @field_validator("iops", "fraction_of_max")
    @classmethod
    def _each_once(cls, v: list[Any] | None) -> list[Any] | None:
        if v is not None and len(set(v)) != len(v):  # (a rate is its cell: two would be pooled as repeats)
            raise ValueError(f"a rate is given twice in {v}: give each once")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> Load:
        if (self.iops is None) == (self.fraction_of_max is None):
            raise ValueError("give the offered load as one of iops (I/Os per second per client host) and "
                             "fraction_of_max (shares of the most each does)")
        return self

    def cells(self) -> list[dict[str, Any]]:
        """Each rate's cell parameters."""
        if self.iops is not None:
            return [{"offered_iops": rate} for rate in self.iops]
        return [{"offered_fraction": share} for share in self.fraction_of_max or ()]


class FioOptions(Options):
    profiles: str | list[Profile] = Field("seed000", description="a named set (seed000, seed002) "
                                          "or a list of {name, rw, bs, iodepth, numjobs, rwmixread}")
    job_file: Path | None = Field(None, description="a .fio job file run as-is instead of profiles; "
                                  "its filename/directory lines are kept", json_schema_extra=SITE)
    size: Bytes = Field(description="bytes each job works on (accepts 1GiB)")
    runtime_s: PositiveInt = Field(description="seconds per profile (time_based)")
    # (0 where options are made without a scale; a config's are given its scale's: Fio.defaults)
    warmup_s: int = Field(0, ge=0, le=3600, description="seconds each profile runs before its timed runtime_s, "
                          "left out of its figures (fio's ramp_time): a cold mount, a file just laid out, a cache "
                          f"filling up; default {WARMUP_S['report']} at scale report, {WARMUP_S['quick']} at quick; "
                          "0: none. The records say it (warmup_s); a fault's after_s counts from its end. A "
                          "job_file says its own ramp_time")
    # the engines that do I/O to a file or a device (not null, which measures no storage, nor
    # exec or external, which run or load code)
    ioengine: Literal["libaio", "io_uring", "psync", "sync", "pvsync", "pvsync2", "posixaio", "mmap"] = Field(
        "libaio", description="for files and block devices; RBD images use 'rbd' whatever this says")
    direct: bool = Field(True, description="O_DIRECT (fio's --direct=1): the page cache bypassed; false measures the client's cache too")
    servers: list[str] = Field([], description="fio servers (host or host,port) for client/server "
                               "mode; they must be running 'fio --server' already", json_schema_extra=SITE)
    local_servers: int = Field(0, ge=0, le=16, description="start this many fio servers on this "
                               "host's loopback addresses and run in client/server mode (each "
                               "stands for one load-generating host)")
    all_clients: bool = Field(False, description="with several client hosts: fio on each, all running "
                              "the job at once on their own file (records per client and the "
                              "aggregate, host 'all'); as MPI ranks where the launcher is mpi")
    deadline_s: float | None = Field(None, gt=0, description="default: runtime + 120 s + layout")
    iodepth: PositiveInt | None = Field(None, le=65536, description="every profile's queue depth instead of "
                                        "its own (e.g. swept: sweep: {iodepth: [1, 16, 64]})")
    numjobs: PositiveInt | None = Field(None, le=256, description="every profile's number of jobs instead "
                                        "of its own")
    load: Load | None = Field(None, description="offered load: {iops: [rates per client host]} or "
                              "{fraction_of_max: [shares of the most each does]}, each profile run at each "
                              "rate (arrivals poisson); without it, each runs as fast as it can (closed loop)")

    @model_validator(mode="after")
    def _one_kind_of_servers(self) -> FioOptions:
        if sum(map(bool, (self.servers, self.local_servers, self.all_clients))) > 1:
            raise ValueError("give one of 'servers', 'local_servers' and 'all_clients'")
        if self.job_file is not None and self.load is not None:
            raise ValueError("load sets the rate of the profiles' jobs, and a job_file is run as it is: give "
                             "its rate in the job file (rate_iops)")
        if self.load is not None and self.load.fraction_of_max is not None and (self.servers or self.local_servers):
            raise ValueError("load.fraction_of_max measures the most each client host does in the cell first, "
                             "and fio's servers report only after the job: give load.iops with servers (or "
                             "use all_clients)")
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
