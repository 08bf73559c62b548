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
import re
import time
import urllib.parse
from dataclasses import dataclass, field

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

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


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
                headers: dict[str, str] | None = None) -> Answer:
        """One signed request; its answer whatever came back (:class:`Answer`: an error is an
        outcome, and the connection is opened again for the next request). Sent again once,
        on a new connection, only where the kept one turned out closed before any of an
        answer came (the server closed it while idle: ``retried``); its times then count from
        the first try."""
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
        retried = False
        while True:
            reused = self._conn is not None
            answered = False
            try:
                conn = self._connection()
                conn.request(method, target, body=body or None, headers=sent)
                response = conn.getresponse()
                answered = True
                head_at = time.monotonic()
                first = response.read(1)
                t1 = time.monotonic() if first else head_at
                data = first + response.read()
                t2 = time.monotonic()
            except Exception as exc:  # (whatever it was, the connection is not used again)
                self.close()
                if reused and not answered and not retried and isinstance(exc, STALE):
                    retried = True
                    continue
                now = time.monotonic() - t0
                return Answer(0, {}, b"", now, now, f"{type(exc).__name__}: {exc}"[:300], retried)
            if response.will_close:
                self.close()
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, data, t1 - t0,
                          t2 - t0, "", retried)

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            self._conn.connect()
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

    def get(self, bucket: str, key: str) -> Answer:
        return self.request("GET", f"/{_bucket(bucket)}/{key}")

    def head(self, bucket: str, key: str) -> Answer:
        return self.request("HEAD", f"/{_bucket(bucket)}/{key}")

    def delete(self, bucket: str, key: str) -> Answer:
        return self.request("DELETE", f"/{_bucket(bucket)}/{key}")

    def list(self, bucket: str, prefix: str = "", max_keys: int = 1000) -> Answer:
        return self.request("GET", f"/{_bucket(bucket)}", {"list-type": "2", "prefix": prefix,
                                                           "max-keys": str(max_keys)})


def _bucket(name: str) -> str:
    if not BUCKET.fullmatch(name) or ".." in name:
        raise ValueError(f"not an S3 bucket name: {name[:80]!r} (3-63 of a-z, 0-9, '.' and '-')")
    return name
