"""A lean S3 client for the S3 workload's load generator: one keep-alive HTTP connection, each
request signed with AWS Signature Version 4. It imports nothing but the standard library, so
that it runs as it is on a client host's Python 3, as ``workloads/engines.py`` does.

The load generator is part of the measurement: boto3 cost 1.2-1.4 ms of a client's CPU per
operation here and became the bottleneck before the gateways did; a raw keep-alive client
costs a few tenths of that. So this client does only what an S3 operation needs:

- **Signing** (:func:`sign`): the canonical request of SigV4 for S3 (each path segment
  URI-encoded once, ``/`` kept; the query sorted and encoded; the host, ``x-amz-date`` and
  ``x-amz-content-sha256`` headers signed), with the payload sent as ``UNSIGNED-PAYLOAD`` (as
  warp and the AWS SDKs do): hashing every body would cost the client 2.5 ms per MiB.
- **One connection** (:class:`Connection`), opened at the first request and kept; opened again
  only where the server closed it (an error answer may close it: then the next request opens
  a new one, and ``connects`` counts them).
- **Each request's times** (:class:`Answer`): from just before the request is sent to its
  status line and headers read (``ttfb_s``, the time to first byte), and to its body read
  (``total_s``), on the monotonic clock.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import http.client
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
    """What came back for one request, and when (seconds from just before it was sent)."""

    status: int
    headers: dict[str, str]
    body: bytes
    ttfb_s: float  # to the status line and headers read
    total_s: float  # to the body read

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class Connection:
    """Requests to one S3 endpoint (path-style: ``/bucket/key``) over one keep-alive HTTP
    connection, signed with the given key pair."""

    host: str
    port: int
    access_key: str
    secret_key: str
    region: str = "us-east-1"
    timeout_s: float = 60.0
    connects: int = 0  # TCP connections opened so far
    _conn: http.client.HTTPConnection | None = field(default=None, repr=False)
    _key: tuple[str, bytes] | None = field(default=None, repr=False)  # (the day, its signing key)

    def request(self, method: str, path: str, query: dict[str, str] | None = None, body: bytes = b"",
                headers: dict[str, str] | None = None) -> Answer:
        """One signed request; its answer whatever its status (an error answer is an outcome)."""
        query = query or {}
        when = datetime.datetime.now(datetime.timezone.utc)
        day = when.strftime("%Y%m%d")
        if self._key is None or self._key[0] != day:
            self._key = (day, signing_key(self.secret_key, day, self.region))
        netloc = self.host if self.port == 80 else f"{self.host}:{self.port}"
        sent = sign(method, netloc, path, query, dict(headers or {}), access_key=self.access_key,
                    secret_key=self.secret_key, region=self.region, when=when, key=self._key[1])
        if body or method in ("PUT", "POST"):
            sent["Content-Length"] = str(len(body))
        target = urllib.parse.quote(path, safe="/-_.~") + (f"?{canonical_query(query)}" if query else "")
        for attempt in (0, 1):  # (a kept connection the server closed meanwhile: once more, on a new one)
            conn = self._connection()
            t0 = time.monotonic()
            try:
                conn.request(method, target, body=body or None, headers=sent)
                response = conn.getresponse()
                t1 = time.monotonic()
                data = response.read()
                t2 = time.monotonic()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt:
                    raise
                continue
            if response.will_close:
                self.close()
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, data, t1 - t0, t2 - t0)
        raise AssertionError("unreachable")

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

    # the operations of the workload's mix, path-style
    def create_bucket(self, bucket: str) -> Answer:
        return self.request("PUT", f"/{bucket}")

    def put(self, bucket: str, key: str, body: bytes) -> Answer:
        return self.request("PUT", f"/{bucket}/{key}", body=body)

    def get(self, bucket: str, key: str) -> Answer:
        return self.request("GET", f"/{bucket}/{key}")

    def head(self, bucket: str, key: str) -> Answer:
        return self.request("HEAD", f"/{bucket}/{key}")

    def delete(self, bucket: str, key: str) -> Answer:
        return self.request("DELETE", f"/{bucket}/{key}")

    def list(self, bucket: str, prefix: str = "", max_keys: int = 1000) -> Answer:
        return self.request("GET", f"/{bucket}", {"list-type": "2", "prefix": prefix, "max-keys": str(max_keys)})
