"""A lean S3 client for the S3 workload's load generator: one keep-alive HTTP connection, each
request signed with AWS Signature Version 4. It imports nothing but the standard library, so
that it runs as it is on a client host's Python 3, as ``workloads/engines.py`` does.

The load generator is part of the measurement: boto3 cost 1.2-1.4 ms of a client's CPU per
operation here and became the bottleneck before the gateways did; a raw keep-alive client
costs a few tenths of that. So this client does only what an S3 operation needs:

- **Signing** (:func:`sign`): the canonical request of SigV4 for S3 (each path segment
  URI-encoded once, ``/`` kept; the query sorted and encoded; the host, ``x-amz-date`` and
  ``x-amz-content-sha256`` headers signed), with the payload sent as ``UNSIGNED-PAYLOAD``,
  which S3, RGW and SeaweedFS accept: hashing every body would cost the client about 2.5 ms
  per MiB here (botocore hashes every body over plain HTTP).
- **One connection** (:class:`Connection`), opened at the first request and kept; opened again
  after the server closed it or a request failed on it (``connects`` counts them).
- **Each request's times** (:class:`Answer`), on the monotonic clock from just before it is
  sent (a connection's opening included, as warp counts it): to the first byte of the body
  (``ttfb_s``; for a PUT that is after the whole upload: a GET's is the one to read) and to the
  body read (``total_s``). A request that got no whole answer is an answer with ``status`` 0
  and its ``error``, never an exception.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import http.client
import json
import multiprocessing as mp
import os
import random
import re
import resource
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

UNSIGNED = "UNSIGNED-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
ALGORITHM = "AWS4-HMAC-SHA256"


def _quote(text: str) -> str:
    """URI-encode as SigV4 asks: every byte but the unreserved characters (RFC 3986)."""
    return urllib.parse.quote(text, safe="-_.~")


def canonical_uri(path: str) -> str:
    """The path as S3's canonical request has it: each segment encoded once, ``/`` kept."""
    return "/".join(_quote(segment) for segment in path.split("/")) or "/"


def canonical_query(query: dict[str, str]) -> str:
    return "&".join(f"{k}={v}" for k, v in sorted((_quote(k), _quote(v)) for k, v in query.items()))


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signing_key(secret: str, day: str, region: str, service: str = "s3") -> bytes:
    return _hmac(_hmac(_hmac(_hmac(("AWS4" + secret).encode(), day), region), service), "aws4_request")


def sign(method: str, host: str, path: str, query: dict[str, str], headers: dict[str, str], *,
         access_key: str, secret_key: str, region: str, when: datetime.datetime,
         payload: str = UNSIGNED, key: bytes | None = None) -> dict[str, str]:
    """The headers of a request signed with SigV4 for S3 (``headers`` and the signed ones added:
    ``host``, ``x-amz-date``, ``x-amz-content-sha256``, ``authorization``). ``when`` is UTC;
    ``key`` is the day's signing key where the caller keeps it (:func:`signing_key`)."""
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    signed = {**{k.lower(): " ".join(str(v).split()) for k, v in headers.items()},
              "host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload}
    names = sorted(signed)
    canonical = "\n".join([method, canonical_uri(path), canonical_query(query),
                           "".join(f"{n}:{signed[n]}\n" for n in names), ";".join(names), payload])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    signature = hmac.new(key or signing_key(secret_key, day, region), to_sign.encode(), hashlib.sha256).hexdigest()
    return {**headers, "Host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload,
            "Authorization": f"{ALGORITHM} Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, "
                             f"Signature={signature}"}


@dataclass(frozen=True)
class Answer:
    """What came back for one request, and when: seconds from just before it was sent (its
    connection's opening included, where it needed one). A request that got no whole answer
    (refused, reset, timed out, cut short) is an answer too: ``status`` 0 and ``error``."""

    status: int
    headers: dict[str, str]
    body: bytes
    ttfb_s: float  # to the body's first byte (to the status line and headers where the body is empty)
    total_s: float  # to the body read whole (or to the error)
    error: str = ""
    retried: bool = False  # sent again on a new connection: the kept one was closed by the server
    sent: bool = True  # the request went out whole (False: refused or cut before it did: not done)
    cut: bool = False  # the body went on past the bytes asked for: cut there (``body`` holds one more)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


BODY_MOST = 1 << 20  # the most of a body read where the caller does not say (an error's, a listing's)
OBJECT_MOST = 1 << 30  # the most of an object a GET reads where the caller does not say its size
READ_CHUNK = 1 << 20
STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")  # (S3's bucket names: never a path of another)


@dataclass
class Connection:
    """Requests to one S3 endpoint (path-style: ``/bucket/key``) over one keep-alive HTTP
    connection, signed with the given key pair."""

    host: str
    port: int
    access_key: str
    secret_key: str = field(repr=False)
    region: str = "us-east-1"
    timeout_s: float = 60.0
    connects: int = 0  # TCP connections opened so far
    _conn: http.client.HTTPConnection | None = field(default=None, repr=False)
    _key: tuple[str, bytes] | None = field(default=None, repr=False)  # (the day, its signing key)

    def request(self, method: str, path: str, query: dict[str, str] | None = None, body: bytes = b"",
                headers: dict[str, str] | None = None, limit: int = BODY_MOST) -> Answer:
        """One signed request; its answer whatever came back (:class:`Answer`: an error is an
        outcome, and the connection is opened again for the next request). Sent again once,
        on a new connection, only where the kept one turned out closed before any of an
        answer came (the server closed it while idle: ``retried``); its times then count from
        the first try. Of the body at most ``limit`` + 1 bytes are read (a longer one is cut
        there, ``cut``, and its connection not used again); the whole request may take
        ``timeout_s``, however slowly its bytes trickle in."""
        query = query or {}
        when = datetime.datetime.now(datetime.timezone.utc)
        day = when.strftime("%Y%m%d")
        if self._key is None or self._key[0] != day:
            self._key = (day, signing_key(self.secret_key, day, self.region))
        host = f"[{self.host}]" if ":" in self.host else self.host
        netloc = host if self.port == 80 else f"{host}:{self.port}"
        sent = sign(method, netloc, path, query, dict(headers or {}), access_key=self.access_key,
                    secret_key=self.secret_key, region=self.region, when=when, key=self._key[1])
        if body or method in ("PUT", "POST"):
            sent["Content-Length"] = str(len(body))
        target = urllib.parse.quote(path, safe="/-_.~") + (f"?{canonical_query(query)}" if query else "")
        t0 = time.monotonic()
        retried = went = False
        while True:
            reused = self._conn is not None
            answered = False
            try:
                conn = self._connection()
                conn.request(method, target, body=body or None, headers=sent)
                went = True  # (once any try went out, the request may have been done: a retry's refusal says nothing)
                self._within(conn, t0)
                response = conn.getresponse()
                answered = True
                t1 = time.monotonic()  # (to the status line and headers, where no body comes)
                chunks: list[bytes] = []
                got, cut = 0, False
                while True:
                    self._within(conn, t0)
                    chunk = response.read1(min(READ_CHUNK, limit + 1 - got))
                    if not chunk:
                        break
                    if not chunks:
                        t1 = time.monotonic()  # (the body's first byte)
                    chunks.append(chunk)
                    got += len(chunk)
                    if got > limit:
                        cut = True
                        break
                data = b"".join(chunks)
                if not cut:
                    if response.length:  # (bytes its Content-Length promised, and the connection ended)
                        raise http.client.IncompleteRead(data, response.length)
                    response.read()  # (the answer read whole: its connection ready for the next)
                t2 = time.monotonic()
            except Exception as exc:  # (whatever it was, the connection is not used again)
                self.close()
                if reused and not answered and not retried and isinstance(exc, STALE):
                    retried = True
                    continue
                now = time.monotonic() - t0
                return Answer(0, {}, b"", now, now, f"{type(exc).__name__}: {exc}"[:300], retried, sent=went)
            if cut or response.will_close:
                self.close()
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, data, t1 - t0,
                          t2 - t0, "", retried, cut=cut)

    def _within(self, conn: http.client.HTTPConnection, t0: float) -> None:
        """The socket's next wait bounded by what is left of the request's ``timeout_s``."""
        left = self.timeout_s - (time.monotonic() - t0)
        if left <= 0:
            raise TimeoutError(f"the answer took more than {self.timeout_s:g} s")
        if conn.sock is not None:
            conn.sock.settimeout(left)

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            conn.connect()  # (refused: nothing kept, the next request opens one anew)
            self._conn = conn
            self.connects += 1
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # the operations of the workload's mix, path-style (a bucket's name is checked: never a path)
    def create_bucket(self, bucket: str) -> Answer:
        return self.request("PUT", f"/{_bucket(bucket)}")

    def put(self, bucket: str, key: str, body: bytes) -> Answer:
        return self.request("PUT", f"/{_bucket(bucket)}/{key}", body=body)

    def get(self, bucket: str, key: str, limit: int = OBJECT_MOST) -> Answer:
        return self.request("GET", f"/{_bucket(bucket)}/{key}", limit=limit)

    def head(self, bucket: str, key: str) -> Answer:
        return self.request("HEAD", f"/{_bucket(bucket)}/{key}")

    def delete(self, bucket: str, key: str) -> Answer:
        return self.request("DELETE", f"/{_bucket(bucket)}/{key}")

    def list(self, bucket: str, prefix: str = "", max_keys: int = 1000) -> Answer:
        return self.request("GET", f"/{_bucket(bucket)}", {"list-type": "2", "prefix": prefix,
                                                           "max-keys": str(max_keys)})


def plain_key(key: str) -> bool:
    """A key that names one object of its bucket whatever a gateway makes of its path: no
    empty, '.' or '..' segment (a listing's keys are a gateway's word, never trusted as a path)."""
    return bool(key) and all(part not in ("", ".", "..") for part in key.split("/"))


def _bucket(name: str) -> str:
    if not BUCKET.fullmatch(name) or ".." in name:
        raise ValueError(f"not an S3 bucket name: {name[:80]!r} (3-63 of a-z, 0-9, '.' and '-')")
    return name


# ------------------------------------------------------------------ the workload's engine
#
#     python3 s3_engine.py NAME 'JSON ARGUMENTS'
#
# as ``workloads/engines.py`` is run (``Host.engine``): ``prepare`` (the buckets, and each
# worker's objects, untimed), ``mix`` (the timed closed loop), ``clean`` (every object under
# the client's prefix, and the buckets where asked). The secret key is read from a file of
# mode 0600 on the client's host, never from the command line.

HUNG = 3  # (Host.engine's ENGINE_HUNG: this script cannot import dfsbench)
OPS = ("get", "head", "put", "delete", "list")
LIST_KEYS = 100  # keys a LIST of the mix asks for (its prefix: the worker's own objects)
PAGES_MOST = 10_000  # pages of a listing read to clean (a gateway that lists one page forever)
LISTING_MOST = 8 << 20  # bytes of one page of 1000 keys read


class Deadline(Exception):
    """The engine passed its deadline; its workers were killed."""


def bin_of(ns: int) -> int:
    """The histogram bin of a latency in nanoseconds: exact below 128 ns, else its 7 highest
    bits (the bin's lower bound; 64 bins per power of two, each within 1.6 % of its values).
    Every client bins alike, so their histograms add up bin by bin."""
    if ns < 128:
        return max(ns, 0)
    shift = ns.bit_length() - 7
    return (ns >> shift) << shift


def bin_value_s(lower: int) -> float:
    """A bin's latency in seconds: the middle of its range."""
    width = 1 if lower < 128 else 1 << (lower.bit_length() - 7)
    return (lower + (width - 1) / 2) / 1e9


@dataclass(frozen=True)
class Plan:
    """What the three steps of one client agree on, so that ``mix`` finds the objects
    ``prepare`` put without a list of them: the objects each worker owns follow from the seed."""

    buckets: list[str]
    prefix: str  # every key of this client starts with it (its own: other clients' differ)
    objects: int  # prepared, over all the workers
    workers: int
    sizes: list[list[int]]  # [[bytes, weight], …]
    seed: int

    def rng(self, worker: int) -> random.Random:
        return random.Random(f"{self.seed}/{self.prefix}/{worker}")

    def size(self, rng: random.Random) -> int:
        return rng.choices([s for s, _ in self.sizes], [w for _, w in self.sizes])[0]

    def own(self, worker: int) -> tuple[list[list[Any]], random.Random]:
        """The objects worker ``worker`` prepared ([bucket index, key, size, version]), and its
        random generator as it stood after choosing them."""
        rng = self.rng(worker)
        count = self.objects // self.workers + (1 if worker < self.objects % self.workers else 0)
        found = [[n % len(self.buckets), self.key(worker, n), self.size(rng), 0] for n in range(count)]
        return found, rng

    def key(self, worker: int, n: int) -> str:
        return f"{self.prefix}w{worker:03d}/{n:08d}"

    def base(self) -> bytes:
        """The bytes every object is cut from (the same on every client: from the seed)."""
        return random.Random(self.seed).randbytes(max(s for s, _ in self.sizes) + 64)


def header_of(key: str, version: int) -> bytes:
    return hashlib.sha256(f"{key}\0{version}".encode()).digest()[:16]


def body_of(base: bytes, key: str, version: int, size: int) -> bytes:
    """An object's bytes: 16 of its own (key and version) and the rest cut from ``base`` at an
    offset of its own, so that no two objects are alike and a GET is checked byte for byte."""
    head = header_of(key, version)
    if size <= 16:
        return head[:size]
    off = int.from_bytes(head[:2], "big") % 64
    return head + base[off:off + size - 16]


def matches(body: bytes, base: bytes, key: str, version: int, size: int) -> bool:
    """Whether a GET's body is the object as it was put (bytes against bytes: a memcmp; a
    memoryview's comparison goes byte by byte, 38 times slower at 64 KiB)."""
    if len(body) != size:
        return False
    head = header_of(key, version)
    if size <= 16:
        return body == head[:size]
    off = int.from_bytes(head[:2], "big") % 64
    return body[:16] == head and body[16:] == base[off:off + size - 16]


def _connection(endpoint: dict[str, Any], timeout_s: float) -> Connection:
    with open(endpoint["secret_file"], encoding="utf-8") as f:
        secret = f.read().strip("\n")
    return Connection(endpoint["host"], int(endpoint["port"]), endpoint["access_key"], secret,
                      region=endpoint.get("region") or "us-east-1", timeout_s=timeout_s)


def _failure(answer: Answer) -> str:
    """An answer that is not a success, as a kind of error (and no more: counted by kind)."""
    if answer.status == 0:
        return "no answer: " + answer.error.split(":", 1)[0]
    return f"status {answer.status}"


def printable(text: object) -> str:
    """Text a gateway sent, as a person may read it: what is not printable shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text)[:200])


def _sample(answer: Answer) -> str:
    """What the first error of a kind said: its body's start, as text whatever it holds."""
    return printable(answer.error or answer.body[:200].decode("utf-8", "replace"))[:300]


def _run_workers(target: Callable[..., dict[str, Any]], args: list[tuple[Any, ...]], deadline: float,
                 what: str, ready: Callable[[], float | None] | None = None,
                 start_at: Any = None, barrier: Any = None) -> list[dict[str, Any]]:
    """Each ``args`` in a worker process (no GIL between them), their results in order; past
    ``deadline`` seconds the workers are killed (:class:`Deadline`)."""
    ctx = mp.get_context("fork")
    pipes, workers = [], []
    for each in args:
        here, there = ctx.Pipe(duplex=False)
        w = ctx.Process(target=_piped, args=(target, there, *each), daemon=True)
        w.start()
        there.close()
        pipes.append(here)
        workers.append(w)
    end = time.monotonic() + deadline
    try:
        if barrier is not None:  # (every worker connected: the timed phase starts now for all)
            try:
                barrier.wait(timeout=deadline)
            except threading.BrokenBarrierError:
                pass  # (a worker that failed: its error is in its result)
            at = ready() if ready is not None else None
            start_at.value = time.monotonic() + 0.02 if at is None else at
        results = []
        for pipe, w in zip(pipes, workers):
            if not pipe.poll(max(0.0, end - time.monotonic())):
                raise Deadline(f"{what} passed its deadline of {deadline:.0f} s; its {len(workers)} workers "
                               "were killed")
            try:
                results.append(pipe.recv())
            except EOFError:
                results.append({"error": f"a worker exited with code {w.exitcode}"})
    finally:
        for w in workers:
            if w.is_alive():
                w.kill()
        for w in workers:
            w.join(timeout=5)
    # (a worker that failed first is the cause; the others' broken barrier is its effect)
    errors = sorted((r["error"] for r in results if "error" in r), key=lambda e: e.startswith("BrokenBarrierError"))
    if errors:
        raise RuntimeError(f"{what}: {errors[0]}")
    return results


def _piped(target: Callable[..., dict[str, Any]], out: Any, *args: Any) -> None:
    try:
        out.send(target(*args))
    except BaseException as exc:  # (the parent reads every worker's outcome from its pipe)
        out.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        out.close()


def prepare(endpoint: dict[str, Any], plan: dict[str, Any], create_buckets: bool = True,
            deadline: float = 1800, timeout_s: float = 60) -> dict[str, Any]:
    """The buckets (where asked: one that exists and is ours already is fine), then each
    worker's objects, put by the workers at once: untimed, every PUT checked."""
    p = Plan(**plan)
    started = time.time()
    if create_buckets:
        conn = _connection(endpoint, timeout_s)
        for bucket in p.buckets:
            made = conn.create_bucket(bucket)
            if not made.ok and b"BucketAlreadyOwnedByYou" not in made.body:
                raise RuntimeError(f"could not create bucket {bucket}: {_failure(made)}: {_sample(made)}")
        conn.close()
    results = _run_workers(_prepare_worker, [(endpoint, plan, w, timeout_s) for w in range(p.workers)],
                           deadline, "preparing the objects")
    return {"objects": sum(r["objects"] for r in results), "bytes": sum(r["bytes"] for r in results),
            "started": started, "ended": time.time()}


def _prepare_worker(endpoint: dict[str, Any], plan: dict[str, Any], worker: int, timeout_s: float) -> dict[str, Any]:
    p = Plan(**plan)
    conn = _connection(endpoint, timeout_s)
    base = p.base()
    own, _ = p.own(worker)
    moved = 0
    for bucket, key, size, version in own:
        put = conn.put(p.buckets[bucket], key, body_of(base, key, version, size))
        if not put.ok:
            raise RuntimeError(f"PUT {key} while preparing: {_failure(put)}: {_sample(put)}")
        moved += size
    conn.close()
    return {"objects": len(own), "bytes": moved}


def mix(endpoint: dict[str, Any], plan: dict[str, Any], weights: dict[str, float], seconds: float,
        deadline: float = 1800, timeout_s: float = 60, verify: bool = True,
        ready: Callable[[], float | None] | None = None, report_left: bool = False,
        rate: float | None = None) -> dict[str, Any]:
    """The closed loop: every worker, on a connection of its own opened before the start,
    draws one operation after another by ``weights`` over the objects it owns — GET and HEAD
    of one of them, PUT of a new one, DELETE of one, LIST of its own prefix — for ``seconds``
    from a start common to all of them. An operation counts where it completed within
    [start, start + seconds]; its latency and (GET) TTFB go into histograms of
    :func:`bin_of`'s bins, whole and per second; an error (no answer, a status that is not a
    success, a GET whose bytes are not what was put) is counted by kind, never raised. Each
    worker's CPU over the timed phase is summed (``cpu_s``).

    With a ``rate`` (operations per second of this client), an open loop instead: each worker
    has its share of it as Poisson arrivals (from a generator of its own, seeded), sends each
    request at its arrival or, where it is behind, as soon as the one before is done — and
    times it from its arrival, so that the time a request waited for its worker counts (a
    closed loop behind its schedule would hide it: coordinated omission)."""
    p = Plan(**plan)
    if rate is not None and not rate > 0:
        raise ValueError(f"an offered rate above 0 operations per second, not {rate!r}")
    unknown = sorted(set(weights) - set(OPS))
    if unknown or not any(w > 0 for w in weights.values()):
        raise ValueError(f"a mix of {', '.join(OPS)} with a weight above 0 (not {sorted(weights)})")
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(p.workers + 1)
    start_at = ctx.Value("d", 0.0, lock=False)
    wall0, mono0 = time.time(), time.monotonic()
    results = _run_workers(_mix_worker, [(endpoint, plan, weights, seconds, w, timeout_s, verify, barrier,
                                          start_at, deadline, report_left, rate / p.workers if rate else None)
                                         for w in range(p.workers)],
                           deadline, f"the S3 mix ({p.workers} workers, {seconds:g} s)", ready=ready,
                           start_at=start_at, barrier=barrier)
    start = float(start_at.value)
    ops: dict[str, dict[str, Any]] = {}
    for r in results:
        for op, found in r["ops"].items():
            into = ops.setdefault(op, {"count": 0, "bytes": 0, "lat_sum_s": 0.0, "errors": {}, "samples": {},
                                       "lat": {}, "ttfb": {}, "seconds": {}})
            for k in ("count", "bytes", "lat_sum_s"):
                into[k] += found[k]
            for kind, n in found["errors"].items():
                into["errors"][kind] = into["errors"].get(kind, 0) + n
                into["samples"].setdefault(kind, found["samples"][kind])
            for h in ("lat", "ttfb"):
                _add(into[h], found[h])
            for second, (n, moved, bins) in found["seconds"].items():
                was = into["seconds"].setdefault(second, [0, 0, {}])
                was[0] += n
                was[1] += moved
                _add(was[2], bins)
    for found in ops.values():  # (as JSON: bins as [lower bound ns, count], seconds in order)
        for h in ("lat", "ttfb"):
            found[h] = sorted([int(k), v] for k, v in found[h].items())
        found["seconds"] = [[int(s), n, moved, sorted([int(k), v] for k, v in bins.items())]
                            for s, (n, moved, bins) in sorted(found["seconds"].items(), key=lambda i: int(i[0]))]
    return {"started": wall0 + (start - mono0), "ended": wall0 + (start + seconds - mono0), "seconds": seconds,
            "workers": p.workers, "cpus": len(os.sched_getaffinity(0)), "cpu_s": sum(r["cpu_s"] for r in results),
            "busy_s": None if any(r["busy_s"] is None for r in results) else sum(r["busy_s"] for r in results),
            "verified": sum(r["verified"] for r in results), "connects": sum(r["connects"] for r in results),
            "ops": ops, **({"left": [o for r in results for o in r["left"]]} if report_left else {}),
            **({"rate": rate, "weights": {op: w for op, w in weights.items() if w > 0}} if rate else {})}


def _add(into: dict[Any, int], bins: Any) -> None:
    for k, v in (bins.items() if isinstance(bins, dict) else bins):
        into[k] = into.get(k, 0) + v


def _schedstat(fd: int | None) -> float | None:
    """Seconds this process (one thread) has run on a CPU or waited in a run queue for one
    (``/proc/self/schedstat``: run and wait, in ns); None where the kernel does not say."""
    if fd is None:
        return None
    try:
        run, wait = os.pread(fd, 128, 0).split()[:2]
        total = (int(run) + int(wait)) / 1e9
    except (OSError, ValueError):
        return None
    return total if total > 0 else None  # (a kernel without sched_info prints zeros)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _mix_worker(endpoint: dict[str, Any], plan: dict[str, Any], weights: dict[str, float], seconds: float,
                worker: int, timeout_s: float, verify: bool, barrier: Any, start_at: Any,
                deadline: float, report_left: bool = False, rate: float | None = None) -> dict[str, Any]:
    try:  # (set up before the start: one that fails lets the others go at once, not at the deadline)
        p = Plan(**plan)
        base = p.base()
        live, rng = p.own(worker)
        for o in live:
            o.append(None)  # (prepared: put before the mix)
        wall0, mono0 = time.time(), time.monotonic()  # (when each object left was put, on the wall clock)
        made = len(live)
        names = [op for op in OPS if weights.get(op, 0) > 0]
        chances = [float(weights[op]) for op in names]
        conn = _connection(endpoint, timeout_s)
        try:
            conn._connection()  # (opened before the start: the first operation is not a connection's)
        except OSError:  # (the gateway down already, a fault come before the start: what the mix's
            pass  # operations meet then are its errors, counted by kind, as any other while it is down)
        try:
            sched: int | None = os.open("/proc/self/schedstat", os.O_RDONLY)
        except OSError:
            sched = None
    except BaseException:
        barrier.abort()
        raise
    ops: dict[str, dict[str, Any]] = {op: {"count": 0, "bytes": 0, "lat_sum_s": 0.0, "errors": {}, "samples": {},
                                           "lat": {}, "ttfb": {}, "seconds": {}} for op in names}
    verified = 0
    barrier.wait(timeout=deadline)
    while start_at.value == 0.0:  # (the parent sets it right after the barrier)
        time.sleep(0.0005)
    start = start_at.value
    while time.monotonic() < start:
        time.sleep(max(0.0, start - time.monotonic()) / 2)
    cpu0, busy0 = _cpu(), _schedstat(sched)
    cpu1, busy1 = cpu0, busy0  # (before the first operation that ended past the end)
    end = start + seconds
    arrivals = random.Random(f"{p.seed}/{p.prefix}/{worker}/arrivals")
    arrival = start
    while True:
        cpu1, busy1 = _cpu(), _schedstat(sched)
        if rate:  # (open loop: the next arrival, waited for where it is still to come)
            arrival += arrivals.expovariate(rate)
            if arrival >= end:
                break
            while (ahead := arrival - time.monotonic()) > 0:
                time.sleep(ahead)
        elif time.monotonic() >= end:
            break
        op = rng.choices(names, chances)[0]
        if op in ("get", "head", "delete") and not live:
            op = "put" if "put" in names else op
            if op != "put":
                raise RuntimeError(f"worker {worker} has no object left to {op}: the mix never puts, and its "
                                   "objects ran out")
        moved, wrong, detail = 0, "", ""  # (wrong: the kind of a wrong answer that said success)
        if op == "put":
            bucket, key, size, version = made % len(p.buckets), p.key(worker, made), p.size(rng), 0
            made += 1
            answer = conn.put(p.buckets[bucket], key, body_of(base, key, version, size))
            if answer.ok:
                live.append([bucket, key, size, version, time.monotonic() - mono0])
                moved = size
        elif op == "list":
            answer = conn.list(p.buckets[rng.randrange(len(p.buckets))], prefix=p.key(worker, 0)[:-8],
                               max_keys=LIST_KEYS)
            if answer.ok and (answer.cut or b"<ListBucketResult" not in answer.body):
                wrong, detail = "not a listing", _sample(answer)
        else:
            i = rng.randrange(len(live))
            bucket, key, size, version, _ = live[i]
            if op == "get":
                answer = conn.get(p.buckets[bucket], key, limit=size)
                if answer.ok:
                    if len(answer.body) != size:
                        wrong = "short body" if len(answer.body) < size else "long body"
                        detail = f"GET {key} returned {'more than ' if answer.cut else ''}{len(answer.body) - answer.cut}" \
                                 f" of its {size} bytes"
                    elif verify and not matches(answer.body, base, key, version, size):
                        wrong, detail = "wrong bytes", f"GET {key} returned other bytes than were put"
                    else:
                        moved = size
            elif op == "head":
                answer = conn.head(p.buckets[bucket], key)
                if answer.ok and answer.headers.get("content-length") != str(size):
                    wrong = "wrong length"
                    detail = f"HEAD {key} said {printable(answer.headers.get('content-length'))} bytes of its {size}"
            else:
                answer = conn.delete(p.buckets[bucket], key)
                # gone, or not known to be there any more (sent, and no answer came: it may have
                # been done); a DELETE never sent (a refused connection), or refused by an answer,
                # left it as it was
                if answer.ok or answer.status == 404 or (answer.status == 0 and answer.sent):
                    live[i] = live[-1]
                    live.pop()
        done = time.monotonic()
        if done > end:
            break  # (it completed after the end: neither counted nor timed, nor its CPU)
        into = ops[op]
        if not answer.ok or wrong:
            kind = wrong or _failure(answer)
            into["errors"][kind] = into["errors"].get(kind, 0) + 1
            into["samples"].setdefault(kind, detail or _sample(answer))
            continue
        # (open loop: from its arrival, the wait for its worker included; to its body's first byte
        # as long before the end as the answer's own)
        took = done - arrival if rate else answer.total_s
        b = bin_of(int(took * 1e9))
        verified += verify and op == "get"
        into["count"] += 1
        into["bytes"] += moved
        into["lat_sum_s"] += took
        into["lat"][b] = into["lat"].get(b, 0) + 1
        if op == "get":
            tb = bin_of(int((took - (answer.total_s - answer.ttfb_s)) * 1e9))
            into["ttfb"][tb] = into["ttfb"].get(tb, 0) + 1
        second = into["seconds"].setdefault(int(done - start), [0, 0, {}])
        second[0] += 1
        second[1] += moved
        second[2][b] = second[2].get(b, 0) + 1
    conn.close()
    if sched is not None:
        os.close(sched)
    busy = busy1 - busy0 if busy0 is not None and busy1 is not None and busy1 >= busy0 else None
    return {"ops": ops, "verified": verified, "connects": conn.connects, "cpu_s": cpu1 - cpu0, "busy_s": busy,
            **({"left": [[*o[:4], None if o[4] is None else wall0 + o[4]] for o in live]} if report_left else {})}


def clean(endpoint: dict[str, Any], buckets: list[str], prefix: str, drop_buckets: bool = False,
          timeout_s: float = 60) -> dict[str, Any]:
    """Every object under ``prefix`` in the buckets deleted (as LIST finds them, page by page,
    at most :data:`PAGES_MOST` pages; a key listed that is not under the prefix is left
    alone), then the buckets themselves where asked (a bucket not there is fine). What could
    not be done is said (``problems``), never raised: the cell's figures stand."""
    conn = _connection(endpoint, timeout_s)
    deleted, problems = 0, []
    for bucket in buckets:
        token = ""
        for _ in range(PAGES_MOST):
            query = {"list-type": "2", "prefix": prefix, "max-keys": "1000",
                     **({"continuation-token": token} if token else {})}
            listed = conn.request("GET", f"/{_bucket(bucket)}", query, limit=LISTING_MOST)
            if listed.status == 404:
                break
            if not listed.ok or listed.cut:
                problems.append(f"LIST {bucket}: {_failure(listed) if not listed.ok else 'a listing too long'}")
                break
            try:
                keys, token = listed_keys(listed.body)
            except ET.ParseError:
                problems.append(f"LIST {bucket}: not a listing: {_sample(listed)}")
                break
            for key in keys:
                if not key.startswith(prefix) or not plain_key(key):
                    continue
                gone = conn.delete(bucket, key)
                if gone.ok or gone.status == 404:
                    deleted += 1
                else:
                    problems.append(f"DELETE {bucket}/{printable(key)}: {_failure(gone)}")
            if not token or not keys:
                break
        if drop_buckets:
            gone = conn.request("DELETE", f"/{_bucket(bucket)}")
            if not gone.ok and gone.status != 404:
                problems.append(f"DELETE bucket {bucket}: {_failure(gone)}: {_sample(gone)}")
    conn.close()
    return {"deleted": deleted, "problems": problems[:20]}


def check(endpoint: dict[str, Any], plan: dict[str, Any], objects_file: str, timeout_s: float = 60) -> dict[str, Any]:
    """Every object of ``objects_file`` (what a mix left: [bucket index, key, size, version]
    each) read back whole and compared byte for byte with what was put."""
    p = Plan(**plan)
    with open(objects_file, encoding="utf-8") as f:
        objects = json.load(f)
    base = p.base()
    conn = _connection(endpoint, timeout_s)
    wrong: list[str] = []
    for bucket, key, size, version, *_ in objects:
        got = conn.get(p.buckets[int(bucket)], str(key), limit=int(size))
        if not got.ok:
            wrong.append(f"GET {printable(key)}: {_failure(got)}")
        elif not matches(got.body, base, str(key), int(version), int(size)):
            wrong.append(f"GET {printable(key)}: {len(got.body)} bytes, not the {size} put")
    conn.close()
    return {"checked": len(objects), "wrong": len(wrong), "said": wrong[:5]}


def listed_keys(body: bytes) -> tuple[list[str], str]:
    """The keys of a ListObjectsV2 answer, and its continuation token ('' : the last page).
    ET.ParseError: not XML."""
    root = ET.fromstring(body)
    ns = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    keys = [k.text or "" for k in root.iter(f"{ns}Key")]
    truncated = (root.findtext(f"{ns}IsTruncated") or "").strip().lower() == "true"
    return keys, (root.findtext(f"{ns}NextContinuationToken") or "") if truncated else ""


ENGINES: dict[str, Callable[..., dict[str, Any]]] = {"prepare": prepare, "mix": mix, "clean": clean, "check": check}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ENGINES:
        print(json.dumps({"error": f"usage: s3_engine.py {{{','.join(ENGINES)}}} JSON"}))
        return 2
    try:
        result = ENGINES[argv[1]](**json.loads(argv[2]))
    except Deadline as exc:
        print(json.dumps({"error": str(exc)}))
        return HUNG
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
