"""Backend ``seaweedfs-s3``: SeaweedFS's S3 gateway (``weed s3``) on the lab's filer, an
``s3`` target: an endpoint, a key pair of the run's own and a bucket of its own.

dfsbench starts the gateway for the attachment: in the local lab as a process of this host in
the lab's ledger (node ``s3``: what a fault names), on 127.0.0.1 at ports picked free, its unix
socket under the attachment (by default weed opens 8181 and 9101 and puts its socket in the
system's temporary directory); in the container lab in the filer's node (the master's,
``seaweedfs-master1``: no volume server there), at :data:`NODE_PORTS` of its address, its files
under :data:`NODE_DIR` on the node's volume, its end in the lab's ledger (a fault that would kill
or stop that node is refused while it runs). It is given an identity config with one key pair, made for the
attachment: without one, weed accepts any key and checks no signature, which would compare a
gateway that authenticates every request with one that does not. The secret goes to files of
mode 0600 (the identity config, and the file the workload's engine reads), never to a command
line (in a node, it goes in on a command's standard input), and is hidden in everything
dfsbench writes.

Before it is handed out, the gateway is checked to be what it claims: a signed request is
answered, an object put comes back byte for byte and is deleted, and a request signed with a
wrong secret is refused (403). The attachment's end deletes every object and bucket of the
run's bucket name, then stops the gateway and removes its key files.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from backends.s3gateway import (CLIENT_NAME, anonymous, answers, check_gateway, drop_buckets, drop_key_files,
                                node_address, node_log, private_file, private_on, said, secret_for_clients,
                                site_target, start_in_node)
from backends.seaweedfs.system import SeaweedFS
from backends.seaweedfs.weed import OWN_CONFIG, Replication, SeaweedService, s3_argv, s3_identities, weed_binary
from harness.api import daemons
from harness.api.attach import Attaching
from harness.api.contracts import Backend, Cluster
from harness.api.systems import ContainerNode
from harness.api.tables import CLIENT, REPLICAS, VERSION, Placement, phrases
from harness.api.target import S3Access, Target
from harness.errors import DfsbenchError
from harness.system import secret
from harness.system.hosts import LOCAL
from workloads import s3_engine

GATEWAY_NODE = "s3"  # the gateway as a fault names it
SOCKET_MAX = 100  # (a unix socket's path is at most 107 bytes)
NODE_PORTS = (8333, 18333)  # its HTTP and gRPC ports in a node of the container lab (weed's defaults)
NODE_DIR = "/data/dfsbench-s3-"  # its directory there (+ its tag), on the node's data volume


class SeaweedS3(Backend):
    name = "seaweedfs-s3"
    display = "SeaweedFS S3"
    network = True
    requires = frozenset({"seaweedfs"})
    target_kind = "s3"
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
        if cluster.environment == "existing":  # (the site's own gateway: nothing started, nothing made but a bucket)
            chosen = service.replication
            return site_target(self, cluster, workdir, service.s3, {
                "system": "seaweedfs", "gateway": "weed s3 (the site's)", "version": service.version,
                "replication": chosen or None, "replicas": Replication(chosen).copies if chosen else None,
                "volume_servers": service.volume_servers, "storage_nodes": service.storage_nodes}, host)
        # (in the container lab, on the filer's node; in the local lab, a process of this host)
        found = cluster.servers.get(service.filer.rsplit(":", 1)[0])
        node = found if isinstance(found, ContainerNode) else None
        root = workdir / "seaweedfs-s3"
        private = root / "private"
        access_key = "dfsbench" + secrets.token_hex(6)
        secret_key = secret.remember(secrets.token_urlsafe(24))
        tag = secrets.token_hex(3)
        inside = f"{NODE_DIR}{tag}"  # (its directory in the node)
        port, grpc = NODE_PORTS if node is not None else daemons.free_ports(2)
        address = node_address(node) if node is not None else "127.0.0.1"
        socket = f"{inside}/s3.sock" if node is not None else str(root / "s3.sock")
        log = root / "s3.log"
        identities = s3_identities(access_key, secret_key)
        with Attaching(cluster.ledger, f"{self.name}/{self.variant}") as attach:
            with attach.step("the gateway's key files", lambda: drop_key_files(cluster, private, private.parent, node, inside)):
                private.mkdir(parents=True, mode=0o700, exist_ok=True)
                os.chmod(private, 0o700)
                if node is None:
                    config = str(private_file(private / "identities.json", identities))
                else:
                    config = private_on(node, f"{inside}/private/identities.json", identities)
                secret_file = secret_for_clients(cluster, private / "secret", secret_key)
            argv = s3_argv(service.weed or weed_binary(), service.filer, port, grpc, config,
                           socket if len(socket.encode()) <= SOCKET_MAX else "",
                           bind="0.0.0.0" if node is not None else "127.0.0.1")
            conn = s3_engine.Connection(address, port, access_key, secret_key, timeout_s=10)
            # (with identities, weed refuses an anonymous ListBuckets: 403, once it serves)
            if node is None:
                for name in OWN_CONFIG:  # (a stray security.toml of this host's is not the gateway's)
                    (root / name).write_text("")
                # (undone as whatever process runs as the node then: a fault's restore starts another)
                with attach.step(f"weed s3 at {address}:{port}",
                                 lambda: daemons.stop_node(cluster.ledger, GATEWAY_NODE)):
                    probe = (f"http://{address}:{port}/", 403)
                    gateway = daemons.launch(cluster.ledger, "weed s3", argv, log, cwd=root, grace=2.0,
                                             node=GATEWAY_NODE, probe=probe)
                    daemons.ready(lambda: answers(conn), what="SeaweedFS's S3 gateway to answer a signed request",
                                  timeout=60, interval=0.1, alive=gateway.died, log=log)
                    serves, how = daemons.answers(*probe)
            else:
                with attach.step(f"weed s3 on {node.label} at {address}:{port}"):
                    node.write_files({f"{inside}/{name}": "" for name in OWN_CONFIG})
                    started = start_in_node(node, cluster.ledger, "weed s3", tag, argv, inside)
                    daemons.ready(lambda: answers(conn), what=f"SeaweedFS's S3 gateway on {node.label} to answer a "
                                  "signed request", timeout=60, interval=0.2, alive=started.died,
                                  log=node_log(node, f"{inside}/gateway.out"))
                    serves, how = anonymous(address, port, 403)
            def hint() -> str:  # (read only where something failed: the node's log is a command away)
                return f"its log: {log}" if node is None else \
                    f"its log on {node.label} ends: {node_log(node, f'{inside}/gateway.out')()}"

            if not serves:
                raise DfsbenchError(f"{self.name}: the gateway {how}: a fault could not tell it back", hint=hint())
            bucket = "dfsbench-" + secrets.token_hex(4)
            with attach.step(f"bucket {bucket}", lambda: drop_buckets(conn, bucket)):
                made = conn.create_bucket(bucket)
                if not made.ok:
                    raise DfsbenchError(f"{self.name}: the gateway would not create bucket {bucket}: "
                                        f"{said(made)}", hint=hint())
            check_gateway(conn, bucket, f"{self.name} at {address}:{port}")
            chosen = service.replication
            description: dict[str, Any] = {
                "system": "seaweedfs", "client": CLIENT_NAME, "gateway": "weed s3", "version": service.version,
                "replication": chosen or None, "replicas": Replication(chosen).copies if chosen else None,
                "volume_servers": service.volume_servers, "filer": service.filer,
                "endpoint": f"{address}:{port}",
                "signatures": "checked (a wrong secret is refused)",
                "environment": cluster.environment, "storage_nodes": service.storage_nodes,
            }
            if node is not None:
                description["gateway_node"] = node.label
            if service.settings:
                description["settings"] = dict(service.settings)
            access = S3Access(address, port, access_key, secret_file, bucket)
            return Target("s3", None, self.name, self.variant, description, detach=attach.detach, access=access,
                          server_host=address, host=host, hosts=cluster.clients or (host,),
                          server=node if node is not None else cluster.servers.get("127.0.0.1"))
