"""An existing SeaweedFS: its master's and filer's addresses as the client hosts reach them,
and where it is mounted already (if it is); nothing is created there but the mounts and
the directories of dfsbench's attachments."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from backends.s3gateway import S3Site, found_on_site
from backends.seaweedfs.weed import REPLICATION_HELP, Address, ReplicationText, SeaweedService, Topology, get_json
from harness.api.contracts import Options, PlainPath, host_address
from harness.api.systems import SiteHosts
from harness.errors import BadInput, DfsbenchError


def _address(v: str) -> str:
    """A site's weed address: host:port or host:port.grpcport, the host an IPv4 address or
    a DNS name, the ports 1-65535."""
    parsed = Address.parse(v) if re.fullmatch(r"[A-Za-z0-9.-]{1,253}:\d{1,5}(\.\d{1,5})?", v) else None
    if parsed is None:
        raise ValueError(f"'{v[:80]}' is not a SeaweedFS address (host:port, or host:port.grpcport, "
                         "e.g. 10.0.0.5:9333)")
    host_address(parsed.host)
    if not all(0 < p < 65536 for p in (parsed.port, parsed.grpc or parsed.port)):
        raise ValueError(f"'{v}': a port is 1 to 65535")
    return v


SeaweedAddress = Annotated[str, Field(pattern=r"^[A-Za-z0-9.-]{1,253}:[0-9]{1,5}(\.[0-9]{1,5})?$"),
                           AfterValidator(_address)]


class SeaweedSite(Options):
    """How the client hosts reach an existing SeaweedFS."""

    master: SeaweedAddress = Field(description="the master, e.g. 10.0.0.5:9333 (host:port.grpcport where its "
                                   "gRPC port is not the HTTP port + 10000)")
    filer: SeaweedAddress | None = Field(None, description="the filer the client hosts mount, e.g. 10.0.0.5:8888 "
                                         "(default: from the mount, where 'mounted' is given)")
    mounted: PlainPath | None = Field(None, description="it is already mounted here on every client host: use "
                                      "it as it is")
    replication: ReplicationText | None = Field(None, description="the site's default replication, where its "
                                             "volumes do not tell (" + REPLICATION_HELP + ")")
    s3: S3Site | None = Field(None, description="the site's S3 gateway (weed s3), for the backend seaweedfs-s3: "
                              "{endpoint: HOST:PORT, access_key: ${NAME}, secret_key: ${NAME}}")

    @model_validator(mode="after")
    def _where(self) -> SeaweedSite:
        if self.filer is None and self.mounted is None:
            raise ValueError("give 'filer' (the filer the client hosts mount), or 'mounted' (where it is "
                             "mounted already)")
        return self


def service(spec: SeaweedSite, offer: SiteHosts) -> SeaweedService:
    """The site's SeaweedFS as the first client host reaches it: its master's topology and
    version; the filer given, or the one the mount names; the default replication given, or
    the one all its volumes are of."""
    host = offer.hosts[0]
    top = Topology.of(get_json(f"http://{Address.parse(spec.master).http}/dir/status", host))
    filer = spec.filer
    if filer is None:  # (a weed mount's source: host:port.grpcport:/path)
        entry = host.mount_entry(Path(str(spec.mounted)))
        source = entry.source.rsplit(":", 1)[0] if entry is not None else ""
        try:
            Address.parse(source)
        except DfsbenchError:
            raise DfsbenchError(f"{host.name}:{spec.mounted} is not a SeaweedFS mount (its source: "
                                f"'{source[:80]}')", hint="give the site's 'filer'") from None
        filer = source
    # (the master's default replication is a flag it does not show: its volumes' tell, where
    # they are all of one; else the site's description must)
    written = sorted(top.writable)
    if spec.replication is None and len(written) != 1:
        said = f"volumes of {', '.join(written)}" if written else "no volume yet"
        raise BadInput(f"the SeaweedFS master at {spec.master} does not say its replication ({said}), so how "
                       "many copies each write makes is unknown (it sets the storage side's ceiling)",
                       hint="give environment.options.seaweedfs.replication (the master's "
                            "-defaultReplication, e.g. '002')")
    chosen = spec.replication or written[0]
    return SeaweedService(master=spec.master, filer=filer, replication=chosen, volume_servers=len(top.servers),
                          version=top.version, storage_nodes=len({s.rsplit(":", 1)[0] for s in top.servers}),
                          mounted=str(spec.mounted or ""), s3=found_on_site(spec.s3, offer.private, "seaweedfs"))
