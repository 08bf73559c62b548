"""The S3 load generator's signing, held to botocore's (the AWS SDK's own SigV4 for S3) on the
requests the workload makes: keys with spaces, unicode and reserved characters, a listing's
query, payloads unsigned and hashed, at a fixed moment. (That a real gateway accepts them:
tests/integration/test_seaweedfs_lab.py.)"""

from __future__ import annotations

import datetime
import hashlib
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
