"""The ``existing`` environment's parts that need no cluster: what the config accepts and
refuses, how secrets are read and hidden, and how a cluster is described from the real
outputs of ``ceph … --format json`` and ``gluster volume info --xml`` (captured from a lab)."""

import json
from pathlib import Path

import pytest

from backends.ceph.client import keyring_keys
from backends.ceph.site import describe_ceph
from backends.gluster.site import volume_info
from environments.existing import ExistingOptions
from harness.api.target import Target
from harness.errors import BadInput, DfsbenchError
from harness.execution.plan import build_plan
from harness.report.limits import caches_dropped
from harness.results.store import Store
from harness.system import secret
from harness.system.hosts import LocalHost

DATA = Path(__file__).parent.parent / "data" / "existing"


def test_gluster_volume_info_says_how_the_volume_is_built():
    info = volume_info((DATA / "gluster-volume-info.xml").read_text())
    assert info["type"] == "Replicate" and info["replica"] == 3 and info["status"] == "Started"
    assert info["bricks"] == ["gluster1:/bricks/b0", "gluster2:/bricks/b0", "gluster3:/bricks/b0"]
    assert info["options"]["performance.strict-o-direct"] == "on"
    assert volume_info("<cliOutput><opRet>-1</opRet></cliOutput>") == {}
    assert volume_info("not xml at all") == {}


class CapturedCli:
    """The Ceph CLI's answers, as captured from a lab's client node."""

    host = type("H", (), {"name": "client1"})()

    def json(self, *args: str):
        return json.loads((DATA / f"ceph-{'-'.join(args)}.json").read_text())

    def run(self, tool: str, *args: str) -> str:
        return (DATA / f"ceph-{'-'.join(args)}.txt").read_text()


def test_ceph_description_from_real_outputs():
    d = describe_ceph(CapturedCli(), "cephfs")
    assert d["version"].startswith("16.2.") and d["osds"] == 3
    assert d["data_pool"] == "cephfs_data" and d["metadata_pool"] == "cephfs_metadata"
    assert d["data_pool_size"] == 3
    assert d["cluster"]["health"] == "HEALTH_OK"
    pools = {p["pool"]: p for p in d["cluster"]["pools"]}
    assert pools["cephfs_data"]["failure_domain"] == "host" and pools["cephfs_data"]["type"] == "replicated"
    assert "ceph-osd1" in d["cluster"]["osd_tree"]
    assert d["mon_addr"]


def test_secrets_come_from_the_environment_or_a_file_and_are_never_shown(tmp_path, monkeypatch):
    monkeypatch.setenv("DFSBENCH_TEST_PW", "hunter2-canary")
    assert secret.expand("${DFSBENCH_TEST_PW}") == "hunter2-canary"
    (tmp_path / "pw").write_text("from-a-file-canary\n")
    assert secret.expand(f"file:{tmp_path / 'pw'}") == "from-a-file-canary"
    with pytest.raises(ValueError, match="NOPE_NOT_SET is not set"):
        secret.expand("${NOPE_NOT_SET}")
    with pytest.raises(ValueError, match="cannot read"):
        secret.expand(f"file:{tmp_path / 'missing'}")
    secret.remember("from-a-file-canary")
    assert secret.redact("pw=from-a-file-canary;") == "pw=[secret];"
    assert "canary" not in str(DfsbenchError("login with from-a-file-canary failed", hint="from-a-file-canary"))
    assert keyring_keys("[client.x]\n\tkey = AQB/KgRr==\n\tcaps mon = \"allow r\"\n") == ["AQB/KgRr=="]


def test_a_password_written_in_the_config_is_stored_nowhere(tmp_path):
    key = tmp_path / "id"
    key.write_text("not read here")
    data = {"environment": {"kind": "existing", "options": {
        "clients": [{"host": "192.0.2.1", "password": "literal-canary-pw"}], "gluster": {"mounted": "/mnt/g"}}},
        "backends": ["glusterfs"], "workloads": ["largefile"]}
    plan = build_plan(data)
    store = Store(tmp_path / "results")
    store.begin_run("20261123-000000-aaaaaa", plan.config.model_dump(mode="json"), plan.config_hash, {}, "t")
    store.add_target("20261123-000000-aaaaaa", "glusterfs", "default", {"note": "literal-canary-pw"}, 0)
    for path in (tmp_path / "results").rglob("*"):
        if path.is_file():
            assert b"literal-canary-pw" not in path.read_bytes(), path


def test_the_config_refuses_what_would_create_or_destroy(tmp_path):
    base = {"environment": {"kind": "existing", "options": {"ceph": {}}}}
    with pytest.raises(BadInput, match="would create a pool.*allow_create"):
        build_plan({**base, "backends": ["rados"]})
    with pytest.raises(BadInput, match="would create a pool and an RBD image"):
        build_plan({**base, "backends": ["rbd"]})
    with pytest.raises(BadInput, match="would create a data pool"):
        build_plan({**base, "backends": [{"name": "cephfs", "options": {"replicas": 2}}]})
    # named pools are used, not created; allow_create lets it create
    build_plan({**base, "backends": [{"name": "rados", "options": {"pool": "bench"}}]})
    build_plan({"environment": {"kind": "existing", "options": {"ceph": {}, "allow_create": True}},
                "backends": ["rbd"]})
    with pytest.raises(BadInput, match="need the 'gluster' cluster"):
        build_plan({**base, "backends": ["glusterfs"]})


def test_client_entries_are_checked(tmp_path):
    with pytest.raises(ValueError, match="give 'key'"):
        ExistingOptions.model_validate({"clients": [{"host": "h"}]})
    with pytest.raises(ValueError, match="key file .* does not exist"):
        ExistingOptions.model_validate({"clients": [{"host": "h", "key": str(tmp_path / "none")}]})
    with pytest.raises(ValueError, match="listed twice"):
        ExistingOptions.model_validate({"clients": [{"host": "h", "password": "pw-x"},
                                                    {"host": "h", "password": "pw-x"}]})
    with pytest.raises(BadInput, match="SSH_PW_UNSET is not set"):
        build_plan({"environment": {"kind": "existing", "options": {
            "clients": [{"host": "h", "password": "${SSH_PW_UNSET}"}], "gluster": {"mounted": "/m"}}},
            "backends": ["glusterfs"]})


def test_env_on_the_command_line_keeps_the_options_of_the_same_kind():
    data = {"environment": {"kind": "existing", "options": {"gluster": {"mounted": "/m"}}},
            "backends": ["glusterfs"], "workloads": ["largefile"]}
    plan = build_plan(data, overrides={"environment": {"kind": "existing"}})
    assert plan.environment.options.gluster.mounted == Path("/m")


class NoDrop(LocalHost):
    def drop_caches(self) -> bool:
        return True  # (this test does not drop this machine's caches)


def test_a_fuse_mount_dfsbench_cannot_remount_keeps_its_cache_and_says_so():
    target = Target("path", Path("/"), "glusterfs", "default", cache_kept=True, host=NoDrop())
    how = target.drop_caches()
    assert "client-cache-kept" in how and not caches_dropped(how)
    assert caches_dropped("sync+remount+drop_caches")


def test_an_s3_backend_on_a_site_needs_the_sites_gateway_named_and_its_keys_checked(tmp_path, monkeypatch):
    """rgw and seaweedfs-s3 measure the site's own gateway: refused before anything runs where the
    site's section names none; its endpoint and keys are checked as what they become (a host and a
    port; an access key that goes into a header; a secret that is a line of a file of mode 0600)."""
    monkeypatch.setenv("DFSBENCH_TEST_S3_SECRET", "s3-secret-canary-0123456789")
    good = {"endpoint": "10.0.0.5:7480", "access_key": "AKIADFSBENCH", "secret_key": "${DFSBENCH_TEST_S3_SECRET}"}

    def plan(system, s3, backend):
        site = {"ceph": {}} if system == "ceph" else {"seaweedfs": {"master": "10.0.0.5:9333",
                                                                    "filer": "10.0.0.5:8888"}}
        if s3 is not None:
            site[system]["s3"] = s3
        return build_plan({"environment": {"kind": "existing", "options": {**site, "allow_create": True}},
                           "backends": [backend], "workloads": [{"name": "s3", "options": {"seconds": 1}}]})

    for system, backend in (("ceph", "rgw"), ("seaweedfs", "seaweedfs-s3")):
        with pytest.raises(BadInput, match=f"measures the site's S3 gateway, and environment.options.{system} "
                                           "names none"):
            plan(system, None, backend)
        plan(system, good, backend)
        for key, bad, said in (("endpoint", "10.0.0.5:7480\nHost: evil", "endpoint"),
                               ("endpoint", "10.0.0.5", "endpoint"),
                               ("endpoint", "all:7480", "endpoint"),
                               ("endpoint", "10.0.0.5:70000", "port 70000"),
                               ("access_key", "AKIA\r\nX-Evil: 1", "access_key"),
                               ("access_key", "AKIA X", "access_key: 3 to 128"),
                               ("access_key", "AKIA/20260101/x", "access_key: 3 to 128"),
                               ("access_key", "AKIA,Signature=x", "access_key: 3 to 128"),
                               ("region", "US East", "region"),
                               ("endpoint", "10.0.0.5:7480/x", "endpoint"),
                               # (each is remembered as a secret, as the config gives it: none that text holds)
                               ("secret_key", "zq7 two words", "secret_key"),
                               ("secret_key", "zq7!x", "secret_key"),
                               ("region", "us-east-1\nx", "region")):
            with pytest.raises(BadInput, match=said):
                plan(system, {**good, key: bad}, backend)
    # without allow_create, a bucket is something it would make in the site's gateway
    with pytest.raises(BadInput, match="would create a bucket"):
        build_plan({"environment": {"kind": "existing", "options": {"ceph": {"s3": good}}},
                    "backends": ["rgw"], "workloads": [{"name": "s3", "options": {"seconds": 1}}]})
    # the secret is kept as the config wrote it, and hidden from everything written
    assert "s3-secret-canary" not in secret.redact("key s3-secret-canary-0123456789")
