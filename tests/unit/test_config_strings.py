"""Config strings that become a path, an argv or a line of a file another program reads:
names are letters, digits, '_', '.' and '-' and never '.', '..', hidden or option-like;
a monitor address and a Ceph key hold nothing that ends a line, starts a comment or a
section; the writer of ceph.conf and the keyring checks them again."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.ceph.client import PoolOptions
from backends.ceph.site import CEPH_KEY, MON_ADDR, CephSpec, conf_value
from backends.gluster.site import GlusterSpec
from environments.existing import ClientHost
from harness.errors import BadInput
from harness.execution.plan import build_plan

BAD_NAMES = [".", "..", "-rf", ".hidden", "a/b", "../x", "a b", "a\nb", "a\x1b[2Jb", "x" * 65, "", "a:b", "a=b"]


def plan(variant="default", profile="rr"):
    return build_plan({"backends": [{"name": "glusterfs", "variant": variant}],
                       "workloads": [{"name": "fio", "options": {"profiles": [
                           {"name": profile, "rw": "randread", "bs": "4k"}]}}]})


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_name_that_is_not_a_plain_name_is_refused_everywhere(name):
    with pytest.raises(BadInput, match=r"backends\[0\]\.variant"):
        plan(variant=name)
    with pytest.raises(BadInput, match="profiles"):
        plan(profile=name)
    for build in (lambda: CephSpec(client=name), lambda: CephSpec(fs_name=name), lambda: PoolOptions(pool=name),
                  lambda: ClientHost(host="h", password="pw", name=name),
                  lambda: ClientHost(host="h", user=name, password="pw"), lambda: GlusterSpec(servers=["s"], volume=name)):
        with pytest.raises(ValueError):
            build()
    if name not in ("x" * 65, "a:b"):  # (a host name may be long, an IPv6 address has ':')
        for build in (lambda: ClientHost(host=name, password="pw"), lambda: GlusterSpec(servers=[name], volume="v")):
            with pytest.raises(ValueError):
                build()


@pytest.mark.parametrize("path", ["/etc/ceph/c.conf,secretfile=/x", "/k --log_file=/etc/x", "relative.conf", "/a\nb"])
def test_a_conf_or_keyring_path_that_would_split_an_option_is_refused(path):
    for build in (lambda: CephSpec(conf=path), lambda: CephSpec(keyring=path)):
        with pytest.raises(ValueError):
            build()


def test_plain_names_pass():
    assert plan(variant="r2.tuned-1_a", profile="rr_4k").backends[0].variant == "r2.tuned-1_a"
    assert CephSpec(client="bench.1", fs_name="fs_a").client == "bench.1"


@pytest.mark.parametrize("addr", ["10.0.0.1:6789\n[global]", "10.0.0.1 # x", "a;b", "mon=1", "$(id)", "a\rb", ""])
def test_a_monitor_address_that_would_add_to_ceph_conf_is_refused(addr):
    with pytest.raises(ValueError, match="mon_addr"):
        CephSpec(mon_addr=addr)
    with pytest.raises(BadInput, match="mon_addr"):
        conf_value(addr, "mon_addr", MON_ADDR)


def test_monitor_addresses_as_ceph_writes_them_pass():
    for addr in ["10.0.0.1:6789", "[v2:10.0.0.1:3300,v1:10.0.0.1:6789]", "mon1.example.org", "[::1]:3300"]:
        assert CephSpec(mon_addr=addr).mon_addr == addr


def test_a_key_that_is_not_base64_is_refused_without_showing_it(monkeypatch):
    monkeypatch.setenv("DFSBENCH_TEST_KEY", "AQB/KgRrAAAAABAA\n[client.admin]\n\tkey = stolen")
    with pytest.raises(ValueError) as refused:
        CephSpec(mon_addr="10.0.0.1", key="${DFSBENCH_TEST_KEY}")
    assert "not a Ceph key" in str(refused.value) and "stolen" not in str(refused.value)
    with pytest.raises(BadInput):
        conf_value("AQB/KgRr\nx", "key", CEPH_KEY)
    assert CephSpec(mon_addr="10.0.0.1", key="AQB/KgRrAAAAABAAx+0f5Qabcdefgh==").key


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_whatever_text_is_given_what_passes_stays_one_value_on_one_line(text):
    """A property: any monitor address or name accepted holds no separator of the formats
    it goes into (newline, '#', ';', '=', space, '/', a leading '.' or '-')."""
    try:
        addr = CephSpec(mon_addr=text).mon_addr
    except ValueError:
        addr = None
    if addr is not None:
        assert not set(addr) & set("\n\r\t #;=$'\"`\\\x00") and addr.isascii()
    try:
        name = CephSpec(client=text).client
    except ValueError:
        name = None
    if name is not None:
        assert name not in (".", "..") and name[0] not in ".-" and not set(name) & set("/ \n\r\t#;=:")


@pytest.mark.parametrize("key,value", [("-x", "1"), ("--mode=script", "x"), ("a=b", "1"), ("k", "v\nx"),
                                       ("k", "v\x1b"), ("", "1")])
def test_a_tool_option_that_is_not_one_option_is_refused(key, value):
    from backends.ceph.cephfs import CephFSOptions
    from backends.gluster.glusterfs import GlusterOptions

    with pytest.raises(ValueError):
        CephFSOptions(client_options={key: value})
    with pytest.raises(ValueError):
        GlusterOptions(volume_options={key: value})
    assert CephFSOptions(client_options={"client_oc_size": "209715200"}).client_options
    assert GlusterOptions(volume_options={"performance.cache-size": "256MB"}).volume_options
