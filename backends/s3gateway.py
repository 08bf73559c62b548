"""What every S3 gateway dfsbench starts or is given has in common, whatever system serves it
(SeaweedFS's ``weed s3``, Ceph's RGW): the key files of mode 0600, the check that a gateway is
what it claims to be before a workload is handed it, and the end of the buckets of a run.

The check (:func:`check_gateway`): an object put comes back byte for byte and is deleted, and a
request signed with a wrong secret is refused (403) — a gateway that checks no signature would
compare unfairly with one that does.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from harness.api.attach import Attaching
from harness.api.contracts import Backend, Cluster, Options
from harness.api.fields import host_address
from harness.api.systems import GATEWAY_PIDFILES, ContainerNode
from harness.api.target import S3Access, Target
from harness.errors import BadInput, DfsbenchError
from harness.system import proc, secret
from harness.system.hosts import LOCAL, Host, PidfileProcess, stop_script
from harness.system.ledger import Ledger
from harness.system.secret import Expanded, SecretReference, expand
from workloads import s3_engine

CLIENT_NAME = "S3 (dfsbench's keep-alive SigV4 client)"
PROBE = b"dfsbench probe: what is put comes back\n" * 100


def private_file(path: Path, text: str) -> Path:
    """A file only its owner reads, made so before a byte of it is written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


# an access key names a user (it is no secret: it goes into every request's header, and may be
# said); nothing that ends a header's word or the signature's credential scope ('/')
ACCESS_KEY = re.compile(r"[A-Za-z0-9+=_.-]{3,128}")
SECRET_KEY = re.compile(r"[!-~]{8,256}")  # (a line of a file: printable, no space, no line's end)


class S3Site(Options):
    """An S3 gateway of a site that exists (``environment.options.<system>.s3``), as this
    machine and the client hosts reach it: dfsbench makes, checks and removes the run's buckets
    from this machine, and the workloads' engines on the client hosts send their requests."""

    endpoint: str = Field(pattern=r"^[A-Za-z0-9.-]{1,253}:[0-9]{1,5}$", description="the gateway's host:port, "
                          "plain HTTP and path-style requests, e.g. 10.0.0.5:7480")
    access_key: Expanded = Field(description="the access key of a user that may create buckets (or ${NAME}, "
                                 "file:PATH); it names the user, and is no secret: records and logs may say it")
    secret_key: SecretReference = Field(description="its secret key (better ${NAME} or file:PATH): it goes only "
                                        "to files of mode 0600, on this machine and the client hosts")
    region: str = Field("us-east-1", pattern=r"^[a-z0-9-]{1,32}$", description="the region its signatures name")

    @model_validator(mode="after")
    def _reachable_as_given(self) -> S3Site:
        host, port = self.endpoint.rsplit(":", 1)
        try:
            host_address(host)
        except ValueError as exc:
            raise ValueError(f"endpoint: {exc}") from None
        if not 0 < int(port) < 65536:
            raise ValueError(f"endpoint: port {port} is not 1 to 65535")
        if not ACCESS_KEY.fullmatch(self.access_key):
            raise ValueError("access_key: 3 to 128 letters, digits or + = _ . -")
        if not SECRET_KEY.fullmatch(expand(self.secret_key)):
            raise ValueError("secret_key: 8 to 256 printable characters, no space")
        return self


def found_on_site(spec: S3Site | None, private: Path | None, system: str) -> dict[str, Any]:
    """What a backend needs of the site's gateway (kept with the system's service, in the
    lab's ledger): its endpoint, region and access key, and the file of mode 0600 in
    dfsbench's own directory on this machine that holds its secret key (never the key itself).
    Nothing where the site has no gateway, or where no file may be written (a status check)."""
    if spec is None or private is None:
        return {}
    host, port = spec.endpoint.rsplit(":", 1)
    path = private_file(private / f"{system}-s3.secret", secret.remember(expand(spec.secret_key)) + "\n")
    return {"host": host, "port": int(port), "region": spec.region,
            "access_key": spec.access_key, "secret_file": str(path)}


def site_target(backend: Backend, cluster: Cluster, workdir: Path, site: dict[str, Any],
                description: dict[str, Any], host: Host) -> Target:
    """The target of an S3 backend on a site that exists: the site's gateway (``site``, from
    :func:`found_on_site`), checked as every gateway is, a bucket of the run's own made there
    and removed at the end, the secret key in a file of mode 0600 on every client host."""
    name = f"{backend.name}/{backend.variant}"
    if not site:
        raise BadInput(f"{name} on an existing site: the site's description names no S3 gateway",
                       hint=f"add environment.options.{sorted(backend.requires)[0]}.s3: {{endpoint: HOST:PORT, "
                            "access_key: ${NAME}, secret_key: ${NAME}}")
    address, port = str(site["host"]), int(site["port"])
    secret_key = secret.remember(Path(site["secret_file"]).read_text().rstrip("\n"))
    conn = s3_engine.Connection(address, port, str(site["access_key"]), secret_key, timeout_s=30,
                                region=str(site["region"]))
    reached, how = answers(conn)
    if not reached:
        raise DfsbenchError(f"{name}: the S3 gateway at {address}:{port} did not answer a signed request from this "
                            f"machine: {how}", hint="dfsbench makes and checks the run's bucket from this machine: "
                            "check the endpoint, the keys, and that this machine reaches it")
    private = workdir / "s3-private"
    with Attaching(cluster.ledger, name) as attach:
        with attach.step("the secret key's files", lambda: drop_key_files(cluster, private, private)):
            secret_file = secret_for_clients(cluster, private / "secret", secret_key)
        bucket = "dfsbench-" + secrets.token_hex(4)
        # (undone by the ledger's command, after a crash too: the site's gateway keeps what a run left)
        with attach.step(f"bucket {bucket}"):
            cluster.ledger.command([sys.executable, "-m", "backends.s3gateway", "drop", address, str(port),
                                    str(site["access_key"]), str(site["secret_file"]), str(site["region"]), bucket],
                                   f"bucket {bucket} (and the workloads' {bucket}-…) at {address}:{port}")
            made = conn.create_bucket(bucket)
            if not made.ok:
                raise DfsbenchError(f"{name}: the gateway would not create bucket {bucket}: {said(made)}",
                                    hint="the site's user must be allowed to create buckets")
        check_gateway(conn, bucket, f"{name} at {address}:{port}")
        access = S3Access(address, port, str(site["access_key"]), secret_file, bucket, region=str(site["region"]))
        description = {**description, "client": CLIENT_NAME, "endpoint": f"{address}:{port}",
                       "signatures": "checked (a wrong secret is refused)", "environment": cluster.environment}
        return Target("s3", None, backend.name, backend.variant, description, detach=attach.detach, access=access,
                      server_host=address, host=host, hosts=cluster.clients or (host,))


def private_on(host: Host, path: str, text: str) -> str:
    """:func:`private_file` on a host dfsbench reaches by command (a node of the container
    lab): its directory and the file made only its owner's before a byte is written; the text
    goes in on standard input, never on a command line."""
    host.run(["sh", "-c", 'umask 077 && mkdir -p "$(dirname "$1")" && cat > "$1"', "sh", path], input=text,
             timeout=60)
    return path


def secret_for_clients(cluster: Cluster, path: Path, secret_key: str) -> str:
    """The secret key in a file of mode 0600 at ``path`` (a path under the cluster's work
    directory) on every client host of the cluster, where the workloads' engines read it."""
    for host in cluster.clients or (LOCAL,):
        if host.local:
            path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
            private_file(path, secret_key + "\n")
        else:
            private_on(host, str(path), secret_key + "\n")
    return str(path)


def forget_secret(cluster: Cluster, place: Path) -> None:
    """The directory that holds the key files (the attachment's own there) gone from every
    client host that is not this machine, each tried; those that could not be are an error."""
    failed = []
    for host in cluster.clients:
        if not host.local:
            try:
                host.run(["rm", "-rf", str(place)], timeout=60)
            except DfsbenchError as exc:
                failed.append(f"{host.label}: {exc.message}")
    if failed:
        raise DfsbenchError(f"could not remove {place} (its key files): {'; '.join(failed)}")


def drop_key_files(cluster: Cluster, private: Path, there: Path, node: ContainerNode | None = None,
                   inside: str = "") -> None:
    """A gateway's key files gone: here (``private``), on every client host (``there``: the
    directory that holds them there alone), and in the gateway's node (its directory
    ``inside``), the node's whatever the clients did."""
    shutil.rmtree(private, ignore_errors=True)
    try:
        forget_secret(cluster, there)
    finally:
        if node is not None:
            node.run(["rm", "-rf", inside], timeout=60)


def node_address(node: ContainerNode) -> str:
    """The node's address on the lab's network, as this machine and the clients reach it: one
    IPv4 address (nothing else goes into a URL)."""
    import ipaddress

    found = node.address()
    try:
        return str(ipaddress.IPv4Address(found))
    except ValueError:
        raise DfsbenchError(f"the container lab's node {node.label} has no single address on the lab's network "
                            f"(docker inspect said {found[:80]!r})") from None


def node_log(node: ContainerNode, path: str) -> Callable[[], str | None]:
    """A gateway's log in its node, for an error (its directory goes with a failed attachment)."""
    return lambda: node.tail(Path(path))


def start_in_node(node: ContainerNode, ledger: Ledger, what: str, tag: str, argv: list[str],
                  cwd: str) -> PidfileProcess:
    """A gateway started in a node of the container lab, in its foreground (``docker exec
    -d``) in the directory ``cwd`` there (made), its pid in a file of
    :data:`~harness.api.systems.GATEWAY_PIDFILES` (where a fault that would stop the node finds
    it), its output in ``cwd``/gateway.out; its end in the ledger before it starts (by its
    pid: nothing else of the node)."""
    assert tag.isalnum()
    pidfile = f"{GATEWAY_PIDFILES}{tag}.pid"
    ledger.command(node.wrap(["sh", "-c", stop_script(pidfile, 5.0)]), f"{what} on {node.label}")
    node.daemon("sh", "-c", 'mkdir -p "$2" && cd "$2" && echo $$ > "$1" && shift 2 && exec "$@" >> gateway.out 2>&1',
                "sh", pidfile, cwd, *argv)
    started = PidfileProcess(node, pidfile, Path(f"{cwd}/gateway.out"))
    # (docker exec -d returns before the process writes its pid)
    proc.wait_for(lambda: (started.pid() is not None, "no pid yet"), what=f"{what} to start on {node.label}",
                  timeout=30, interval=0.1, log=node_log(node, f"{cwd}/gateway.out"))
    return started


def said(answer: s3_engine.Answer) -> str:
    """An answer for a message: its status (or its transport error) and its body's start."""
    if answer.status == 0:
        return f"no answer ({answer.error})"
    text = s3_engine.printable(answer.body[:200].decode("utf-8", "replace"))
    return f"status {answer.status}" + (f": {text}" if text else "")


def anonymous(host: str, port: int, status: int) -> tuple[bool, str]:
    """Whether a gateway answers an anonymous GET of / with ``status`` (what it answers once it
    serves: RGW an empty listing, 200; weed s3 with identities a refusal, 403)."""
    import http.client

    conn = http.client.HTTPConnection(host, port, timeout=2.0)
    try:
        conn.request("GET", "/")
        got = conn.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return False, f"does not answer ({exc})"
    finally:
        conn.close()
    return got == status, f"answers {got}" + ("" if got == status else f", not {status}")


def answers(conn: s3_engine.Connection) -> tuple[bool, str]:
    """Whether the gateway answers a signed request (ListBuckets) with a success."""
    got = conn.request("GET", "/")
    return got.ok, said(got)


def check_gateway(conn: s3_engine.Connection, bucket: str, what: str) -> None:
    """The gateway is what it claims to be: an object put comes back byte for byte, with its
    length, and goes when deleted; a request signed with a wrong secret is refused."""
    key = f"dfsbench-probe-{secrets.token_hex(4)}"
    put = conn.put(bucket, key, PROBE)
    if not put.ok:
        raise DfsbenchError(f"{what}: a PUT of {len(PROBE)} bytes was not accepted: {said(put)}")
    got = conn.get(bucket, key)
    gone = conn.delete(bucket, key)
    if not got.ok or got.body != PROBE:
        raise DfsbenchError(f"{what}: an object put did not come back as it was ({said(got)}; "
                            f"{len(got.body)} of {len(PROBE)} bytes)", hint="the gateway is not a working S3 store")
    if not gone.ok:
        raise DfsbenchError(f"{what}: an object put could not be deleted: {said(gone)}")
    wrong = s3_engine.Connection(conn.host, conn.port, conn.access_key, conn.secret_key + "-not", timeout_s=10,
                                 region=conn.region)
    refused = wrong.request("GET", f"/{bucket}", {"list-type": "2", "max-keys": "1"})
    wrong.close()
    if refused.status != 403:
        raise DfsbenchError(f"{what}: a request signed with a wrong secret got {said(refused)}, not 403: the gateway "
                            "does not check signatures, and a comparison with one that does would not be fair",
                            hint="give the gateway identities (weed s3 -config), or an endpoint that authenticates")


_NAME = re.compile(rb"<Name>([^<]*)</Name>")


def drop_buckets(conn: s3_engine.Connection, bucket: str) -> None:
    """Every bucket named ``bucket`` or ``bucket-…`` (the workloads' own), emptied and deleted."""
    listed = conn.request("GET", "/")
    if not listed.ok or listed.cut:
        raise DfsbenchError(f"could not list the gateway's buckets to delete {bucket}: "
                            f"{said(listed) if not listed.ok else 'a listing too long'}")
    names = [n.decode("utf-8", "replace") for n in _NAME.findall(listed.body)]
    # (only names a bucket can have: a gateway's listing is read, never trusted as a path)
    ours = [n for n in names if s3_engine.BUCKET.fullmatch(n) and (n == bucket or n.startswith(bucket + "-"))]
    left = []
    for name in ours:
        left += _emptied(conn, name)
        gone = conn.request("DELETE", f"/{name}")  # (a name of BUCKET's: no path of another)
        if not gone.ok and gone.status != 404:
            left.append(f"bucket {name}: {said(gone)}")
    if left:
        raise DfsbenchError(f"could not delete everything in bucket {bucket}: {'; '.join(left[:5])}")


def _emptied(conn: s3_engine.Connection, bucket: str) -> list[str]:
    """Every object of a bucket deleted, page by page; what could not be."""
    problems: list[str] = []
    for _ in range(s3_engine.PAGES_MOST):  # (a bound: a gateway that lists the same page forever)
        listed = conn.request("GET", f"/{bucket}", {"list-type": "2", "max-keys": "1000"},
                              limit=s3_engine.LISTING_MOST)
        if listed.status == 404:
            return problems
        if not listed.ok or listed.cut:
            return [f"LIST {bucket}: {said(listed) if listed.ok else 'a listing too long'}"]
        try:
            keys, _ = s3_engine.listed_keys(listed.body)
        except s3_engine.ET.ParseError:
            return [f"LIST {bucket}: not a listing: {said(listed)}"]
        if not keys:
            return problems
        for key in keys:
            if not s3_engine.plain_key(key):
                return [f"LIST {bucket}: a key that is no object's name: {s3_engine.printable(key)}"]
            gone = conn.delete(bucket, key)
            if not gone.ok and gone.status != 404:
                return [f"DELETE {bucket}/{s3_engine.printable(key)}: {said(gone)}"]
    return problems


def main(argv: list[str]) -> int:
    """``python -m backends.s3gateway drop HOST PORT ACCESS_KEY SECRET_FILE REGION BUCKET``: the
    ledger's removal of a site's bucket (and the workloads' of its name) — the secret is read
    from its file of mode 0600, never given on this line."""
    if len(argv) != 8 or argv[1] != "drop":
        print("usage: python -m backends.s3gateway drop HOST PORT ACCESS_KEY SECRET_FILE REGION BUCKET",
              file=sys.stderr)
        return 2
    host, port, access_key, secret_file, region, bucket = argv[2:]
    try:
        key = secret.remember(Path(secret_file).read_text().rstrip("\n"))
        drop_buckets(s3_engine.Connection(host, int(port), access_key, key, timeout_s=30, region=region), bucket)
    except (OSError, ValueError, DfsbenchError) as exc:
        print(secret.redact(f"could not delete bucket {bucket} at {host}:{port}: {exc}"), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
