"""Backend ``rgw``: Ceph's object gateway (``radosgw``, beast frontend) on the lab's cluster, an
``s3`` target: an endpoint, a user of the run's own and a bucket of its own.

dfsbench starts the gateway for the attachment, as a Ceph client of its own
(``client.rgw.<tag>``, its key in a keyring of mode 0600):

- in the local lab, as a process of this host in the lab's ledger (node ``rgw``: what a fault
  names), on 127.0.0.1 at a port picked free;
- in the container lab, in the monitor's node (``ceph-mon1``: no OSD there), at port
  :data:`NODE_PORT` of its address, its files under :data:`NODE_DIR` on the node's volume, its
  end in the lab's ledger; the clients reach it over their shaped links. A fault that would kill
  or stop that node is refused while it runs (the node started again would not start it);

and in either:

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from backends.ceph.client import CephBackend, CephCli, CephService
from backends.ceph.lab import SESSION_SCRIPT, MonSession, pgs_clean
from backends.s3gateway import (CLIENT_NAME, anonymous, check_gateway, drop_buckets, drop_key_files, private_file,
                                node_address, node_log, private_on, said, secret_for_clients, site_target,
                                start_in_node)
from harness.api import daemons
from harness.api.attach import Attaching
from harness.api.contracts import Cluster, Options
from harness.api.systems import ContainerNode
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
NODE_PORT = 7480  # radosgw's port in a node of the container lab (a network namespace of its own)
NODE_DIR = "/data/dfsbench-rgw-"  # its directory there (+ its tag), on the node's data volume
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
    settings = ("settings",)
    Options = RgwOptions
    options: RgwOptions

    @classmethod
    def summary(cls, description: dict[str, Any]) -> tuple[str, ...]:
        return phrases(description, VERSION, REPLICAS, CLIENT)

    def creates(self) -> str:
        return "a bucket (in a lab, the gateway's pools and a user too)"

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        service = cluster.service("ceph", CephService, self.name)
        cli = CephCli.of(cluster, self.name)
        if cluster.environment == "existing":  # (the site's own gateway: nothing started, nothing made but a bucket)
            # (copies: the default zone's data pool where it is a replicated one; the zone the
            # endpoint serves is not asked, and an erasure-coded pool's size is not its copies)
            pool: dict[str, Any] = next((p for p in (service.cluster or {}).get("pools") or []
                                         if p.get("pool") == DATA_POOL), {})
            size = pool.get("size") if pool.get("type") == "replicated" else None
            return site_target(self, cluster, workdir, service.s3, {
                **cli.describe(), "gateway": "radosgw (the site's)",
                "pool": f"{DATA_POOL} (the default zone's)" if pool else None,
                "replicas": size if isinstance(size, int) and size > 0 else None}, cli.host)
        # (in the container lab, on the monitor's node; in the local lab, a process of this host)
        node = cli.server if isinstance(cli.server, ContainerNode) else None
        (node or cli.host).require("radosgw", "radosgw")
        tag = secrets.token_hex(3)
        who = f"client.rgw.dfsbench{tag}"
        root = workdir / "rgw"
        private = root / "private"
        log = root / "radosgw.log"
        inside = f"{NODE_DIR}{tag}"  # (its directory in the node)
        port = NODE_PORT if node is not None else daemons.free_ports(1)[0]
        host = node_address(node) if node is not None else "127.0.0.1"
        helper = None if node is None else node.wrap(["python3", "-c", SESSION_SCRIPT.read_text()], interactive=True)

        def session() -> MonSession:
            return MonSession(Path(service.conf), Path(service.keyring), root / "session.log", connect_timeout=60,
                              helper=helper)

        with Attaching(cluster.ledger, f"{self.name}/{self.variant}") as attach:
            with attach.step("the gateway's key files", lambda: drop_key_files(cluster, private, private.parent, node, inside)):
                private.mkdir(parents=True, mode=0o700, exist_ok=True)
                os.chmod(private, 0o700)
            (root / "run").mkdir(exist_ok=True)
            (root / "data").mkdir(exist_ok=True)
            pools = Pools(cli, session)
            # (the monitor's fast commits for the pools' making: a step of their own, so that a set-up
            # that fails anywhere takes them out again, by the ledger's commands where the session died)
            with attach.step("the monitor's fast commits while the gateway's pools are made"):
                pools.hurry()
            with attach.step("the gateway's pools", pools.delete) as pools.step:
                pools.create()
            pools.settle()
            with session() as mon:
                with attach.step(f"the key of {who}"):
                    cli.created(f"the key of {who}", "auth", "del", who)  # (first: a key made is never left)
                    # (its OSD caps: the pools whose application is rgw, the gateway's alone)
                    made = mon.command("auth get-or-create", entity=who, caps=["mon", "allow rw",
                                                                               "osd", "allow rwx tag rgw *=*"])
                key = _auth_key(made, who)
                size = mon.command("osd pool get", pool=DATA_POOL, var="size")
            keyring_text = f"[{who}]\n\tkey = {key}\n"
            if node is None:
                keyring = str(private_file(private / "keyring", keyring_text))
                places = {"data": str(root / "data"), "run": str(root / "run"), "log": str(log),
                          "asok": str(root / "run" / "radosgw.asok")}
            else:
                keyring = private_on(node, f"{inside}/private/keyring", keyring_text)
                places = {"data": f"{inside}/data", "run": f"{inside}/run", "log": f"{inside}/radosgw.log",
                          "asok": f"{inside}/run/radosgw.asok"}
            asok = str(places["asok"])
            argv = ["radosgw", "-f", "-c", service.conf, "-n", who, "--keyring", keyring,
                    f"--rgw_frontends=beast endpoint={'0.0.0.0' if node is not None else host}:{port}",
                    f"--rgw_data={places['data']}", f"--run_dir={places['run']}", f"--log_file={places['log']}",
                    f"--rgw_thread_pool_size={self.options.thread_pool_size}",
                    f"--admin_socket={asok if len(asok.encode()) <= SOCKET_MAX else ''}"]
            # (an anonymous ListBuckets: an empty listing, 200, once it serves)
            if node is None:
                # (undone as whatever process runs as the node then: a fault's restore starts another)
                with attach.step(f"radosgw at {host}:{port}", lambda: daemons.stop_node(cluster.ledger, GATEWAY_NODE)):
                    probe = (f"http://{host}:{port}/", 200)
                    gateway = daemons.launch(cluster.ledger, "radosgw", argv, root / "radosgw.out", cwd=root,
                                             grace=5.0, node=GATEWAY_NODE, probe=probe)
                    daemons.ready(lambda: daemons.answers(*probe), what="Ceph's object gateway to answer",
                                  timeout=120, interval=0.1, alive=gateway.died, log=log)
            else:
                with attach.step(f"radosgw on {node.label} at {host}:{port}"):
                    started = start_in_node(node, cluster.ledger, "radosgw", tag, argv, f"{inside}/run")
                    daemons.ready(lambda: anonymous(host, port, 200), what=f"Ceph's object gateway on {node.label} "
                                  "to answer", timeout=120, interval=0.2, alive=started.died,
                                  log=node_log(node, places["log"]))
            uid = f"dfsbench-{tag}"
            # (the user lives in the gateway's pools, and goes with them: no step of its own)
            made_user = cli.host.run(["radosgw-admin", *cli.args(), "user", "create", f"--uid={uid}",
                                      "--display-name=dfsbench"], check=False, timeout=120)
            access_key, secret_key = _keys(made_user.stdout, uid)
            if made_user.returncode != 0:
                raise DfsbenchError(f"radosgw-admin could not make the gateway's user {uid} (exit "
                                    f"{made_user.returncode}): {secret.redact(made_user.stderr)[-500:]}")
            secret_file = secret_for_clients(cluster, private / "secret", secret_key)
            conn = s3_engine.Connection(host, port, access_key, secret_key, timeout_s=30)
            bucket = "dfsbench-" + secrets.token_hex(4)
            # (emptied and deleted through the gateway; where it cannot be, with the pools that hold it)
            with attach.step(f"bucket {bucket}", lambda: drop_buckets(conn, bucket)):
                created = conn.create_bucket(bucket)
                if not created.ok:
                    raise DfsbenchError(f"{self.name}: the gateway would not create bucket {bucket}: {said(created)}",
                                        hint=f"its log: {log}" if node is None else
                                        f"its log on {node.label} ends: {node_log(node, places['log'])()}")
            check_gateway(conn, bucket, f"{self.name} at {host}:{port}")
            replicas = int(size.get("size", 0)) if isinstance(size, dict) else 0
            description: dict[str, Any] = {
                **cli.describe(), "client": CLIENT_NAME, "gateway": "radosgw (beast)", "replicas": replicas or None,
                "pool": DATA_POOL, "pool_size": replicas or None, "pg_num": PG_NUM,
                "endpoint": f"{host}:{port}", "signatures": "checked (a wrong secret is refused)",
                "environment": cluster.environment,
                "settings": {"rgw_thread_pool_size": str(self.options.thread_pool_size)},
            }
            if node is not None:
                description["gateway_node"] = node.label
            access = S3Access(host, port, access_key, secret_file, bucket)
            return Target("s3", None, self.name, self.variant, description, detach=attach.detach, access=access,
                          server_host=host, backing=Path(service.backing) if service.backing else None,
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

    def __init__(self, cli: CephCli, session: Callable[[], MonSession]) -> None:
        self.cli, self._session = cli, session
        self.made: list[str] = []
        self.ids: frozenset[str] = frozenset()
        self.step: Any = None
        self.hurried: frozenset[str] = frozenset()  # the ledger's removals of the fast commits' settings

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
