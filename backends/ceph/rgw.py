"""Backend ``rgw``: Ceph's object gateway (``radosgw``, beast frontend) on the lab's cluster, an
``s3`` target: an endpoint, a user of the run's own and a bucket of its own.

On the local lab dfsbench starts the gateway for the attachment, as a process of this host in
the lab's ledger (node ``rgw``: what a fault names), on 127.0.0.1 at a port picked free, as a
Ceph client of its own (``client.rgw.<tag>``, its key in a keyring of mode 0600):

- **its pools first**, :data:`POOLS`, :data:`PG_NUM` placement groups each, the application
  ``rgw`` enabled, awaited active+clean. Left to itself RGW creates them one after another as
  it needs them (about 2 s each, measured with radosgw 16.2.15): it answered its first request
  only after 9.3 s, and its first bucket and first PUT took seconds more; with the pools made
  first it answers in a fraction of a second. They are the lab's default zone's pools, made
  for the attachment and deleted at its end, with everything in them.
- **its threads**: ``thread_pool_size`` (``--rgw_thread_pool_size``: 512 by default, 601
  threads in all; 64 gives 153), a setting of the target.
- **a user** made by ``radosgw-admin user create``, whose keys radosgw-admin makes and prints
  (the secret never on a command line; hidden in every text dfsbench writes).

The gateway is then checked as every S3 gateway is (:func:`backends.s3gateway.check_gateway`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field

from backends.ceph.client import CephBackend, CephCli, CephService
from backends.ceph.lab import MonSession, pgs_clean
from backends.s3gateway import CLIENT_NAME, check_gateway, drop_buckets, private_file, said
from harness.api import daemons
from harness.api.attach import Attaching
from harness.api.contracts import Cluster, Options
from harness.api.tables import CLIENT, REPLICAS, VERSION, phrases
from harness.api.target import S3Access, Target
from harness.errors import DfsbenchError
from harness.system import proc, secret
from workloads import s3_engine

GATEWAY_NODE = "rgw"  # the gateway as a fault names it
PG_NUM = 8
# the default zone's pools (radosgw-admin zone get): its root, control, metadata, log and
# one-time-password pools, and the default placement's index, data and extra (multipart) pools
POOLS = (".rgw.root", "default.rgw.control", "default.rgw.meta", "default.rgw.log", "default.rgw.otp",
         "default.rgw.buckets.index", "default.rgw.buckets.data", "default.rgw.buckets.non-ec")
DATA_POOL = "default.rgw.buckets.data"
SOCKET_MAX = 100  # (a unix socket's path is at most 107 bytes)
CEPHX_KEY = re.compile(r"[A-Za-z0-9+/]{20,200}={0,2}")
ACCESS = re.compile(r"[A-Za-z0-9]{16,128}")
SECRET = re.compile(r"[A-Za-z0-9+/=]{20,128}")
SECRET_KEY = re.compile(r'"secret_key":\s*"([^"]{1,256})"')  # (to hide before the text is read)


class RgwOptions(Options):
    thread_pool_size: int = Field(64, ge=8, le=1024, description="radosgw's worker threads "
                                  "(--rgw_thread_pool_size; radosgw's own default is 512)")


class Rgw(CephBackend):
    name = "rgw"
    display = "Ceph RGW"
    target_kind = "s3"
    environments = frozenset({"local"})  # (its gateway is started on this host: the local lab only, so far)
    settings = ("settings",)
    Options = RgwOptions
    options: RgwOptions

    @classmethod
    def summary(cls, description: dict[str, Any]) -> tuple[str, ...]:
        return phrases(description, VERSION, REPLICAS, CLIENT)

    def creates(self) -> str:
        return "the gateway's pools, a user and a bucket"

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        service = cluster.service("ceph", CephService, self.name)
        cli = CephCli.of(cluster, self.name)
        cli.host.require("radosgw", "radosgw")
        tag = secrets.token_hex(3)
        who = f"client.rgw.dfsbench{tag}"
        root = workdir / "rgw"
        private = root / "private"
        log = root / "radosgw.log"
        port = daemons.free_ports(1)[0]
        asok = root / "run" / "radosgw.asok"
        with Attaching(cluster.ledger, f"{self.name}/{self.variant}") as attach:
            with attach.step("the gateway's key files", lambda: shutil.rmtree(private, ignore_errors=True)):
                private.mkdir(parents=True, mode=0o700, exist_ok=True)
                os.chmod(private, 0o700)
            (root / "run").mkdir(exist_ok=True)
            (root / "data").mkdir(exist_ok=True)
            pools = Pools(cli, service, root / "session.log")
            # (the monitor's fast commits for the pools' making: a step of their own, so that a set-up
            # that fails anywhere takes them out again, by the ledger's commands where the session died)
            with attach.step("the monitor's fast commits while the gateway's pools are made"):
                pools.hurry()
            with attach.step("the gateway's pools", pools.delete) as pools.step:
                pools.create()
            pools.settle()
            with MonSession(Path(service.conf), Path(service.keyring), root / "session.log",
                            connect_timeout=60) as mon:
                with attach.step(f"the key of {who}"):
                    cli.created(f"the key of {who}", "auth", "del", who)  # (first: a key made is never left)
                    # (its OSD caps: the pools whose application is rgw, the gateway's alone)
                    made = mon.command("auth get-or-create", entity=who, caps=["mon", "allow rw",
                                                                               "osd", "allow rwx tag rgw *=*"])
                key = _auth_key(made, who)
                keyring = private_file(private / "keyring", f"[{who}]\n\tkey = {key}\n")
                size = mon.command("osd pool get", pool=DATA_POOL, var="size")
            argv = ["radosgw", "-f", "-c", service.conf, "-n", who, "--keyring", str(keyring),
                    f"--rgw_frontends=beast endpoint=127.0.0.1:{port}", f"--rgw_data={root / 'data'}",
                    f"--run_dir={root / 'run'}", f"--log_file={log}",
                    f"--rgw_thread_pool_size={self.options.thread_pool_size}",
                    f"--admin_socket={asok if len(str(asok).encode()) <= SOCKET_MAX else ''}"]
            # (undone as whatever process runs as the node then: a fault's restore starts another)
            with attach.step(f"radosgw at 127.0.0.1:{port}", lambda: daemons.stop_node(cluster.ledger, GATEWAY_NODE)):
                # (an anonymous ListBuckets: an empty listing, 200, once it serves)
                probe = (f"http://127.0.0.1:{port}/", 200)
                gateway = daemons.launch(cluster.ledger, "radosgw", argv, root / "radosgw.out", cwd=root, grace=5.0,
                                         node=GATEWAY_NODE, probe=probe)
                daemons.ready(lambda: daemons.answers(*probe), what="Ceph's object gateway to answer", timeout=120,
                              interval=0.1, alive=gateway.died, log=log)
            uid = f"dfsbench-{tag}"
            # (the user lives in the gateway's pools, and goes with them: no step of its own)
            made_user = cli.host.run(["radosgw-admin", *cli.args(), "user", "create", f"--uid={uid}",
                                      "--display-name=dfsbench"], check=False, timeout=120)
            access_key, secret_key = _keys(made_user.stdout, uid)
            if made_user.returncode != 0:
                raise DfsbenchError(f"radosgw-admin could not make the gateway's user {uid} (exit "
                                    f"{made_user.returncode}): {secret.redact(made_user.stderr)[-500:]}")
            secret_file = private_file(private / "secret", secret_key + "\n")
            conn = s3_engine.Connection("127.0.0.1", port, access_key, secret_key, timeout_s=30)
            bucket = "dfsbench-" + secrets.token_hex(4)
            # (emptied and deleted through the gateway; where it cannot be, with the pools that hold it)
            with attach.step(f"bucket {bucket}", lambda: drop_buckets(conn, bucket)):
                created = conn.create_bucket(bucket)
                if not created.ok:
                    raise DfsbenchError(f"{self.name}: the gateway would not create bucket {bucket}: {said(created)}",
                                        hint=f"its log: {log}")
            check_gateway(conn, bucket, f"{self.name} at 127.0.0.1:{port}")
            replicas = int(size.get("size", 0)) if isinstance(size, dict) else 0
            description: dict[str, Any] = {
                **cli.describe(), "client": CLIENT_NAME, "gateway": "radosgw (beast)", "replicas": replicas or None,
                "pool": DATA_POOL, "pool_size": replicas or None, "pg_num": PG_NUM,
                "endpoint": f"127.0.0.1:{port}", "signatures": "checked (a wrong secret is refused)",
                "environment": cluster.environment,
                "settings": {"rgw_thread_pool_size": str(self.options.thread_pool_size)},
            }
            access = S3Access("127.0.0.1", port, access_key, str(secret_file), bucket)
            return Target("s3", None, self.name, self.variant, description, detach=attach.detach, access=access,
                          server_host="127.0.0.1", backing=Path(service.backing) if service.backing else None,
                          host=cli.host, hosts=cluster.clients or (cli.host,), server=cli.server)


# while the gateway's pools are made or deleted (a map committed every 50 ms, not every second;
# the placement groups reported every second, not every 5): what the lab's bring-up sets too
# (backends.ceph.lab.BRING_UP_SETTINGS, FAST_REPORTING), taken out again at once
SETTING_UP = (("mon", "paxos_propose_interval", "0.05"), ("global", "mgr_stats_period", "1"),
              ("osd", "osd_mon_report_interval", "1"))


class Pools:
    """The gateway's pools (:data:`POOLS`), made and deleted with the monitor committing at
    once (:data:`SETTING_UP`, each in the ledger until taken out again): 16 commands took 16 s
    at its one commit a second. A pool of those names that is there already is not the
    attachment's: it is refused, never taken over (and deleted at the end)."""

    def __init__(self, cli: CephCli, service: CephService, log: Path) -> None:
        self.cli, self.service, self.log = cli, service, log
        self.made: list[str] = []
        self.ids: frozenset[str] = frozenset()
        self.step: Any = None
        self.hurried: frozenset[str] = frozenset()  # the ledger's removals of the fast commits' settings

    def _session(self) -> MonSession:
        return MonSession(Path(self.service.conf), Path(self.service.keyring), self.log, connect_timeout=60)

    def hurry(self) -> None:
        """The monitor committing at once (each setting's removal in the ledger first)."""
        with self._session() as mon:
            for who, name, value in SETTING_UP:
                self.hurried |= self.cli.created(f"the setting {name} while the gateway's pools change", "config",
                                                 "rm", who, name)
                mon.command("config set", who=who, name=name, value=value)

    def settle(self) -> None:
        """The monitor's fast commits taken out again (and out of the ledger)."""
        with self._session() as mon:
            for who, name, _ in SETTING_UP:
                mon.command("config rm", who=who, name=name)
        self.cli.forget(self.hurried)
        self.hurried = frozenset()

    def create(self) -> None:
        with self._session() as mon:
            there = [p for p in POOLS if p in (mon.command("osd pool ls") or [])]
            if there:
                raise DfsbenchError(f"the cluster has the object gateway's pools already ({', '.join(there)}): they are "
                                    "not this attachment's to make, fill and delete",
                                    hint="take the lab down and up again, or measure rgw on a lab without a gateway")
            for pool in POOLS:  # (its removal in the ledger first: a pool made is never left, a missing one is fine)
                self.ids |= self.cli.created(f"pool {pool}", "osd", "pool", "delete", pool, pool,
                                             "--yes-i-really-really-mean-it")
                self.made.append(pool)
                mon.command("osd pool create", pool=pool, pg_num=PG_NUM, pgp_num=PG_NUM)
                mon.command("osd pool application enable", pool=pool, app="rgw")
            expected = _pgs(mon)
            proc.wait_for(lambda: pgs_clean(mon, expected), what="the gateway's pools active+clean", timeout=120,
                          interval=0.2)

    def delete(self) -> None:
        """Every pool made, with what is in it (the gateway's users and buckets)."""
        if not self.made:
            return
        self.hurry()
        try:
            with self._session() as mon:
                for pool in list(self.made):
                    mon.command("osd pool delete", pool=pool, pool2=pool, yes_i_really_really_mean_it=True)
                    self.made.remove(pool)
        finally:
            self.settle()
        self.cli.forget(self.ids)
        self.ids = frozenset()


def _pgs(mon: MonSession) -> int:
    """How many placement groups the cluster has in all (every pool's pg_num)."""
    dump = mon.command("osd pool ls", detail="detail")
    return sum(int(p.get("pg_num", 0)) for p in dump) if isinstance(dump, list) else 0


def _auth_key(made: Any, who: str) -> str:
    """The key ``auth get-or-create`` gave ``who`` (a list of one entity: entity, key, caps):
    base64 and nothing else, since it becomes a line of a keyring."""
    found = made[0].get("key") if isinstance(made, list) and made and isinstance(made[0], dict) else None
    if not isinstance(found, str) or not CEPHX_KEY.fullmatch(found):
        raise DfsbenchError(f"the monitor made the key of {who} and said it in a form dfsbench does not read")
    return secret.remember(found)


def _keys(printed: str, uid: str) -> tuple[str, str]:
    """The access and secret key ``radosgw-admin user create`` printed for ``uid`` (the
    secret remembered as one before anything else is done with the text)."""
    for found in SECRET_KEY.findall(printed):
        secret.remember(found)
    try:
        doc = json.loads(printed)
        found = next(k for k in doc["keys"] if k.get("user") == uid)
        access, key = str(found["access_key"]), str(found["secret_key"])
    except (ValueError, KeyError, TypeError, StopIteration):
        raise DfsbenchError(f"radosgw-admin made user {uid} and printed no keys dfsbench could read",
                            hint="check radosgw-admin's version (dfsbench reads its 'keys' of 'user create')") from None
    if not ACCESS.fullmatch(access) or not SECRET.fullmatch(key):
        raise DfsbenchError(f"radosgw-admin gave user {uid} keys dfsbench does not take as keys (letters, digits, "
                            "'+', '/', '=')")
    return access, secret.remember(key)
