"""A throwaway Ceph cluster as plain processes under one directory.

1 mon, 1 mgr, N OSDs on file-backed BlueStore, 1 MDS, a CephFS, pools of size 3.
Keys are generated here (no ceph-authtool call per key) and imported by the monitor's
mkfs; OSD mkfs runs offline and in parallel with the monitor's; every monitor command
goes through one long-lived session (see ceph_session.py) instead of one CLI per call.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from backends.ceph.client import CephService, health
from harness.api.lab import SAFE_CHARACTERS, SAFE_PATH
from harness.errors import BadInput, DfsbenchError
from harness.system import proc, signals
from harness.api.daemons import Daemons
from harness.system.ledger import Ledger

SESSION_SCRIPT = Path(__file__).with_name("ceph_session.py")


def gen_key() -> str:
    """A CephX secret: le16 type (1 = AES), le32 sec, le32 nsec, le16 length, 16 bytes."""
    now = time.time()
    header = struct.pack("<HIIH", 1, int(now), int((now % 1) * 1e9), 16)
    return base64.b64encode(header + os.urandom(16)).decode()


def lab_keys(osds: int) -> dict[str, str]:
    """A key for each daemon of a lab (mon, admin, mgr x, mds a, osd.0 …)."""
    return {"mon.": gen_key(), "client.admin": gen_key(), "mgr.x": gen_key(), "mds.a": gen_key(),
            **{f"osd.{i}": gen_key() for i in range(osds)}}


CAPS = {
    "mon.": {"mon": "allow *"},
    "client.admin": {"mon": "allow *", "osd": "allow *", "mds": "allow *", "mgr": "allow *"},
    "mgr.x": {"mon": "allow profile mgr", "osd": "allow *", "mds": "allow *"},
    "mds.a": {"mon": "allow profile mds", "osd": "allow *", "mds": "allow *", "mgr": "allow profile mds"},
}
OSD_CAPS = {"mon": "allow profile osd", "mgr": "allow profile osd", "osd": "allow *"}


def keyring_text(keys: dict[str, str]) -> str:
    """A keyring holding these keys with their daemons' capabilities."""
    lines = []
    for name, key in keys.items():
        lines += [f"[{name}]", f"\tkey = {key}"]
        lines += [f'\tcaps {svc} = "{cap}"' for svc, cap in CAPS.get(name, OSD_CAPS).items()]
    return "\n".join(lines) + "\n"


def lab_conf(fsid: str, mon_addr: str, data: str, *, replicas: int, pg_num: int, osd_size: int,
             osd_memory_target: int, extra: dict[str, dict[str, str]] | None = None) -> str:
    """The ceph.conf of a throwaway lab (on this host, or in containers): its monitor at
    ``mon_addr`` (msgr2 only), cephx, every daemon's data under ``data`` (BlueStore OSDs on
    block files there), the settings every lab shares, and ``extra`` settings by section.

    A path may come from a config (the lab directory): a ``data`` path with a character the
    file reads as syntax ('$' starts a metavariable, '#' and ';' a comment, a backslash
    continues a line) and any value that would end its line or start a comment are
    refused, never written."""
    if not SAFE_PATH.fullmatch(data):
        raise BadInput(f"cannot write ceph.conf: the lab's data directory {data!r} holds characters "
                       "ceph.conf reads as syntax", hint=f"give the lab a directory of {SAFE_CHARACTERS}")
    sections: dict[str, dict[str, str]] = {
        "global": {
            "fsid": fsid, "mon_host": f"[{mon_addr}]", "ms_bind_msgr1": "false",
            "auth_cluster_required": "cephx", "auth_service_required": "cephx",
            "auth_client_required": "cephx", "auth_allow_insecure_global_id_reclaim": "false",
            "osd_pool_default_size": str(replicas), "osd_pool_default_min_size": str(max(1, replicas - 1)),
            "osd_pool_default_pg_num": str(pg_num), "osd_pool_default_pgp_num": str(pg_num),
            "osd_pool_default_pg_autoscale_mode": "off", "mon_allow_pool_delete": "true",
            "mon_allow_pool_size_one": "true",
            # the lab shares its disk with the host: do not warn about the host's free space
            "mon_data_avail_warn": "2", "mon_data_avail_crit": "1",
            "mon_warn_on_pool_no_redundancy": "false", "mon_max_pg_per_osd": "1000",
        },
        "mon": {"mon_data": f"{data}/mon/$id"},
        "mgr": {"mgr_data": f"{data}/mgr/$id"},
        "osd": {"osd_data": f"{data}/osd/$id", "osd_objectstore": "bluestore",
                # outside osd_data: inside it, BlueStore's own 'block' symlink loops (ELOOP)
                "bluestore_block_path": f"{data}/osd-block/$id.block", "bluestore_block_create": "true",
                "bluestore_block_size": str(osd_size), "bluestore_fsck_on_mkfs": "false",
                "osd_memory_target": str(osd_memory_target)},
        "mds": {"mds_data": f"{data}/mds/$id"},
    }
    for section, settings in (extra or {}).items():
        sections.setdefault(section, {}).update(settings)
    lines = ["# Written by dfsbench for a throwaway lab."]
    for section, settings in sections.items():
        lines.append(f"[{section}]")
        for key, value in settings.items():
            if any(c in value for c in "\n\r#;\\"):
                raise BadInput(f"cannot write ceph.conf: {key} = {value!r} holds a line break, '#', ';' "
                               "or a backslash",
                               hint="give the lab a directory whose path has none of them (lab_dir)")
            lines.append(f"{key} = {value}")
        lines.append("")
    return "\n".join(lines)


def ceph_version() -> str:
    """The version of the Ceph daemons on this host (asked of ``ceph-mon``, a C++ program:
    the ``ceph`` CLI says the same after half a second of Python start-up)."""
    out = proc.run(["ceph-mon", "--version"], timeout=30).stdout.split()
    return out[2] if len(out) > 2 else "unknown"


# The manager modules each release always runs (one it cannot load is a health error). The
# local lab's manager loads these alone: loading all ~25 that the packages install takes a
# manager 3-9 s of Python on two cores before it can take its first PG report, and the
# others are never enabled in a lab (its initial modules are none: restful, iostat and nfs
# serve nothing here). A release not listed loads everything, as before.
ALWAYS_ON_MGR_MODULES = {
    "16": ("balancer", "crash", "devicehealth", "orchestrator", "pg_autoscaler", "progress",
           "rbd_support", "status", "telemetry", "volumes"),
}
MGR_MODULE_PATH = Path("/usr/share/ceph/mgr")  # the packages' mgr_module_path

# Settings that bring the local lab up sooner, set once the monitor answers and removed
# once it is healthy, so that what runs afterwards runs with the defaults: PG states
# reported every second instead of every 5 s (FAST_REPORTING, as the container lab), and a
# monitor that commits each change at once — by default it batches changes for up to a
# second, and a bring-up is a chain of a dozen changes (OSDs made, booted and placed,
# pools, the file system, the MDS's steps), each waiting on the one before; and OSDs whose
# block device's I/O thread polls every 10 ms instead of 250: an OSD opens and closes its
# block file five times as it starts, and each close waits out one poll (1.4 s an OSD).
BRING_UP_SETTINGS = [("mon", "paxos_propose_interval", "0.05"), ("osd", "bdev_aio_poll_ms", "10")]
# Kept for the lab's life: OSDs on files have no SMART data for the manager's device health
# module to scrape, and its scrape would make a pool (and wait for its PG) as the lab comes up.
LAB_SETTINGS = [("mgr", "mgr/devicehealth/enable_monitoring", "false")]
# how soon a lab's cluster notices a node that is gone (a fault): OSDs ping each other every
# second and report a peer silent for 4 s, and one report is enough (defaults: 6 s, 20 s,
# 2 reporters) — so a kill is noticed within seconds, as the labs' faults need
DETECTION = {"osd_heartbeat_interval": "1", "osd_heartbeat_grace": "4", "mon_osd_min_down_reporters": "1",
             "mon_osd_adjust_heartbeat_grace": "false"}


class MonSession:
    """Monitor (and manager) commands over one connection held by a helper process.

    Every answer is awaited with a deadline: the command's own ``timeout`` (which the
    helper hands to librados: its call ignores the one it is given, and waits as long as a
    monitor or a manager does not answer), the connection's ``connect_timeout``, each with
    :data:`SESSION_SLACK` for the helper itself. A thread that is not the main one stops
    waiting when the run is interrupted (:func:`harness.system.signals.check`), and a wait
    ends early when ``alive`` says what it waits on has died. A session whose answer did
    not come is ended (its helper killed): a late answer would be taken for the next
    command's."""

    def __init__(self, conf: Path, keyring: Path, log: Path, connect_timeout: float = 60,
                 helper: list[str] | None = None, alive: Callable[[], str | None] | None = None,
                 daemon_log: Path | None = None) -> None:
        """``helper``: the command that runs the session script elsewhere (in a container
        of the docker lab); by default, this host's interpreter of the ``ceph`` CLI.
        ``alive``: what says (a message) that the monitor this waits on died, whose log
        (``daemon_log``, of this host) the error then ends with."""
        if helper is None:
            helper = [_shebang_interpreter(Path(proc.require_tool("ceph", "ceph-common"))), str(SESSION_SCRIPT)]
        self.log = log
        self.alive, self.daemon_log = alive, daemon_log
        self._errlog = open(log, "ab")
        self._proc = subprocess.Popen(
            [*helper, str(conf), str(keyring), str(connect_timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errlog, text=True,
            start_new_session=True)
        self._answers: queue.Queue[str] = queue.Queue()
        self._awaited: str | None = None  # what an answer not yet read is to
        threading.Thread(target=self._listen, daemon=True, name="dfsbench-ceph-session").start()
        try:
            hello = self._read("the Ceph monitor to accept a connection", connect_timeout)
        except BaseException:
            self.close()
            raise
        if hello["ret"] != 0:
            self.close()
            raise DfsbenchError(f"cannot connect to the Ceph monitor: {hello['err']}",
                                hint=f"see the monitor log in {log.parent}")

    def _listen(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._answers.put(line)
        self._answers.put("")  # (the helper ended)

    def _read(self, what: str, timeout: float) -> dict[str, Any]:
        self._awaited = what
        start = time.monotonic()
        while True:
            signals.check()
            try:
                line = self._answers.get(timeout=0.25)
                break
            except queue.Empty:
                pass
            died = self.alive() if self.alive is not None else None
            waited = time.monotonic() - start
            if died:
                self.close()
                tail = proc.log_tail(self.daemon_log, 5) if self.daemon_log is not None else ""
                raise DfsbenchError(f"{died}, while dfsbench waited {waited:.0f} s for {what}"
                                    + (f"; the end of its log:\n{tail}" if tail else ""))
            if waited > timeout + SESSION_SLACK:
                self.close()
                raise DfsbenchError(f"no answer from Ceph after {waited:.0f} s: waited for {what}",
                                    hint=f"the session's errors are in {self.log}:\n{proc.log_tail(self.log)}")
        if not line:
            self.close()
            raise DfsbenchError(f"the Ceph command session ended unexpectedly (waiting for {what})",
                                hint=f"its errors are in {self.log}:\n{proc.log_tail(self.log)}")
        self._awaited = None
        return dict(json.loads(line))

    def command(self, prefix: str, *, target: str = "mon", check: bool = True,
                timeout: int = 30, **args: Any) -> Any:
        """Send one command; return its parsed JSON output (or text when not JSON)."""
        assert self._proc.stdin is not None
        if self._awaited is not None or self._proc.poll() is not None:
            raise DfsbenchError(f"ceph command '{prefix}' not sent: the session ended "
                                f"({self._awaited or 'its helper exited'})")
        cmd = {"prefix": prefix, "format": "json", **args}
        self._proc.stdin.write(json.dumps({"cmd": cmd, "target": target, "timeout": timeout}) + "\n")
        self._proc.stdin.flush()
        reply = self._read(f"the {target}'s answer to '{prefix}'", timeout)
        if reply["ret"] != 0:
            if check:
                raise DfsbenchError(f"ceph command '{prefix}' failed ({reply['ret']}): {reply['err']}")
            return None
        text = reply["out"].strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text

    def close(self) -> None:
        """End the helper: at once where an answer is still awaited (it waits in librados),
        else once it has read the end of its input."""
        if self._proc.poll() is None:
            if self._awaited is None and self._proc.stdin:
                try:
                    self._proc.stdin.close()
                    self._proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if self._proc.poll() is None:
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._proc.wait()
        self._errlog.close()

    def __enter__(self) -> MonSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# seconds the session's helper may take of its own beyond a command's (or the connection's)
# timeout before its answer is given up: a Python's start and the import of Ceph's bindings
# on a loaded host, the reply's JSON
SESSION_SLACK = 20.0


def _shebang_interpreter(script: Path) -> str:
    first = script.read_bytes()[:200].split(b"\n", 1)[0].decode()
    if first.startswith("#!"):
        parts = first[2:].split()
        if parts and Path(parts[0]).name != "env":
            return parts[0]
        if len(parts) > 1:
            return shutil.which(parts[1]) or sys.executable
    return sys.executable


def longest_socket(root: Path, osds: int) -> Path:
    """The longest unix socket path of a daemon of a lab of ``osds`` OSDs under ``root``: its
    admin socket, ``run/$name.asok``, of the OSD of the longest id (``ceph daemon`` reaches a
    daemon through it). (A client process's own, ``run/$cluster-$name.$pid.asok``, is 20 bytes
    longer: where it does not fit, the client says so in its log and runs on — nothing of
    dfsbench's asks a client through it — and labs 68 to 87 bytes deep, such as pytest's
    temporary directories under xdist, work.)"""
    return root / "run" / f"osd.{osds - 1}.asok"


class CephLab:
    """Brings a Ceph cluster up under ``root``; every resource goes into ``ledger``."""

    def __init__(self, root: Path, ledger: Ledger, *, osds: int = 3, replicas: int = 3,
                 osd_size: int = 16 << 30, osd_memory_target: int = 1536 << 20,
                 pg_num: int = 16, ready_timeout: float = 120) -> None:
        self.root, self.ledger = root, ledger
        self.osds, self.replicas, self.osd_size = osds, replicas, osd_size
        self.osd_memory_target, self.pg_num = osd_memory_target, pg_num
        self.timeout = ready_timeout
        self.conf = root / "ceph.conf"
        self.keyring = root / "keyring"
        self.log_dir = root / "log"
        self.fsid = str(uuid.uuid4())
        self.mon_port = proc.free_port()
        self._daemons = Daemons(ledger)
        self._t0 = time.monotonic()
        self.phases: dict[str, float] = {}  # phase -> seconds since start when it ended

    def _phase(self, name: str) -> None:
        self.phases[name] = round(time.monotonic() - self._t0, 2)

    # -- files --------------------------------------------------------------------------
    def _write_conf(self, mgr_modules: Path | None) -> None:
        r = self.root
        trimmed: dict[str, dict[str, str]] = {} if mgr_modules is None else {
            "mon": {"mgr_initial_modules": ""}, "mgr": {"mgr_module_path": str(mgr_modules)}}
        self.conf.write_text(lab_conf(
            self.fsid, f"v2:127.0.0.1:{self.mon_port}", str(r), replicas=self.replicas, pg_num=self.pg_num,
            osd_size=self.osd_size, osd_memory_target=self.osd_memory_target, extra={
                "global": {
                    "public_addr": "127.0.0.1", "cluster_addr": "127.0.0.1", "ms_bind_ipv6": "false",
                    "keyring": str(self.keyring), "run_dir": f"{r}/run", "admin_socket": f"{r}/run/$name.asok",
                    "pid_file": f"{r}/run/$name.pid", "log_file": f"{self.log_dir}/$name.log",
                    "log_to_stderr": "false", "err_to_stderr": "true",
                    "mon_cluster_log_file": f"{self.log_dir}/cluster.log", "crash_dir": f"{r}/crash",
                    "exporter_sock_dir": f"{r}/run",
                    # one host: three replicas live on three OSDs of this host
                    "osd_crush_chooseleaf_type": "0", **DETECTION},
                # one admin socket per client process, so parallel clients (fio, rbd, rados) never clash
                "client": {"admin_socket": f"{r}/run/$cluster-$name.$pid.asok"}, **trimmed}))

    def _mgr_modules(self, version: str) -> Path | None:
        """A manager module directory of links to the modules this release always runs (and
        the two files they import), or None where the release or the packages' directory
        is not the one known (the manager then loads all it finds)."""
        keep = ALWAYS_ON_MGR_MODULES.get(version.split(".")[0])
        if keep is None or not all((MGR_MODULE_PATH / name).is_dir() for name in keep):
            return None
        made = self.root / "mgr-modules"
        made.mkdir()
        for entry in MGR_MODULE_PATH.iterdir():
            if entry.name in keep or entry.suffix == ".py":
                (made / entry.name).symlink_to(entry)
        return made

    def _write_keyring(self) -> dict[str, str]:
        keys = lab_keys(self.osds)
        self.keyring.write_text(keyring_text(keys))
        self.keyring.chmod(0o600)
        return keys

    # -- processes ----------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str | os.PathLike[str]], stage: int = 0, grace: float = 15,
               node: str | None = None) -> None:
        self._daemons.launch(name, argv, self.log_dir / f"{name}.stdout", stage=stage, grace=grace, node=node)

    def _died(self) -> str | None:
        return self._daemons.died()

    def _mkfs_osd(self, i: int, key: str) -> str:
        osd_uuid = str(uuid.uuid4())
        (self.root / "osd" / str(i)).mkdir(parents=True)
        # (the mkfs too closes its block file several times: see BRING_UP_SETTINGS)
        proc.run(["ceph-osd", "-c", self.conf, "-i", str(i), "--mkfs", "--osd-uuid", osd_uuid,
                  "--key", key, "--no-mon-config", "--bdev_aio_poll_ms", "10"], timeout=self.timeout,
                 hint="BlueStore mkfs on a file failed; check free disk space")
        return osd_uuid

    def up(self) -> CephService:
        for sub in ("run", "log", "mon", "mgr/x", "mds/a", "osd-block", "crash"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        version = ceph_version()
        mgr_modules = self._mgr_modules(version)
        self._write_conf(mgr_modules)
        keys = self._write_keyring()
        monmap = self.root / "monmap"
        proc.run(["monmaptool", "--create", "--clobber", "--fsid", self.fsid,
                  "--addv", "a", f"[v2:127.0.0.1:{self.mon_port}]", monmap])
        (self.root / "mgr/x/keyring").write_text(f"[mgr.x]\n\tkey = {keys['mgr.x']}\n")
        (self.root / "mds/a/keyring").write_text(f"[mds.a]\n\tkey = {keys['mds.a']}\n")

        with ThreadPoolExecutor(max_workers=self.osds + 1) as pool:
            mon_mkfs = pool.submit(proc.run, ["ceph-mon", "-c", self.conf, "--mkfs", "-i", "a",
                                              "--monmap", monmap, "--keyring", self.keyring],
                                   timeout=self.timeout)
            osd_jobs = [pool.submit(self._mkfs_osd, i, keys[f"osd.{i}"]) for i in range(self.osds)]
            mon_mkfs.result()
            # stage 1: stopped after the daemons that report their shutdown to it
            self._spawn("ceph-mon.a", ["ceph-mon", "-f", "-c", self.conf, "-i", "a"], stage=1)
            self._spawn("ceph-mgr.x", ["ceph-mgr", "-f", "-c", self.conf, "-i", "x",
                                       "--keyring", self.root / "mgr/x/keyring"])
            # The MDS lingers for seconds after SIGTERM; once its clients are gone it has
            # nothing to flush that a throwaway lab needs, so it gets a short grace.
            self._spawn("ceph-mds.a", ["ceph-mds", "-f", "-c", self.conf, "-i", "a",
                                       "--keyring", self.root / "mds/a/keyring"], grace=2)
            osd_uuids = [job.result() for job in osd_jobs]
        self._phase("mkfs (mon and OSDs in parallel)")

        with MonSession(self.conf, self.keyring, self.log_dir / "session.log",
                        connect_timeout=self.timeout, alive=self._died, daemon_log=self.log_dir / "mon.a.log") as mon:
            self._phase("monitor answers")
            # (the monitor's own first: the others are then committed at once)
            bring_up = [*BRING_UP_SETTINGS, *((who, option, "1") for who, option in FAST_REPORTING)]
            for who, option, value in bring_up:
                mon.command("config set", who=who, name=option, value=value)
            for who, option, value in LAB_SETTINGS:  # (forced: no manager has named its options yet)
                mon.command("config set", who=who, name=option, value=value, force=True)
            for i, osd_uuid in enumerate(osd_uuids):
                mon.command("osd new", uuid=osd_uuid, id=i)
                self._spawn(f"ceph-osd.{i}", ["ceph-osd", "-f", "-c", self.conf, "-i", str(i)], node=f"osd.{i}")
            self._phase("OSDs created and started")
            proc.wait_for(lambda: osds_up(mon, self.osds), what=f"{self.osds} OSDs up and in",
                          timeout=self.timeout, interval=0.1, alive=self._died,
                          log=self.log_dir / "ceph-osd.0.log")
            self._phase("OSDs up")
            # the pools only once every OSD is up: a PG made while the OSDs still join changes
            # its acting set as each one does, and each change waits out the read lease of the
            # set before (PGs 'laggy', and the MDS's first writes with them, for up to 16 s)
            mon.command("osd pool create", pool="cephfs_metadata", pg_num=self.pg_num)
            mon.command("osd pool create", pool="cephfs_data", pg_num=self.pg_num)
            mon.command("fs new", fs_name="cephfs", metadata="cephfs_metadata", data="cephfs_data")
            self._phase("pools and file system made")
            self.wait_healthy(mon)
            for who, option, _ in reversed(bring_up):
                mon.command("config rm", who=who, name=option)
        return CephService(conf=str(self.conf), keyring=str(self.keyring),
                        mon_addr=f"v2:127.0.0.1:{self.mon_port}", fs_name="cephfs",
                        data_pool="cephfs_data", metadata_pool="cephfs_metadata",
                        replicas=self.replicas, osds=self.osds, version=version,
                        log_dir=str(self.log_dir), phases=self.phases,
                        backing=str(self.root / "osd-block"),
                        settings={"osd_memory_target": f"{self.osd_memory_target >> 20} MiB",
                                  "pg_num": str(self.pg_num), "pg_autoscale_mode": "off",
                                  "mon_data_avail_warn": "2%",
                                  "osd_crush_chooseleaf_type": "0 (replicas across OSDs of one host)",
                                  **{option: value for _, option, value in LAB_SETTINGS}, **DETECTION,
                                  **({} if mgr_modules is None else {
                                      "mgr_module_path": "the always-on modules alone",
                                      "mgr_initial_modules": "none"})},
                           storage_nodes=1)

    def wait_healthy(self, mon: MonSession) -> None:
        proc.wait_for(lambda: mds_active(mon), what="the MDS to become active",
                      timeout=self.timeout, interval=0.1, alive=self._died,
                      log=self.log_dir / "ceph-mds.a.log")
        self._phase("MDS active")
        proc.wait_for(lambda: pgs_clean(mon, 2 * self.pg_num), what="all PGs active+clean",
                      timeout=self.timeout, interval=0.1, alive=self._died,
                      log=self.log_dir / "ceph-mgr.x.log")
        self._phase("PGs active+clean (via mgr)")
        proc.wait_for(lambda: health(mon.command("health", detail="detail")), what="HEALTH_OK",
                      timeout=self.timeout, interval=0.1, alive=self._died,
                      log=self.log_dir / "ceph-mgr.x.log")
        self._phase("HEALTH_OK")


FAST_REPORTING = [("global", "mgr_stats_period"), ("osd", "osd_mon_report_interval")]


def pgs_clean(mon: MonSession, at_least: int) -> tuple[bool, str]:
    stat = mon.command("pg stat", target="mgr")
    summary = stat.get("pg_summary", stat)
    total = summary.get("num_pgs", 0)
    by_state = {s["name"]: s["num"] for s in summary.get("num_pg_by_state", [])}
    text = ", ".join(f"{n} {name}" for name, n in by_state.items()) or "no PG stats yet"
    return total >= at_least and by_state.get("active+clean", 0) == total, text


def osds_up(mon: MonSession, want: int) -> tuple[bool, str]:
    stat = mon.command("osd stat")
    up, inn = stat.get("num_up_osds", 0), stat.get("num_in_osds", 0)
    return up >= want and inn >= want, f"{up} up, {inn} in of {want}"


def mds_active(mon: MonSession) -> tuple[bool, str]:
    dump = mon.command("fs dump")
    states = [info.get("state", "?") for fs in dump.get("filesystems", [])
              for info in fs.get("mdsmap", {}).get("info", {}).values()]
    return "up:active" in states, ", ".join(states) or "no MDS in any file system yet"
