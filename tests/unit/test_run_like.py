"""'run --like BUNDLE': the config a run stored reads back as the same config (every key
after defaults, as a config file would have it), and a bundle's run is planned on this
site's environment alone — never the bundle's, which names another site's hosts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli
from harness.commands import run as run_command
from harness.errors import BadInput
from harness.execution.plan import CONFIG_SUITES, build_plan
from harness.execution.schema import as_written
from harness.results import bundle
from harness.results.store import Store
from tests.unit.builders import stored_with_series

DATA = Path(__file__).parent.parent / "data"
RICH = {  # (a config with a little of everything a run stores)
    "environment": {"kind": "docker", "options": {"clients": 2, "link": {"rate": "250Mbit"}}},
    "limits": {"network": "1Gbit"}, "repeat": 2, "slo": {"p99": "20ms", "p50": "2ms"},
    "sweep": {"clients": [1, 2]},
    "backends": [{"name": "glusterfs", "options": {"replica": 3}}, {"name": "cephfs"}],
    "workloads": [{"name": "largefile", "clients": "all", "options": {"sizes": ["64MiB"]},
                   "fault": {"action": "kill", "after_s": 1, "restore_after_s": 5}},
                  {"name": "fio", "clients": "all", "options": {"size": "32MiB", "runtime_s": 5, "load": {"iops": [100, 200]},
                                              "profiles": [{"name": "rr", "rw": "randread", "bs": "4k"}]}},
                  {"name": "smallfile", "clients": "all", "options": {"files": [64]}}]}


def stored(data: dict) -> dict:
    return build_plan(data).config.model_dump(mode="json")


@pytest.mark.parametrize("config", [
    pytest.param({}, id="built-in default"),
    pytest.param(RICH, id="rich"),
    pytest.param(__import__("yaml").safe_load(CONFIG_SUITES["scaling"].config.read_text()), id="scaling suite"),
    *(pytest.param(json.loads((DATA / name).read_text())["config"], id=name)
      for name in ("docker-run-load-run.json", "docker-run-cost-run.json")),
])
def test_a_stored_config_reads_back_as_itself(config):
    first = stored(as_written(config))  # (a config as given, or one an older dfsbench stored)
    assert stored(as_written(first)) == first  # (what this dfsbench stores reads back as itself)
    if "variant" not in json.dumps(config):  # (a config as given: its stored form is the same config)
        assert first == stored(config)


def exported(tmp_path: Path, name: str) -> Path:
    """The container run of offered load, stored in ``tmp_path/name`` and exported beside it."""
    run_id = stored_with_series(tmp_path / name, "docker-run-load")
    store = Store(tmp_path / name)
    try:
        bundle.export(store, run_id, tmp_path / f"{name}.tar.gz", {})
    finally:
        store.close()
    return tmp_path / f"{name}.tar.gz"


def like(tmp_path: Path, *argv: str) -> object:
    args = cli.build_parser().parse_args(["run", *argv, "--like", str(exported(tmp_path, "a"))])
    overrides = {"scale": args.scale, "suite": args.suite, "repeat": args.repeat, "backends": args.backends,
                 "workloads": args.workloads}
    return run_command._plan_like(args, overrides)


def test_like_runs_the_bundles_work_on_this_sites_environment_only(tmp_path, capsys):
    site = tmp_path / "site.yaml"
    site.write_text("environment: {kind: docker, options: {clients: 2, link: {rate: 250Mbit}}}\n"
                    "limits: {network: 250Mbit}\n")
    plan = like(tmp_path, str(site))
    original = json.loads((DATA / "docker-run-load-run.json").read_text())["config"]
    got = plan.config.model_dump(mode="json")
    # the environment and limits are the site's, every key of them (the bundle's sample_every_s: 4 is not)
    want = stored({"environment": {"kind": "docker", "options": {"clients": 2, "link": {"rate": "250Mbit"}}},
                   "limits": {"network": "250Mbit"}})
    assert got["environment"] == want["environment"] and got["limits"] == want["limits"]
    rest = ("environment", "limits")
    assert {k: v for k, v in got.items() if k not in rest} == \
        {k: v for k, v in stored(as_written(original)).items() if k not in rest}
    assert plan.source.startswith("like run 20261127-120025-100382 (bundle sha256 ")
    assert "on environment 'docker'" in capsys.readouterr().out
    # no site config: --env's kind, with its defaults; neither: the default environment
    assert like(tmp_path / "2", "--env", "docker").config.model_dump(mode="json")["environment"] == \
        stored({"environment": {"kind": "docker"}})["environment"]
    with pytest.raises(BadInput, match="'all_clients' on environment 'local'"):
        like(tmp_path / "3")  # (the bundle's fio from every client, on the local lab's one: refused as any config)


def test_like_refuses_a_config_that_names_its_own_sites_hosts_or_paths(tmp_path):
    config = {"environment": {"kind": "local"}, "backends": [{"name": "localdir", "options": {"path": "/srv/x"}}],
              "workloads": [{"name": "fio", "options": {"size": "1MiB", "runtime_s": 1,
                                                         "servers": ["203.0.113.5,8765", "client.example.org"]}}]}
    plan = build_plan(config)
    store = Store(tmp_path / "a")
    try:
        store.begin_run("20270101-000000-abcdef", plan.config.model_dump(mode="json"), plan.config_hash,
                        {"hostname": "vendor"}, "run")
        store.finish_run("20270101-000000-abcdef", "complete")
        bundle.export(store, "20270101-000000-abcdef", tmp_path / "r.tar.gz", {})
    finally:
        store.close()
    args = cli.build_parser().parse_args(["run", "--like", str(tmp_path / "r.tar.gz")])
    with pytest.raises(BadInput) as caught:
        run_command._plan_like(args, {})
    assert "its config names its own site's hosts, paths or devices" in caught.value.message
    assert 'backends[0].options.path = "/srv/x"' in caught.value.message
    assert 'workloads[0].options.servers = ["203.0.113.5,8765", "client.example.org"]' in caught.value.message


def bundle_of(tmp_path: Path, config: dict) -> Path:
    """A bundle of a run that stored ``config`` as it is (a stranger's: never validated here)."""
    store = Store(tmp_path / "a")
    try:
        store.begin_run("20270101-000000-abcdef", config, "0" * 64, {"hostname": "vendor"}, "run")
        store.finish_run("20270101-000000-abcdef", "complete")
        bundle.export(store, "20270101-000000-abcdef", tmp_path / "r.tar.gz", {})
    finally:
        store.close()
    return tmp_path / "r.tar.gz"


def test_like_refuses_a_site_field_before_any_plugin_reads_the_file_it_names(tmp_path, monkeypatch):
    (tmp_path / "vendor.fio").write_text("[job]\nrw=read\nsize=1m\n")  # (a job file that exists here too)
    read: list[object] = []
    import workloads.fio.profiles as profiles
    monkeypatch.setattr(profiles, "checked_job_file", lambda path: read.append(path) or "")
    config = {"environment": {"kind": "local"}, "backends": [{"name": "localdir"}],
              "workloads": [{"name": "fio", "options": {"job_file": str(tmp_path / "vendor.fio")}},
                            {"name": "smallfile"}],
              "sweep": {"servers": [["198.51.100.7"]]}}
    args = cli.build_parser().parse_args(["run", "--like", str(bundle_of(tmp_path, config))])
    with pytest.raises(BadInput) as caught:
        run_command._plan_like(args, {})
    assert read == []  # (refused from the config as given: the job file was never opened)
    assert 'workloads[0].options.job_file = "/' in caught.value.message
    assert 'sweep.servers = ["198.51.100.7"]' in caught.value.message
    # the same config from this site reads its job file (the check is what stopped it)
    build_plan({k: v for k, v in config.items() if k != "sweep"})
    assert read
    # a sweep's option is checked against every workload, not only those the config names
    # (none named: every installed one runs, fio among them)
    read.clear()
    bare = {"environment": {"kind": "local"}, "backends": [{"name": "blockdev"}],
            "sweep": {"job_file": [str(tmp_path / "vendor.fio")]}}
    args = cli.build_parser().parse_args(["run", "--like", str(bundle_of(tmp_path / "bare", bare))])
    with pytest.raises(BadInput, match=r"sweep\.job_file = "):
        run_command._plan_like(args, {})
    assert read == []


def test_a_site_field_is_found_in_a_model_within_a_model_and_its_value_shown_escaped():
    from pydantic import AliasChoices, BaseModel, Field

    from harness.api.model import SITE, site_given

    class Inner(BaseModel):
        host: str | None = Field(None, json_schema_extra=SITE)
        size: int = 1

    class Outer(BaseModel):
        one: Inner | None = None
        many: list[Inner] = []
        named: dict[str, Inner] | None = None
        other: str | None = Field(None, json_schema_extra=SITE, validation_alias=AliasChoices("other", "elsewhere"))
        aliased: str | None = Field(None, json_schema_extra=SITE, alias="the-host")

    found = site_given(Outer, {"one": {"host": "a\u202eb"}, "many": [{"size": 2}, {"host": None}, {"host": "c" * 200}]},
                       "x")
    assert found == ['x.one.host = "a\\u202eb"', f'x.many.host = "{"c" * 158}…']
    assert site_given(Outer, {"one": "not an object", "many": 5}, "x") == []
    # a field read by another name, and a model as a mapping's value, are found too
    assert site_given(Outer, {"elsewhere": "h1", "the-host": "h2", "named": {"a": {"host": "h3"}}}, "x") == [
        'x.named.host = "h3"', 'x.other = "h1"', 'x.aliased = "h2"']

    class Deeper(BaseModel):  # (models in a mapping of lists, and in a list of lists)
        groups: dict[str, list[Inner]] = {}
        rows: list[list[Inner]] = []
    assert site_given(Deeper, {"groups": {"a": [{"host": "h4"}]}, "rows": [[{"size": 1}, {"host": "h5"}]]}, "x") == [
        'x.groups.host = "h4"', 'x.rows.host = "h5"']



def test_like_refuses_what_would_change_the_work(tmp_path):
    site = tmp_path / "site.yaml"
    site.write_text("environment: {kind: docker}\nworkloads: [{name: fio}]\n")
    with pytest.raises(BadInput, match="only its environment and limits are read, and it has workloads too"):
        like(tmp_path, str(site))
    with pytest.raises(BadInput, match="--scale would change it"):
        like(tmp_path / "2", "--scale", "quick")


def test_like_refuses_a_bundle_that_does_not_verify(tmp_path):
    (tmp_path / "r.tar.gz").write_bytes(b"")
    args = cli.build_parser().parse_args(["run", "--like", str(tmp_path / "r.tar.gz")])
    with pytest.raises(BadInput, match="cannot be read"):
        run_command._plan_like(args, {})
    args = cli.build_parser().parse_args(["run", "--like", str(exported(tmp_path, "b")), "--env", "docker",
                                          "--expect", "0" * 64])
    with pytest.raises(BadInput, match="does not verify: its SHA-256 is"):
        run_command._plan_like(args, {})
