"""The s3 workload on the container lab, for real: RGW on the Ceph monitor's node and SeaweedFS's
S3 gateway on its master's node, each started by its backend for the attachment; the mix from
two client nodes at once through a storage node's kill, its objects read back on the client
that did not write them; a fault that would kill the gateway's node refused; nothing of either
gateway left on the lab that stays up."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.helpers import dfsbench

pytestmark = [
    pytest.mark.lab,
    pytest.mark.takes(200),
    pytest.mark.thorough,
    pytest.mark.xdist_group("docker"),  # (one container lab at a time beside the local labs)
    pytest.mark.skipif(shutil.which("docker") is None or
                       subprocess.run(["docker", "info"], capture_output=True).returncode != 0,
                       reason="needs a running Docker engine"),
]

LAB = """\
environment: {kind: docker, options: {clients: 2, sample_every_s: 4, launcher: exec, seaweedfs_replication: "001"}}
backends: [rgw, seaweedfs-s3]
"""
RUN = LAB + """\
workloads:
  - name: s3
    clients: all
    options: {seconds: 6, objects: 40, workers: [3], load: {iops: [40]}}
    fault: {action: kill, after_s: 1, restore_after_s: 3}
"""
REFUSED = LAB.replace("[rgw, seaweedfs-s3]", "[rgw]") + """\
workloads:
  - name: s3
    options: {seconds: 2, objects: 20, workers: [2]}
    fault: {action: kill, node: ceph-mon1, after_s: 0.5, restore_after_s: 1}
"""


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120, check=True).stdout


def test_both_gateways_on_the_container_lab_from_two_clients_through_a_kill(tmp_path):
    lab_dir = tmp_path / "lab"
    env = {"DFSBENCH_DOCKER_LAB_DIR": str(lab_dir), "DFSBENCH_RESULTS": str(tmp_path / "results")}
    (tmp_path / "lab.yaml").write_text(LAB)
    (tmp_path / "run.yaml").write_text(RUN)
    (tmp_path / "refused.yaml").write_text(REFUSED)
    try:
        up = dfsbench("lab", "up", str(tmp_path / "lab.yaml"), env=env, timeout=900)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        lab = json.loads((lab_dir / "ledger.json").read_text())["data"]["docker"]["lab"]
        run = dfsbench("run", str(tmp_path / "run.yaml"), env=env, timeout=1200)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
        # (as the tables read them: with the flags derived from the fault's moments)
        view = json.loads(dfsbench("compare", "latest", "--format", "json", env=env).stdout)
        systems = {s["backend"]: s["description"] for s in view["runs"][0]["systems"]}
        records = [(r["backend"], r["test"], r["metric"], r["value"], r["flags"], r["params"])
                   for r in view["records"] if r["workload"] == "s3"]
        faults = [(r["backend"], r["params"]) for r in view["records"] if r["workload"] == "fault"]
        for backend, node in (("rgw", "ceph-mon1"), ("seaweedfs-s3", "seaweedfs-master1")):
            assert systems[backend]["gateway_node"] == node and systems[backend]["environment"] == "docker"
            ip = docker("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                        f"dfsbench-{lab}-{node}").strip()
            assert systems[backend]["endpoint"] == f"{ip}:{7480 if backend == 'rgw' else 8333}"
            # both clients' rows and their aggregate, for every phase of the faulted cell
            hosts = {(p.get("host"), p.get("phase")) for b, t, m, v, f, p in records
                     if b == backend and t == "all" and m == "iops" and p.get("offered_iops")}
            assert hosts == {(h, ph) for h in ("client1", "client2", "all") for ph in ("before", "during", "after")}, hosts
            during = [(v, f) for b, t, m, v, f, p in records if b == backend and t == "all" and m == "iops"
                      and p.get("phase") == "during" and p.get("host") == "all"]
            assert during and all("degraded" in f and v > 0 for v, f in during), during
            faulted = [p for b, p in faults if b == backend and p["fault"].startswith(("ceph-osd2", "seaweedfs-vol2"))]
            assert len(faulted) == 1 and faulted[0]["stores_data"] is True, faults
            # what the mix left is read on the other client, with no cache of its to drop
            verified = faulted[0]["verified"]
            assert verified.startswith("yes (") and "client1 (no client cache)" in verified and \
                "client2 (no client cache)" in verified, verified
        # a kill of the monitor's node, which runs RGW, is refused and said (the cell fails, the run ends)
        refused = dfsbench("run", str(tmp_path / "refused.yaml"), env=env, timeout=600)
        out = refused.stdout + refused.stderr
        assert refused.returncode == 1, out[-4000:]
        assert "fault node 'ceph-mon1' runs an S3 gateway an attachment started" in out, out[-4000:]
        # the lab stays up, with no gateway left in any node, nor a key file of one
        for node in ("ceph-mon1", "seaweedfs-master1"):
            name = f"dfsbench-{lab}-{node}"
            assert docker("inspect", "--format", "{{.State.Running}}", name).strip() == "true"
            left = docker("exec", name, "sh", "-c", "ls /run | grep dfsbench-gateway; ls /data | grep dfsbench-; "
                                                   "pgrep -a radosgw; true")
            assert left.strip() == "", left
            weeds = docker("exec", name, "sh", "-c", "pgrep -a weed; true").splitlines()
            assert not [w for w in weeds if " s3 " in w], weeds
        for client in ("client1", "client2"):
            secrets = docker("exec", f"dfsbench-{lab}-{client}", "sh", "-c",
                             f"find {lab_dir} -path '*private*' -o -name rgw -o -name seaweedfs-s3 2>/dev/null; true")
            assert secrets.strip() == "", secrets
    finally:  # (a failed test leaves no lab; its own failure is the one said)
        down = dfsbench("lab", "down", "--env", "docker", env=env, timeout=600) \
            if (lab_dir / "ledger.json").exists() else None
    assert down is not None and down.returncode == 0, down.stderr if down else "no lab to take down"
