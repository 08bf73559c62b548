"""The MPI launcher's pieces that run here: what rank 0 printed, read back into records and
their sums; mpirun's word on a rank that died; the launch agent; the end of a job's
processes by its tag; the choice of launcher; what the ranks of one host do once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from harness.api.launch import Launch, Launching
from harness.api.target import Lineup, Target
from harness.errors import BadInput, DfsbenchError
from harness.execution import mpi_job, mpi_rank, together
from harness.execution.mpi_agent import HOSTS_ENV
from harness.execution.mpi_job import MARK, MPI_AGENT, MpiJob, kill_script
from harness.execution.ranks import MachineShare, RankHost, gate_line
from harness.system.hosts import LOCAL, Host, LocalHost
from workloads import smallfile
from workloads.fio.profiles import job_value

DATA = Path(__file__).parent.parent / "data" / "tools" / "mpi"


def gathered(name: str) -> list[dict]:
    """The results of the phase rank 0 printed (a real job's output, 2 ranks on 2 hosts)."""
    for line in (DATA / name).read_text().splitlines():
        if line.startswith(MARK) and "results" in line:
            return json.loads(line[len(MARK):])["results"]
    raise AssertionError("no phase in the capture")


def target() -> Target:
    return Target("path", Path("/mnt/x"), "glusterfs", "default")


def records(results: list[dict], cell: dict) -> dict[str, list]:
    return {f"r{r['rank']}": list(smallfile.measurements("create", r["result"], cell, "none", target()))
            for r in results}


CELL = {"files": 100, "file_size": 4096, "threads": 2}


def test_the_ranks_results_make_a_record_each_and_one_aggregate_over_the_span():
    results = gathered("rank0-smallfile-create-2x1.txt")
    assert [r["host"] for r in results] == ["c1", "c2"] and all("error" not in r["result"] for r in results)
    # one rank started later than the other (as a rank slow to leave a barrier does): the
    # sum of the ranks' own rates is then more than what they did together over the span
    late = results[1]["result"]
    shift = late["ended"] - late["started"]
    late.update(started=late["started"] + shift, ended=late["ended"] + shift,
                progress=[[t + shift, f, b] for t, f, b in late["progress"]])
    by = records(results, CELL)
    each = together.per_client(by, ["r0", "r1"], {"r0": "client1", "r1": "client2"}, {"launcher": "mpi"}, 2)
    assert {m.params["host"] for m in each} == {"client1", "client2"} and all("rank" not in m.params for m in each)
    sums = together.summed(each, 2, 2, 1, CELL)
    rate = next(m for m in sums if m.metric == "files_per_sec" and m.params.get("basis") == "span")
    starts = [r["result"]["started"] for r in results]
    ends = [r["result"]["ended"] for r in results]
    assert rate.params["host"] == "all" and rate.params["clients"] == 2 and "ranks" not in rate.params
    assert rate.value == pytest.approx(200 / (max(ends) - min(starts)), rel=1e-4)  # (times kept to 1 µs)
    naive = sum(m.value for m in each if m.metric == "files_per_sec")
    assert naive > 1.5 * rate.value  # (the naive sum would say far more than was done)
    # the launcher is said, and is no part of the cell's figure
    assert rate.params["launcher"] == "mpi"


def shifted(result: dict, by: float) -> dict:
    return {**result, "started": result["started"] + by, "ended": result["ended"] + by,
            "progress": [[t + by, f, b] for t, f, b in result["progress"]]}


def test_several_ranks_of_a_host_give_a_row_each_a_row_for_the_host_and_the_aggregate():
    # two hosts of two ranks each: the captured two ranks on client1, and the same two on
    # client2 a phase's length later (as a host whose ranks started late)
    results = gathered("rank0-smallfile-create-2x1.txt")
    late = max(r["result"]["ended"] for r in results) - min(r["result"]["started"] for r in results)
    four = [*results, *({**r, "rank": r["rank"] + 2, "result": shifted(r["result"], late)} for r in results)]
    by = records(four, CELL)
    machine = {"r0": "client1", "r1": "client1", "r2": "client2", "r3": "client2"}
    each = together.per_client(by, ["r0", "r1", "r2", "r3"], machine, {}, 2, per_host=2)
    assert sorted((m.params["host"], m.params["rank"]) for m in each if m.metric == "files_per_sec") == \
        [("client1", 0), ("client1", 1), ("client2", 2), ("client2", 3)]
    sums = together.summed(each, 4, 2, 2, CELL)
    rate = {m.params["host"]: m for m in sums if m.metric == "files_per_sec" and m.params.get("basis") == "span"}
    assert set(rate) == {"client1", "client2", "all"}
    assert not any("rank" in m.params for m in sums)  # (a sum is no rank's)
    assert [rate[h].params["ranks"] for h in ("client1", "client2", "all")] == [2, 2, 4]
    assert all(rate[h].params["clients"] == 2 for h in rate)  # (hosts, not ranks)
    # each host's row is its own ranks' files over their own span; everyone's, all files
    # over the span of all four (which the late host stretches)
    for host, ranks in (("client1", four[:2]), ("client2", four[2:])):
        span = max(r["result"]["ended"] for r in ranks) - min(r["result"]["started"] for r in ranks)
        assert rate[host].value == pytest.approx(200 / span, rel=1e-4)
    span = max(r["result"]["ended"] for r in four) - min(r["result"]["started"] for r in four)
    assert rate["all"].value == pytest.approx(400 / span, rel=1e-4)
    assert rate["all"].value < rate["client1"].value + rate["client2"].value
    # a host's sum has no progress of its own: no timeline counts it as one more client
    assert rate["client1"].progress == () and all(m.progress for m in each if m.metric == "files_per_sec")
    assert "no-aggregate" not in rate["all"].flags


def test_mpiruns_word_on_a_rank_that_died_names_the_rank_and_its_host(tmp_path):
    job = MpiJob([LOCAL], ["h"], 1, None, DATA / "mpirun-rank-killed.log")
    assert job._why() == "rank 1 on client2 exited on signal 9 (Killed)"
    empty = tmp_path / "mpirun.log"
    empty.write_text("")
    assert "said nothing" in MpiJob([LOCAL], ["h"], 1, None, empty)._why()


def test_the_agent_runs_only_the_hosts_of_its_job(tmp_path):
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"node1": ["sh", "-c"]}))
    env = {**os.environ, HOSTS_ENV: str(hosts)}
    ran = subprocess.run([sys.executable, str(MPI_AGENT), "node1", "echo", "the", "daemon"],
                         capture_output=True, text=True, timeout=30, env=env)
    assert ran.returncode == 0 and ran.stdout == "the daemon\n"
    refused = subprocess.run([sys.executable, str(MPI_AGENT), "node1;reboot", "echo", "x"],
                             capture_output=True, text=True, timeout=30, env=env)
    assert refused.returncode == 2 and "is not a host of this job" in refused.stderr and not refused.stdout


def test_a_jobs_processes_end_by_its_tag_and_nothing_else_does():
    ours = subprocess.Popen(["sleep", "60"], env={**os.environ, mpi_job.JOB_ENV: "abc123"})
    other = subprocess.Popen(["sleep", "60"], env={**os.environ, mpi_job.JOB_ENV: "abc1234"})
    try:
        subprocess.run(["sh", "-c", kill_script("abc123")], check=True, timeout=30)
        assert ours.wait(timeout=10) == -9
        assert other.poll() is None
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()
    with pytest.raises(AssertionError):
        kill_script("x; reboot")


class Named(LocalHost):
    def __init__(self, name: str) -> None:
        self.name = name


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """Client hosts whose python3 answers the probe as given (this machine, under names)."""
    def answering(lines: str) -> None:
        fake = tmp_path / "bin" / "python3"
        fake.parent.mkdir(exist_ok=True)
        fake.write_text(f"#!/bin/sh\nprintf '{lines}'\n")
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
        mpi_job._decided.clear()
    yield answering
    mpi_job._decided.clear()


def test_the_launcher_is_mpi_only_where_every_host_can_run_its_job(probe, monkeypatch):
    monkeypatch.setattr(mpi_job, "mpirun_version", lambda: "4.1.4")
    hosts = [Named("client1"), Named("client2")]
    probe("client1\\nOpen MPI v4.1.4\\nTrue\\n")
    found = mpi_job.decide(None, hosts)
    assert found.launcher == "exec" and "two client hosts call themselves client1" in found.why
    probe("client1\\nOpen MPI v4.1.2\\nTrue\\n")
    found = mpi_job.decide(Launch(), hosts[:1])
    assert found.launcher == "exec" and "Open MPI v4.1.2, this machine Open MPI 4.1.4" in found.why
    with pytest.raises(BadInput, match="launcher 'mpi' cannot run here: .*must be one version"):
        mpi_job.decide(Launch("mpi"), hosts[:1])
    probe("client1;x\\nOpen MPI v4.1.4\\nTrue\\n")
    assert "no host name for a hostfile" in mpi_job.decide(None, hosts[:1]).why
    probe("client1\\nOpen MPI v4.1.4\\nFalse\\n")
    assert "has no orted" in mpi_job.decide(None, hosts[:1]).why
    probe("client1\\nOpen MPI v4.1.4\\nTrue\\n")
    found = mpi_job.decide(None, hosts[:1])
    assert found.launcher == "mpi" and found.hostnames == ("client1",)
    assert mpi_job.decide(Launch("exec"), hosts[:1]).launcher == "exec"


def test_more_ranks_than_one_need_the_mpi_launcher_and_the_network_is_a_cidr():
    with pytest.raises(ValueError, match="ranks_per_client 2 needs launcher 'mpi'"):
        Launching(launcher="exec", ranks_per_client=2)
    with pytest.raises(ValueError, match="CIDR"):
        Launching(mpi_network="10.0.0.0/24 --mca x")
    assert Launching(mpi_network="10.1.2.3/24").mpi_network == "10.1.2.0/24"


def test_the_ranks_of_a_host_do_what_changes_it_once_each_time_they_come_to_it():
    share, done = MachineShare(), []

    def remount() -> str:
        time.sleep(0.05)
        done.append(1)
        return "sync+remount"

    got: list[str] = []
    threads = [threading.Thread(target=lambda k=k: got.append(share.once(k, "drop caches", remount)))
               for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 1 and got == ["sync+remount"] * 4
    assert share.once(0, "drop caches", remount) == "sync+remount" and len(done) == 2  # (the next time: again)


def test_a_rank_reads_what_a_rank_on_another_host_wrote():
    bases = [Named("client1"), Named("client2")]
    share = {b.name: MachineShare() for b in bases}
    peers = tuple(RankHost(b, k, 2, i * 2 + k, None, share[b.name])  # type: ignore[arg-type]
                  for i, b in enumerate(bases) for k in range(2))
    assert [p.label for p in peers] == ["client1-r0", "client1-r1", "client2-r0", "client2-r1"]
    t = Target("path", Path("/mnt/x"), "glusterfs", "default", hosts=tuple(bases))
    lineup = Lineup(len(peers))  # (every rank of the cell at once: each reads what another wrote)
    for p in peers:
        view = replace(t.on(p), peers=peers).for_cell(lineup)
        reader, writer, cache = view.reader()
        assert reader.host is p and writer.machine.label != p.machine.label and cache == "sync+other-client"
        assert writer.label == peers[(peers.index(p) - 2) % 4].label  # (IOR's -C: as many places off as ranks per host)
    alone = replace(t.on(peers[0]), peers=peers)  # (one rank's cell: the next host reads it)
    reader, writer, _ = alone.reader()
    assert writer is peers[0] and reader.host.machine.label == "client2"


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_rank_runs_a_tool_in_a_group_of_its_own_and_a_hung_one_is_killed_with_its_output_kept(tmp_path):
    out, err = tmp_path / "fio.out", tmp_path / "fio.err"
    said = mpi_rank.tool(["sh", "-c", "echo result; echo trouble >&2; exit 3"], str(out), str(err), deadline=30)
    assert said["exit"] == 3 and err.read_text() == "trouble\n" and out.read_text() == "result\n"
    # past its deadline: SIGTERM to its group (the child it forked too), its output so far kept
    forked = tmp_path / "forked.pid"
    began = time.monotonic()
    said = mpi_rank.tool(["sh", "-c", f"echo partial; setsid sleep 60 & echo $! > {forked}; wait"], str(out),
                         str(err), deadline=0.5, grace=2)
    assert said["exit"] is None and out.read_text() == "partial\n"
    assert time.monotonic() - began < 10
    pid = int(forked.read_text())
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)  # (all of the tool ended, a process of a session of its own too: fio's jobs)
    with pytest.raises(FileNotFoundError):
        mpi_rank.tool(["no-such-tool-here"], str(out), str(err), deadline=5)


class Job:
    """The ranks of a job run here, one after another (what rank 0 gathers, without mpirun):
    the harness's side of a tool run in a rank is under test, not Open MPI."""

    def __init__(self, hosts: list[LocalHost], per_host: int) -> None:
        self.hosts, self.size = hosts, len(hosts) * per_host
        self.deadlines: list[float] = []

    def up(self) -> None:
        pass

    def phase(self, phase: str, calls: list[dict], deadline: float, began) -> list[dict]:
        self.deadlines.append(deadline)
        began(time.time())
        return [{"rank": r, "host": "h", "released": time.time(), "result": mpi_rank.tool(**c["tool"])}
                for r, c in enumerate(calls)]


class Copying(Named):
    """A client host that, as a remote one, copies a file put there into the directory."""

    put = Host.put


def ranks_of(tmp_path: Path, per_host: int) -> tuple[list[RankHost], dict[str, Path], Job]:
    from harness.execution.ranks import RankLineup

    bases = [Copying("client1"), Copying("client2")]
    scratch = {b.name: tmp_path / b.name for b in bases}
    for d in scratch.values():
        d.mkdir()
    job = Job(bases, per_host)
    lineup = RankLineup(job, None, lambda h: scratch[h.machine.name], None)  # type: ignore[arg-type]
    share = {b.name: MachineShare() for b in bases}
    ranks = [RankHost(b, k, per_host, i * per_host + k, lineup, share[b.name])
             for i, b in enumerate(bases) for k in range(per_host)]
    return ranks, scratch, job


def each_rank(ranks: list[RankHost], do) -> dict[int, object]:
    got: dict[int, object] = {}

    def one(host: RankHost) -> None:
        try:
            got[host.rank] = do(host)
        except Exception as exc:  # noqa: BLE001 (what a rank raised is the test's)
            got[host.rank] = exc

    threads = [threading.Thread(target=one, args=(h,)) for h in ranks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def test_a_timed_tool_of_every_rank_runs_in_the_job_and_its_output_comes_back_here(tmp_path):
    ranks, scratch, job = ranks_of(tmp_path, per_host=2)
    raw = tmp_path / "raw"

    def timed(host: RankHost):
        own = tmp_path / f"job-{host.rank}" / "job.fio"  # (every rank's job file of one name)
        own.parent.mkdir()
        own.write_text(f"rank {host.rank}\n")
        there = host.put(own, scratch[host.machine.name])
        host.lineup.begin("write", 0.0, host)
        return host.run_tool(["sh", "-c", f'cat "$0"; echo said >&2; exit {host.rank}', str(there)], deadline=30,
                             output=raw / f"r{host.rank}" / "fio.json", grace=0.5)

    got = each_rank(ranks, timed)
    for r in range(4):
        run = got[r]
        # (each ran its own job file, though the two ranks of a host put one of the same name)
        assert run.output == f"rank {r}\n" and run.returncode == r and run.errors == "said\n"  # type: ignore[attr-defined]
        kept = raw / f"r{r}"
        assert (kept / "fio.json").read_text() == f"rank {r}\n" and (kept / "fio.json.stderr").read_text() == "said\n"
        assert json.loads((kept / "fio.json.argv").read_text())[:2] == [f"client{1 + r // 2}:", "sh"]
        assert sorted(p.name for p in kept.iterdir()) == ["fio.json", "fio.json.argv", "fio.json.stderr"]
    assert not list(tmp_path.glob("client*/tool-*"))  # (its output is removed from the host)
    assert job.deadlines == [30 + 3 * 0.5]  # (the job waits for the tool's deadline and its two graces)
    # a tool outside a timed phase runs on the host, as on any
    alone = ranks[0].run_tool(["echo", "untimed"], deadline=30, output=tmp_path / "layout.txt")
    assert alone.output == "untimed\n" and set(ranks[0].lineup.sent) == {"write"}  # type: ignore[attr-defined]


def test_a_rank_tool_that_hangs_is_kept_as_hung_and_one_whose_output_is_gone_fails_naming_its_rank(tmp_path):
    ranks, scratch, _ = ranks_of(tmp_path, per_host=1)

    def hung(host: RankHost):
        host.lineup.begin("read", 0.0, host)
        return host.run_tool(["sh", "-c", "echo so far; sleep 30"], deadline=0.3, output=tmp_path / f"h{host.rank}",
                             grace=0.5)

    got = each_rank(ranks, hung)
    assert all(got[r].hung and got[r].output == "so far\n" for r in range(2))  # type: ignore[attr-defined]

    def lost(host: RankHost):
        host.lineup.begin("write", 0.0, host)
        return host.run_tool(["sh", "-c", f'rm -f "{scratch[host.machine.name]}"/tool-*.out'], deadline=30,
                             output=tmp_path / f"l{host.rank}", grace=0.5)

    got = each_rank(ranks, lost)
    assert all(isinstance(got[r], DfsbenchError) and f"rank {r} on client{r + 1}: what sh printed could not be read"
               in got[r].message for r in range(2)), got  # type: ignore[union-attr]


def gated_job(tmp_path: Path, lines: str) -> tuple[Path, Path]:
    """A rank's gate for its next tool, two jobs of it (``RankLineup.gate``), and a fio job
    file of two jobs that wait at it: the gate's directory and the job file."""
    ranks, _, _ = ranks_of(tmp_path, per_host=1)
    line = ranks[0].gate(2)
    gate = ranks[0].lineup._gates[0][0]  # type: ignore[attr-defined]
    assert gate.is_dir() and line is not None and job_value(line) == line  # (a value fio takes as it is)
    job = tmp_path / "job.fio"
    job.write_text(f"[global]\n{lines}\nsize=4m\nbs=4k\nrw=write\ntime_based=1\nruntime=1\n"
                   f"exec_prerun={line}\n[gated]\nnumjobs=2\n")
    return gate, job


def test_a_gated_fio_sets_itself_up_then_each_job_waits_for_the_ranks_to_go(tmp_path):
    gate, job = gated_job(tmp_path, f"ioengine=null\nlog_unix_epoch=1\nwrite_lat_log={tmp_path}/lat")
    seen: dict[str, object] = {}

    def ready() -> float:
        """The barrier: every job waits at the gate by now; the ranks go 0.3 s later."""
        seen["waiting"] = len(list((gate / "ready").iterdir()))
        seen["at"] = time.time() + 0.3
        return seen["at"]  # type: ignore[return-value]

    said = mpi_rank.tool(["fio", "--output-format=json", str(job)], str(tmp_path / "out.json"),
                         str(tmp_path / "err"), deadline=60, cwd=str(gate), gate=str(gate), gate_jobs=2, ready=ready)
    assert said["exit"] == 0, (tmp_path / "err").read_text()
    assert seen["waiting"] == 2  # (both jobs were set up and waiting)
    firsts = []
    for log in tmp_path.glob("lat_lat.*.log"):
        t_ms, lat_ns = (int(v) for v in log.read_text().splitlines()[0].split(",")[:2])
        firsts.append(t_ms / 1e3 - lat_ns / 1e9)
    assert len(firsts) == 2 and all(f >= seen["at"] - 0.002 for f in firsts)  # (no I/O before the gate opened)
    assert max(firsts) - min(firsts) < 0.05


def test_a_gate_opens_when_a_job_failed_setting_up_and_a_job_that_comes_late_is_not_held(tmp_path):
    most = int(Path("/proc/sys/fs/aio-max-nr").read_text())
    # (two jobs whose queues together pass the host's aio limit: one fails)
    gate, job = gated_job(tmp_path, f"ioengine=libaio\ndirect=1\niodepth={most * 6 // 10}\nfilename={tmp_path}/data")
    began = time.monotonic()
    said = mpi_rank.tool(["fio", "--output-format=json", str(job)], str(tmp_path / "out"), str(tmp_path / "err"),
                         deadline=60, cwd=str(gate), gate=str(gate), gate_jobs=2, ready=lambda: None)
    assert said["exit"] is not None and said["exit"] != 0 and time.monotonic() - began < 30
    assert "err=" in (tmp_path / "out").read_text()
    # a job that comes to the gate after it opened goes on at once (not held for ever)
    again = tmp_path / "again"
    (again / "ready").mkdir(parents=True)
    late = f"{gate_line(again)}; sleep 0.2; ( read x || : ) < {again}/go; echo through"
    began = time.monotonic()
    said = mpi_rank.tool(["sh", "-c", late], str(tmp_path / "out"), str(tmp_path / "err"), deadline=20,
                         gate=str(again), gate_jobs=1, ready=lambda: None)
    assert said["exit"] == 0 and (tmp_path / "out").read_text().endswith("through\n")
    assert time.monotonic() - began < 5


class Launched:
    """An MPI job as :func:`ranks.job` sees it, counting what is done to it (its ranks and
    Open MPI are not under test here: what becomes of a job from one cell to the next is)."""

    made: list[Launched] = []

    def __init__(self, hosts, hostnames, per_host, network, log) -> None:
        self.hosts, self.size, self.log = tuple(hosts), len(hosts) * per_host, log
        self.cells, self.launched, self.stopped, self.closed, self.running = 0, 0, 0, 0, True
        self.told: list[bool] = []  # (rest: True when kept, False when taken)
        self.closed_s = None
        Launched.made.append(self)

    def launch(self) -> None:
        self.launched += 1

    def rest(self, resting: bool) -> None:
        self.told.append(resting)

    def alive(self) -> bool:
        return self.running and not self.stopped and not self.closed

    def _stop(self) -> None:
        self.stopped += 1

    def close(self) -> None:
        self.closed += 1


class Reached(Named):
    """A client host reached through a prefix of its own (as ``docker exec`` into one lab's container)."""

    def __init__(self, name: str, via: str) -> None:
        super().__init__(name)
        self.via = via

    def wrap(self, argv):
        return [self.via, *map(str, argv)]


def test_an_attachments_cells_of_one_layout_share_a_job_and_a_failed_cell_ends_its_own(monkeypatch, tmp_path):
    from harness.execution import ranks

    monkeypatch.setattr(ranks, "MpiJob", Launched)
    Launched.made = []
    two = replace(target(), hosts=(Named("client1"), Named("client2")))
    decision = mpi_job.Decision("mpi", "test", ("client1", "client2"))

    def cell(on: Target = two, per_host: int = 1, fails: bool = False, hangs: bool = False) -> Launched:
        names = tuple(h.name for h in on.hosts)
        with ranks.job(on, mpi_job.Decision("mpi", "test", names), Launch(), per_host, tmp_path / "log", None, None,
                       None) as (lineup, views):
            assert len(views) == lineup.job.size
            if fails:
                raise DfsbenchError("a rank failed")
            lineup.hung = hangs  # (as RankLineup.tool sets it: a rank's tool killed past its deadline)
            return lineup.job

    # without an attachment keeping jobs (a cell on its own), each cell starts and ends its own
    first = cell()
    assert (first.launched, first.closed, first.cells, first.told) == (1, 1, 1, [])
    with ranks.kept_jobs():
        a = cell()
        assert a.told == [True] and a.closed == 0  # (kept, resting)
        assert cell() is a and (a.launched, a.cells, a.closed) == (1, 2, 0)  # (taken, not started again)
        assert a.told == [True, False, True]  # (woken for the cell, resting after it)
        with pytest.raises(DfsbenchError):
            cell(fails=True)  # (a failed cell's job is stopped at once and not kept)
        assert (a.stopped, a.closed, a.cells) == (1, 1, 3)
        b = cell()
        assert b is not a and b.launched == 1
        ranks.set_aside()  # (a cell that does not run as ranks: the kept job ends before it runs)
        assert b.closed == 1
        c = cell(per_host=2)
        assert c is not b and c.launched == 1
        d = cell(per_host=1)  # (another layout: the kept job ends, another starts)
        assert d is not c and c.closed == 1
        d.running = False  # (a kept job that ended meanwhile is not taken again)
        e = cell()
        assert e is not d and d.closed == 1
        f = cell(on=replace(two, hosts=(Reached("client1", "lab-a"), Reached("client2", "lab-a"))))
        assert f is not e and e.closed == 1  # (the same names, reached another way: other hosts)
        g = cell(on=replace(two, hosts=(Reached("client1", "lab-a"), Reached("client2", "lab-a"))), hangs=True)
        assert g is f and f.closed == 1  # (a rank's tool hung: what is left of it ends with its job)
        h = cell(on=replace(two, hosts=(Named("client1"),)))
    assert h.closed == 1 and ranks._kept is None  # (the job kept ends with the attachment)
    assert all(j.closed == 1 for j in Launched.made)


@pytest.mark.skipif(subprocess.run(["/usr/bin/python3", "-c", "import mpi4py"], capture_output=True).returncode != 0,
                    reason="needs Debian's python3-mpi4py (make test installs it)")
def test_a_rank_rests_between_cells_and_runs_the_next_cells_phase_when_woken(tmp_path):
    """The rank's side of a kept job, a real rank (one, Open MPI's singleton): told to rest
    and to wake, it says nothing and stays; it then runs a phase as ever, and leaves at the end."""
    engine = tmp_path / "engine.py"
    engine.write_text("import time\nENGINES = {'now': lambda **_: {'t': time.time()}}\n")
    phase = {"phase": "p", "calls": [{"script": str(engine), "engine": "now", "args": {}}], "one_clock": True}
    lines = [{"rest": True}, {"rest": False}, phase, {"rest": True}, {"rest": False}, phase, {"end": True}]
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader,tcp"}
    done = subprocess.run(["/usr/bin/python3", str(mpi_rank.__file__), "tag1"], input="".join(
        json.dumps(line) + "\n" for line in lines), capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    said = [json.loads(line[len(MARK):]) for line in done.stdout.splitlines() if line.startswith(MARK)]
    assert [next(iter(d)) for d in said] == ["hello", "began", "phase", "began", "phase"]
    results = [d["results"] for d in said if "results" in d]
    assert all(len(r) == 1 and "t" in r[0]["result"] for r in results)
