"""The S3 load generator's signing, held to botocore's (the AWS SDK's own SigV4 for S3) on the
requests the workload makes: keys with spaces, unicode and reserved characters, a listing's
query, payloads unsigned and hashed, at a fixed moment. (That a real gateway accepts them:
tests/integration/test_seaweedfs_lab.py.)"""

from __future__ import annotations

import datetime
import hashlib
import re
import socket
import threading
import time
import urllib.parse

import pytest

from workloads import s3_engine

botocore_auth = pytest.importorskip("botocore.auth")
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402

WHEN = datetime.datetime(2026, 11, 29, 4, 52, 1, tzinfo=datetime.timezone.utc)
KEYS = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
HOST = "127.0.0.1:8333"


def by_botocore(monkeypatch, method: str, path: str, query: dict[str, str], body: bytes, signed_payload: bool) -> str:
    monkeypatch.setattr(botocore_auth, "get_current_datetime", lambda: WHEN.replace(tzinfo=None))
    url = f"http://{HOST}{urllib.parse.quote(path, safe='/~')}"
    if query:
        url += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    request = AWSRequest(method=method, url=url, data=body)
    request.context["client_config"] = Config(s3={"payload_signing_enabled": signed_payload})
    botocore_auth.S3SigV4Auth(Credentials(*KEYS), "s3", "us-east-1").add_auth(request)
    return request.headers["Authorization"]


@pytest.mark.parametrize("method, path, query, body", [
    ("PUT", "/bench-0", {}, b""),
    ("PUT", "/bench-0/obj 1/ünï+cøde=&?*", {}, b"x" * 4096),
    ("GET", "/bench-0/a/b/c~d_e.f-g", {}, b""),
    ("HEAD", "/bench-0/k%20already", {}, b""),
    ("DELETE", "/bench-0/k", {}, b""),
    ("GET", "/bench-0", {"list-type": "2", "prefix": "a b/ü", "max-keys": "1000"}, b""),
])
@pytest.mark.parametrize("signed_payload", [False, True])
def test_a_request_is_signed_as_the_aws_sdk_signs_it(monkeypatch, method, path, query, body, signed_payload):
    payload = hashlib.sha256(body).hexdigest() if signed_payload else s3_engine.UNSIGNED
    ours = s3_engine.sign(method, HOST, path, query, {}, access_key=KEYS[0], secret_key=KEYS[1],
                          region="us-east-1", when=WHEN, payload=payload)
    assert ours["x-amz-date"] == "20261129T045201Z" and ours["x-amz-content-sha256"] == payload
    assert ours["Authorization"] == by_botocore(monkeypatch, method, path, query, body, signed_payload)


def test_a_days_signing_key_kept_signs_as_one_derived_anew():
    key = s3_engine.signing_key(KEYS[1], "20261129", "us-east-1")
    a = s3_engine.sign("GET", HOST, "/b/k", {}, {}, access_key=KEYS[0], secret_key=KEYS[1], region="us-east-1",
                       when=WHEN, key=key)
    b = s3_engine.sign("GET", HOST, "/b/k", {}, {}, access_key=KEYS[0], secret_key=KEYS[1], region="us-east-1",
                       when=WHEN)
    assert a == b
    c = s3_engine.sign("GET", HOST, "/b/k", {}, {}, access_key=KEYS[0], secret_key="another", region="us-east-1",
                       when=WHEN)
    assert c["Authorization"] != a["Authorization"]


class Server:
    """A socket server of this test's own on loopback: each connection it accepts is handed to
    the next of ``handlers`` (a function of the socket and the requests read so far)."""

    def __init__(self, handlers) -> None:
        self.handlers, self.requests = list(handlers), []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        for handler in self.handlers:  # (in the order the connections come, each in a thread of its own)
            conn, _ = self.sock.accept()
            threading.Thread(target=self._one, args=(handler, conn), daemon=True).start()

    def _one(self, handler, conn: socket.socket) -> None:
        with conn:
            handler(conn, self)

    def read_request(self, conn: socket.socket) -> bytes | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        said = re.search(rb"(?im)^content-length: *(\d+)", head)
        length = int(said[1]) if said else 0
        while len(body) < length:
            body += conn.recv(65536)
        self.requests.append(head)
        return head


def answering(*answers: bytes, then_close: bool = False):
    def handle(conn: socket.socket, server: Server) -> None:
        for answer in answers:
            if server.read_request(conn) is None:
                return
            conn.sendall(answer)
        if not then_close:
            while server.read_request(conn) is not None:
                conn.sendall(OK)
    return handle


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"


def stalling(conn: socket.socket, server: Server) -> None:
    server.read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
    time.sleep(2)  # (the client gives up first)


def cut_short(conn: socket.socket, server: Server) -> None:
    server.read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")


def test_requests_share_one_connection_and_a_failed_one_is_an_answer_and_a_new_connection():
    server = Server([answering(OK, OK, then_close=True), stalling, answering(OK, then_close=True), cut_short,
                     answering(OK)])
    c = s3_engine.Connection("127.0.0.1", server.port, *KEYS, timeout_s=0.5)
    a = c.get("bench-0", "a b/ü")
    assert (a.status, a.body, a.error, c.connects) == (200, b"hello", "", 1) and 0 < a.ttfb_s <= a.total_s
    assert c.put("bench-0", "k", b"").status == 200 and c.connects == 1  # (kept)
    get, put = server.requests[0].decode(), server.requests[1].decode()
    assert get.startswith("GET /bench-0/a%20b/%C3%BC HTTP/1.1") and "content-length" not in get.lower()
    assert put.startswith("PUT /bench-0/k HTTP/1.1") and "Content-Length: 0" in put
    # the server closed the kept connection while idle: sent again once, on a new one, and said;
    # there the body stalls: an answer with its error, and the next request on a new connection
    stalled = c.get("bench-0", "k")
    assert stalled.status == 0 and "timed out" in stalled.error and stalled.retried and stalled.total_s >= 0.5
    assert c.connects == 2
    again = c.get("bench-0", "k")
    assert again.ok and not again.retried and c.connects == 3
    # a body cut short (after the kept connection was found closed again): an answer with its
    # error, not sent a third time (the server answered)
    short = c.get("bench-0", "k")
    assert short.status == 0 and "IncompleteRead" in short.error and short.retried and c.connects == 4
    assert c.get("bench-0", "k").ok and c.connects == 5
    assert len(server.requests) == 6  # (each request came to the server once)
    assert "secret" not in repr(c) and KEYS[1] not in repr(c)


def test_a_bucket_name_that_is_not_one_is_refused_before_any_request():
    c = s3_engine.Connection("127.0.0.1", 9, *KEYS)
    for name in ("x/../y", "a/b", "..", "A-upper", "a", "bucket..x"):
        with pytest.raises(ValueError, match="not an S3 bucket name"):
            c.get(name, "k")
    assert c.connects == 0


def test_a_request_never_sent_is_told_from_one_sent_and_not_answered():
    """A refused connection sent nothing (a DELETE then left its object as it was); a request
    the server read and closed on without an answer went out (it may have been done)."""
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))
    port = refused.getsockname()[1]
    refused.close()  # (nobody listens there now)
    gone = s3_engine.Connection("127.0.0.1", port, *KEYS, timeout_s=2).delete("bench-0", "k")
    assert gone.status == 0 and "ConnectionRefusedError" in gone.error and not gone.sent

    def read_and_close(conn: socket.socket, server: Server) -> None:
        server.read_request(conn)
        conn.close()

    server = Server([read_and_close])
    dropped = s3_engine.Connection("127.0.0.1", server.port, *KEYS, timeout_s=2).delete("bench-0", "k")
    assert dropped.status == 0 and dropped.sent and len(server.requests) == 1


def test_a_request_that_went_out_before_its_retry_was_refused_counts_as_sent():
    """A DELETE on a kept connection that the server read and then closed on (it may have done
    it), sent again on a new connection that is refused: it went out, whatever the retry met."""
    def answer_then_read_and_go(conn: socket.socket, server: Server) -> None:
        server.read_request(conn)
        conn.sendall(OK)
        server.read_request(conn)  # (the DELETE: read, then the server is gone)
        server.sock.close()
        conn.close()

    server = Server([answer_then_read_and_go])
    c = s3_engine.Connection("127.0.0.1", server.port, *KEYS, timeout_s=2)
    assert c.get("bench-0", "k").ok
    gone = c.delete("bench-0", "k")
    assert gone.status == 0 and gone.retried and gone.sent, gone
    assert any(r.startswith(b"DELETE") for r in server.requests)


def test_a_body_longer_than_asked_is_cut_one_byte_past_it_and_its_connection_not_used_again():
    long = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 100
    server = Server([answering(long, then_close=True), answering(OK)])
    c = s3_engine.Connection("127.0.0.1", server.port, *KEYS, timeout_s=2)
    got = c.get("bench-0", "k", limit=10)
    assert (got.status, len(got.body), got.cut, got.sent) == (200, 11, True, True)
    assert c.get("bench-0", "k").ok and c.connects == 2  # (the cut one closed: a new connection)
    whole = s3_engine.Connection("127.0.0.1", Server([answering(long)]).port, *KEYS, timeout_s=2).get("bench-0", "k")
    assert (len(whole.body), whole.cut) == (100, False)
