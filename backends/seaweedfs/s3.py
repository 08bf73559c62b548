"""Backend ``seaweedfs-s3``: SeaweedFS's S3 gateway (``weed s3``) on the lab's filer, an
``s3`` target: an endpoint, a key pair of the run's own and a bucket of its own.

On the local lab dfsbench starts the gateway for the attachment, as a process of this host in
the lab's ledger (node ``s3``: what a fault names), on 127.0.0.1 at ports picked free, its unix
socket under the attachment (by default weed opens 8181 and 9101 and puts its socket in the
system's temporary directory). It is given an identity config with one key pair, made for the
attachment: without one, weed accepts any key and checks no signature, which would compare a
gateway that authenticates every request with one that does not. The secret goes to files of
mode 0600 (the identity config, and the file the workload's engine reads), never to a command
line, and is hidden in everything dfsbench writes.

Before it is handed out, the gateway is checked to be what it claims: a signed request is
answered, an object put comes back byte for byte and is deleted, and a request signed with a
wrong secret is refused (403). The attachment's end deletes every object and bucket of the
run's bucket name, then stops the gateway and removes its key files.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path
from typing import Any

from backends.s3gateway import CLIENT_NAME, answers, check_gateway, drop_buckets, private_file, said
from backends.seaweedfs.system import SeaweedFS
from backends.seaweedfs.weed import OWN_CONFIG, Replication, SeaweedService, s3_argv, s3_identities, weed_binary
from harness.api import daemons
from harness.api.attach import Attaching
from harness.api.contracts import Backend, Cluster
from harness.api.tables import CLIENT, REPLICAS, VERSION, Placement, phrases
from harness.api.target import S3Access, Target
from harness.errors import DfsbenchError
from harness.system import secret
from harness.system.hosts import LOCAL
from workloads import s3_engine

GATEWAY_NODE = "s3"  # the gateway as a fault names it
SOCKET_MAX = 100  # (a unix socket's path is at most 107 bytes)


class SeaweedS3(Backend):
    name = "seaweedfs-s3"
    display = "SeaweedFS S3"
    network = True
    requires = frozenset({"seaweedfs"})
    target_kind = "s3"
    environments = frozenset({"local"})  # (its gateway is started on this host: the local lab only, so far)
    settings = ("settings",)
    topology = ("replication",)

    @classmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        """As for its file system: the gateway's filer client sends each byte once, to the
        volume server the master assigned, which sends the other copies (SeaweedFS.placement)."""
        return SeaweedFS.placement(description)

    @classmethod
    def summary(cls, description: dict[str, Any]) -> tuple[str, ...]:
        return phrases(description, VERSION, ("replication", "replication {replication}"), REPLICAS, CLIENT)

    def creates(self) -> str:
        return "a bucket"

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        service = cluster.service("seaweedfs", SeaweedService, self.name)
        host = cluster.clients[0] if cluster.clients else LOCAL
        root = workdir / "seaweedfs-s3"
        private = root / "private"
        access_key = "dfsbench" + secrets.token_hex(6)
        secret_key = secret.remember(secrets.token_urlsafe(24))
        port, grpc = daemons.free_ports(2)
        socket = root / "s3.sock"
        log = root / "s3.log"
        with Attaching(cluster.ledger, f"{self.name}/{self.variant}") as attach:
            with attach.step("the gateway's key files", lambda: shutil.rmtree(private, ignore_errors=True)):
                private.mkdir(parents=True, mode=0o700, exist_ok=True)
                os.chmod(private, 0o700)
                config = private_file(private / "identities.json", s3_identities(access_key, secret_key))
                secret_file = private_file(private / "secret", secret_key + "\n")
            for name in OWN_CONFIG:  # (a stray security.toml of this host's is not the gateway's)
                (root / name).write_text("")
            argv = s3_argv(service.weed or weed_binary(), service.filer, port, grpc, str(config),
                           str(socket) if len(str(socket).encode()) <= SOCKET_MAX else "")
            conn = s3_engine.Connection("127.0.0.1", port, access_key, secret_key, timeout_s=10)
            # (undone as whatever process runs as the node then: a fault's restore starts another)
            with attach.step(f"weed s3 at 127.0.0.1:{port}", lambda: daemons.stop_node(cluster.ledger, GATEWAY_NODE)):
                # (with identities, weed refuses an anonymous ListBuckets: 403, once it serves)
                probe = (f"http://127.0.0.1:{port}/", 403)
                gateway = daemons.launch(cluster.ledger, "weed s3", argv, log, cwd=root, grace=2.0, node=GATEWAY_NODE,
                                         probe=probe)
                daemons.ready(lambda: answers(conn), what="SeaweedFS's S3 gateway to answer a signed request",
                              timeout=60, interval=0.1, alive=gateway.died, log=log)
                serves, how = daemons.answers(*probe)
                if not serves:
                    raise DfsbenchError(f"{self.name}: the gateway {how}: a fault could not tell it back",
                                        hint=f"its log: {log}")
            bucket = "dfsbench-" + secrets.token_hex(4)
            with attach.step(f"bucket {bucket}", lambda: drop_buckets(conn, bucket)):
                made = conn.create_bucket(bucket)
                if not made.ok:
                    raise DfsbenchError(f"{self.name}: the gateway would not create bucket {bucket}: "
                                        f"{said(made)}", hint=f"its log: {log}")
            check_gateway(conn, bucket, f"{self.name} at 127.0.0.1:{port}")
            chosen = service.replication
            description: dict[str, Any] = {
                "system": "seaweedfs", "client": CLIENT_NAME, "gateway": "weed s3", "version": service.version,
                "replication": chosen or None, "replicas": Replication(chosen).copies if chosen else None,
                "volume_servers": service.volume_servers, "filer": service.filer,
                "endpoint": f"127.0.0.1:{port}", "signatures": "checked (a wrong secret is refused)",
                "environment": cluster.environment, "storage_nodes": service.storage_nodes,
            }
            if service.settings:
                description["settings"] = dict(service.settings)
            access = S3Access("127.0.0.1", port, access_key, str(secret_file), bucket)
            return Target("s3", None, self.name, self.variant, description, detach=attach.detach, access=access,
                          server_host="127.0.0.1", host=host, hosts=cluster.clients or (host,),
                          server=cluster.servers.get("127.0.0.1"))
