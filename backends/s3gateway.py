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
from pathlib import Path

from harness.api.contracts import Cluster
from harness.api.systems import GATEWAY_PIDFILES, ContainerNode
from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.hosts import LOCAL, Host, PidfileProcess, stop_script
from harness.system.ledger import Ledger
from workloads import s3_engine

CLIENT_NAME = "S3 (dfsbench's keep-alive SigV4 client)"
PROBE = b"dfsbench probe: what is put comes back\n" * 100


def private_file(path: Path, text: str) -> Path:
    """A file only its owner reads, made so before a byte of it is written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


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


def forget_secret(cluster: Cluster, private: Path) -> None:
    """The directory of the key files gone from every client host that is not this machine."""
    for host in cluster.clients:
        if not host.local:
            host.run(["rm", "-rf", str(private)], check=False, timeout=60)


def start_in_node(node: ContainerNode, ledger: Ledger, what: str, tag: str, argv: list[str],
                  cwd: str) -> PidfileProcess:
    """A gateway started in a node of the container lab, in its foreground (``docker exec
    -d``) in the directory ``cwd`` there (made), its pid in a file of
    :data:`~harness.api.systems.GATEWAY_PIDFILES` (where a fault that would stop the node finds
    it), its output in ``cwd``/gateway.out; its end in the ledger before it starts (by its
    pid: nothing else of the node)."""
    assert tag.isalnum()
    pidfile = f"{GATEWAY_PIDFILES}{tag}.pid"
    log = f"{cwd}/gateway.out"
    ledger.command(node.wrap(["sh", "-c", stop_script(pidfile, 5.0)]), f"{what} on {node.label}")
    node.daemon("sh", "-c", 'mkdir -p "$2" && cd "$2" && echo $$ > "$1" && shift 2 && exec "$@" >> gateway.out 2>&1',
                "sh", pidfile, cwd, *argv)
    started = PidfileProcess(node, pidfile, Path(log))
    # (docker exec -d returns before the process writes its pid)
    proc.wait_for(lambda: (started.pid() is not None, "no pid yet"), what=f"{what} to start on {node.label}",
                  timeout=30, interval=0.1)
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
    wrong = s3_engine.Connection(conn.host, conn.port, conn.access_key, conn.secret_key + "-not", timeout_s=10)
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
