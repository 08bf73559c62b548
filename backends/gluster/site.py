"""GlusterFS on a site that exists: the volume and the servers that hand out its volfile (the
``gluster`` section of the existing environment's options), and what the volume is, read
with ``gluster volume info`` from the first client host. dfsbench creates nothing there."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from backends.gluster import client as gluster_client
from backends.gluster.client import FSTYPE, GlusterCli, GlusterService
from harness.api.contracts import HostName, Name, Options, PlainPath
from harness.errors import BadInput, DfsbenchError
from harness.system.hosts import Host


class GlusterSpec(Options):
    """The GlusterFS volume and the servers that hand out its volfile."""

    servers: list[HostName] = Field(default_factory=list, description="servers of the volume "
                                    "(the first hands out the volfile; default: from the mount)")
    volume: Name | None = Field(None, description="the volume (default: "
                               "from the mount)")
    mounted: PlainPath | None = Field(None, description="the volume is already mounted here on every "
                                 "client host: use it as it is")
    replica: int | None = Field(None, ge=1, le=12, description="the volume's replica count, where "
                                "'gluster volume info' cannot be read from the client hosts")

    @model_validator(mode="after")
    def _where(self) -> GlusterSpec:
        if self.mounted is None and (not self.servers or self.volume is None):
            raise ValueError("give 'servers' and 'volume', or 'mounted' (a path where the volume "
                             "is already mounted)")
        return self


def gluster_service(spec: GlusterSpec, hosts: list[Host]) -> GlusterService:
    """The volume as the first client host sees it: ``gluster volume info`` asked of its
    server (the CLI's --remote-host), else what the mount and the config say."""
    host = hosts[0]
    servers, volume = list(spec.servers), spec.volume
    mounted = str(spec.mounted) if spec.mounted else ""
    if spec.mounted is not None:  # the user's mount: verified before anything runs
        from harness.api.mounts import GivenMount

        entry = GivenMount(tuple(hosts), spec.mounted, (FSTYPE,), "GlusterFS volume").mount()
        server, _, vol = entry.source.partition(":")
        servers = servers or [server]
        volume = volume or vol.lstrip("/")
    assert volume is not None
    info: dict[str, Any] = {}
    version = "unknown"
    if host.has("gluster"):
        got = host.run(["gluster", f"--remote-host={servers[0]}", "--mode=script", "volume", "info", volume,
                        "--xml"], check=False, timeout=60)
        if got.returncode == 0:
            info = volume_info(got.stdout)
    got = host.run(["glusterfs", "--version"], check=False, timeout=30)
    if got.returncode == 0 and got.stdout.split()[1:2]:
        version = got.stdout.split()[1] + " (client)"
    if not info:
        if spec.replica is None:
            raise BadInput(f"'gluster volume info {volume}' could not be read from {host.name}, so the "
                           "volume's replica count is unknown (it sets how often a write crosses the "
                           "client's link)",
                           hint="install glusterfs-server's CLI there, or give environment.options.gluster.replica")
        info = {"type": "Replicate" if spec.replica > 1 else "Distribute", "replica": spec.replica,
                "bricks": [], "options": {}, "source": "config"}
    kind = {"Replicate": "replicate", "Distributed-Replicate": "distributed-replicate",
            "Disperse": "disperse", "Distributed-Disperse": "distributed-disperse",
            "Distribute": "distribute"}.get(info["type"], str(info["type"]).lower())
    return GlusterService(host=servers[0], volume=volume, volume_type=kind,
                          replica=info.get("replica") if "disperse" not in kind else None,
                          bricks=list(info.get("bricks", [])), socket="", version=version, log_dir="",
                          phases={}, volume_options=dict(info.get("options", {})),
                          redundancy=info.get("redundancy"), mounted=mounted,
                          cluster={"volume_info": info, "servers": servers})


def gluster_health(g: GlusterService, host: Host) -> tuple[bool, str]:
    """The volume's health as a client host sees it: its bricks online and nothing left to
    heal (the one reader of backends.gluster.client), asked of its server."""
    if not g.bricks or not host.has("gluster"):
        return False, (f"volume {g.volume} ({g.volume_type}): its bricks cannot be asked from {host.name} "
                       "(no 'gluster volume info' there), so its health is not known")
    try:
        return gluster_client.health(GlusterCli(host, f"--remote-host={g.host}"), g.volume, len(g.bricks),
                                     g.keeps_copies)
    except DfsbenchError as exc:
        return False, exc.message


def volume_info(xml: str) -> dict[str, Any]:
    """The parts of ``gluster volume info --xml`` that say how the volume is built."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return {}
    vol = root.find(".//volInfo/volumes/volume")
    if vol is None:
        return {}

    def num(tag: str) -> int | None:
        text = vol.findtext(tag) if vol is not None else None
        return int(text) if text and text.isdigit() else None

    bricks = [b.findtext("name") or (b.text or "").strip() for b in vol.findall("bricks/brick")]
    options = {o.findtext("name") or "": o.findtext("value") or "" for o in vol.findall("options/option")}
    return {"name": vol.findtext("name"), "type": vol.findtext("typeStr"), "status": vol.findtext("statusStr"),
            "replica": num("replicaCount"), "redundancy": num("redundancyCount") or None,
            "disperse": num("disperseCount") or None, "bricks": bricks, "options": options,
            "transport": vol.findtext("transport"), "source": "gluster volume info"}

