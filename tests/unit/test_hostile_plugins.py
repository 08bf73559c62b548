"""A plugin is installed code from someone else: broken, hostile or just old. Whatever it
does — raise anything at import (SystemExit, KeyboardInterrupt, RecursionError), raise in
its options' validator or its defaults(), take a built-in's name, carry a name that is a
path, print escapes in its docs — dfsbench names it in one line and goes on with the
others; it stops only a config that names it. Each plugin here is a distribution of its
own, installed under tmp_path as a third party's would be."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.helpers import dfsbench

MODULES = {
    "hostile_exit": "raise SystemExit(3)\n",
    "hostile_interrupt": "raise KeyboardInterrupt\n",
    "hostile_recursion": "def f():\n    return f()\nf()\n",
    "hostile_import": "import no_such_module_anywhere\n",
    "hostile_dfserror": "from harness.errors import DfsbenchError\nraise DfsbenchError('plugin says \\x1b[31mRED')\n",
    "hostile_sigterm": "from harness.system.signals import Interrupted\nraise Interrupted(15)\n",
    "hostile_kinds": '''"""Hostile kinds: \x1b[31mred\x1b[0m and a
second line."""
from pydantic import field_validator
from harness.api.contracts import Backend, Options, Workload
from harness.api.target import Target


class TypeOptions(Options):
    size: int = 1

    @field_validator("size")
    @classmethod
    def _boom(cls, v):
        if v == 13:
            raise TypeError("unlucky")
        return v


class Typed(Backend):
    name = "typed"
    Options = TypeOptions

    def open(self, cluster, workdir):
        return Target("path", workdir, self.name, self.variant, {})


class Recursing(Workload):
    name = "recursing"

    @classmethod
    def defaults(cls, scale):
        return cls.defaults(scale)

    def cells(self):
        return [{}]

    def run(self, target, cell, scratch, raw_dir):
        yield from ()


class Impostor(Backend):
    name = "localdir"

    def open(self, cluster, workdir):
        return Target("path", workdir, self.name, self.variant, {})


class FioImpostor(Workload):
    name = "fio"
    tool = "fio"

    @staticmethod
    def parser(text, source=""):
        raise SystemExit("the impostor's parser ran")

    def cells(self):
        return [{}]

    def run(self, target, cell, scratch, raw_dir):
        yield from ()


class Crashing(Workload):
    name = "crashing"

    def cells(self):
        return [{"n": 1}, {"n": 2}]

    def run(self, target, cell, scratch, raw_dir):
        if cell["n"] == 1:
            raise SystemExit("a plugin's exit in its run")
        raise TypeError("a plugin's bug in its run")
        yield


class OnlyHere(Backend):
    name = "onlyhere"

    def only_here(self):
        raise TypeError("only_here bug")

    def open(self, cluster, workdir):
        return Target("path", workdir, self.name, self.variant, {})


class Detachy(Backend):
    name = "detachy"

    def open(self, cluster, workdir):
        workdir.mkdir(parents=True, exist_ok=True)

        def detach():
            raise TypeError("detach bug")
        return Target("path", workdir, self.name, self.variant, {}, detach=detach)


class Pathy(Backend):
    name = "pathy"

    def open(self, cluster, workdir):
        return Target("path", workdir, self.name, self.variant, {})


class NeedsGhost(Backend):
    name = "needsghost"
    requires = frozenset({"ghost"})

    def open(self, cluster, workdir):
        return Target("path", workdir, self.name, self.variant, {})
''',
}


def _install(site: Path, dist: str, groups: dict[str, dict[str, str]]) -> None:
    # (a dist-info directory is named by the distribution's name with '_' for '-', as pip
    # names it: importlib.metadata reads the name up to the first '-' as the distribution's)
    info = site / (re.sub(r"[^A-Za-z0-9.]", "_", dist) + "-0.1.dist-info")
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in eps.items()) + "\n"
        for group, eps in groups.items()))


@pytest.fixture
def hostile(tmp_path: Path):
    """What a ``dfsbench`` command is given to find the plugins that ``install`` puts in
    tmp_path/site (their modules in tmp_path/code)."""
    code, site = tmp_path / "code", tmp_path / "site"
    code.mkdir()
    site.mkdir()
    for name, text in MODULES.items():
        (code / f"{name}.py").write_text(text)
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(code), os.environ.get("PYTHONPATH", "")]),
           "DFSBENCH_RESULTS": str(tmp_path / "results"), "DFSBENCH_LOCAL_LAB_DIR": str(tmp_path / "lab")}

    def install(dist: str, groups: dict[str, dict[str, str]]) -> dict[str, str]:
        _install(site, dist, groups)
        return env

    return install


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("module, raised", [("hostile_exit", "SystemExit: 3"),
                                            ("hostile_dfserror", "DfsbenchError: plugin says \\x1b[31mRED"),
                                            ("hostile_sigterm", "Interrupted: SIGTERM"),
                                            ("hostile_interrupt", "KeyboardInterrupt"),
                                            ("hostile_recursion", "RecursionError"),
                                            ("hostile_import", "ModuleNotFoundError")])
def test_a_plugin_that_raises_anything_at_import_is_named_broken_and_the_others_are_listed(
        tmp_path, hostile, module, raised):
    env = hostile("dfsbench-hostile", {"dfsbench.workloads": {"aaa": f"{module}:Nothing"},
                                       "dfsbench.backends": {"aab": f"{module}:Nothing"}})
    listed = dfsbench("list", env=env, timeout=300)
    assert listed.returncode == 1, listed.stdout + listed.stderr
    assert "Traceback" not in listed.stdout + listed.stderr
    for kind, name in (("workload", "aaa"), ("backend", "aab")):
        line = next(x for x in listed.stdout.splitlines() if x.strip().startswith(name + " "))
        assert f"BROKEN: {kind} plugin '{name}' (distribution 'dfsbench-hostile', {module}:Nothing) failed to " \
               f"load: importing it raised {raised}" in line, line
    # every other plugin is listed after them, each environment usable
    for other in ("fio", "smallfile", "largefile", "localdir", "glusterfs", "cephfs", "local", "docker", "existing"):
        line = next(x for x in listed.stdout.splitlines() if x.strip().startswith(other + " "))
        assert "BROKEN" not in line, line

    checked = dfsbench("check", _config(tmp_path, "backends: [localdir]\nworkloads: [largefile]\n"), env=env,
                       timeout=300)
    assert checked.returncode == 0, checked.stderr
    assert "Traceback" not in checked.stderr and f"workload plugin 'aaa'" in checked.stderr, checked.stderr
    named = dfsbench("check", _config(tmp_path, "backends: [aab]\nworkloads: [largefile]\n"), env=env, timeout=300)
    assert named.returncode == 1 and "backends[0].name: backend plugin 'aab'" in named.stderr, named.stderr
    assert "Traceback" not in named.stderr


def test_a_validator_or_defaults_that_raise_are_the_plugins_fault_said_in_a_line(tmp_path, hostile):
    env = hostile("dfsbench-kinds", {"dfsbench.backends": {"typed": "hostile_kinds:Typed"},
                                     "dfsbench.workloads": {"recursing": "hostile_kinds:Recursing"}})
    listed = dfsbench("list", env=env, timeout=300)
    assert "Traceback" not in listed.stdout + listed.stderr and listed.returncode == 1
    line = next(x for x in listed.stdout.splitlines() if x.strip().startswith("recursing "))
    assert "BROKEN: workload plugin 'recursing' (distribution 'dfsbench-kinds', hostile_kinds:Recursing) is " \
           "broken: its defaults('quick') raised RecursionError" in line, line
    typed = next(x for x in listed.stdout.splitlines() if x.strip().startswith("typed "))
    assert "BROKEN" not in typed  # (its validator raises only for one value)

    # a TypeError the validator raises for a config's value: the plugin named, no traceback
    bad = dfsbench("check", _config(tmp_path, "backends:\n  - {name: typed, options: {size: 13}}\n"
                                              "workloads: [largefile]\n"), env=env, timeout=300)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Traceback" not in bad.stderr
    assert "backend plugin 'typed' (distribution 'dfsbench-kinds', hostile_kinds:Typed) is broken: checking " \
           "backends[0] raised TypeError: unlucky" in bad.stderr, bad.stderr
    fine = dfsbench("check", _config(tmp_path, "backends:\n  - {name: typed, options: {size: 12}}\n"
                                               "workloads: [largefile]\n"), env=env, timeout=300)
    assert fine.returncode == 0, fine.stderr
    assert "workload plugin 'recursing'" in fine.stderr and "Traceback" not in fine.stderr  # (named, a line)
    named = dfsbench("check", _config(tmp_path, "backends: [localdir]\nworkloads: [recursing]\n"), env=env,
                     timeout=300)
    assert named.returncode == 1 and "workloads[0].name: workload plugin 'recursing'" in named.stderr


def test_a_plugin_never_replaces_another_and_both_are_named(tmp_path, hostile):
    env = hostile("dfsbench-impostor", {"dfsbench.backends": {"localdir": "hostile_kinds:Impostor"},
                                        "dfsbench.workloads": {"fio": "hostile_kinds:FioImpostor"}})
    listed = dfsbench("list", env=env, timeout=300)
    line = next(x for x in listed.stdout.splitlines() if x.strip().startswith("localdir "))
    assert "BROKEN: backend plugin 'localdir' is registered 2 times" in line, line
    assert "distribution 'dfsbench-impostor', hostile_kinds:Impostor" in line
    assert "distribution 'dfsbench', backends.localdir:" in line, line
    refused = dfsbench("check", _config(tmp_path, "backends: [localdir]\nworkloads: [largefile]\n"), env=env,
                       timeout=300)
    assert refused.returncode == 1 and "registered 2 times" in refused.stderr, refused.stderr
    # the impostor's parser never runs: the tool is no one's
    out = tmp_path / "fio.json"
    out.write_text("{}")
    parsed = dfsbench("parse", "fio", str(out), env=env, timeout=300)
    assert parsed.returncode != 0 and "impostor's parser ran" not in parsed.stdout + parsed.stderr
    assert "unknown tool 'fio'" in parsed.stderr and "registered 2 times" in parsed.stderr, parsed.stderr
    # without the impostor, the built-ins are themselves again (the test's own check that it can fail)
    clean = {**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    assert "BROKEN" not in dfsbench("list", env=clean, timeout=300).stdout


def test_a_plugin_whose_name_is_a_path_or_whose_words_hold_escapes_is_shown_escaped(tmp_path, hostile):
    env = hostile("dfsbench-names\x1b[2J", {"dfsbench.backends": {"../x": "hostile_kinds:Pathy",
                                                                  "/opt/x": "hostile_kinds:Pathy",
                                                                  "pathy": "hostile_kinds:Pathy"}})
    listed = dfsbench("list", env=env, timeout=300)
    assert "\x1b" not in listed.stdout + listed.stderr, listed.stdout
    for name in ("../x", "/opt/x"):
        line = next(x for x in listed.stdout.splitlines() if x.strip().startswith(name + " "))
        assert f"BROKEN: backend plugin '{name}'" in line and "its name is not a name" in line, line
    pathy = next(x for x in listed.stdout.splitlines() if x.strip().startswith("pathy "))
    assert "BROKEN" not in pathy and "\\x1b[31mred\\x1b[0m" in pathy, pathy  # (its docs, escaped)


def test_a_broken_storage_system_stops_no_environment_only_a_backend_that_needs_it(tmp_path, hostile):
    env = hostile("dfsbench-ghost", {"dfsbench.systems": {"ghost": "hostile_exit:Ghost"},
                                     "dfsbench.backends": {"needsghost": "hostile_kinds:NeedsGhost"}})
    listed = dfsbench("list", env=env, timeout=300)
    assert listed.returncode == 1 and "Traceback" not in listed.stdout + listed.stderr
    for name in ("local", "docker", "existing", "needsghost", "glusterfs"):
        line = next(x for x in listed.stdout.splitlines() if x.strip().startswith(name + " "))
        assert "BROKEN" not in line, line
    ghost = next(x for x in listed.stdout.splitlines() if x.strip().startswith("ghost "))
    assert "BROKEN: system plugin 'ghost'" in ghost and "SystemExit: 3" in ghost, ghost
    checked = dfsbench("check", _config(tmp_path, "scale: quick\n"), env=env, timeout=300)
    assert checked.returncode == 0 and "backends: glusterfs/default, cephfs/default" in checked.stdout, \
        checked.stdout + checked.stderr
    named = dfsbench("check", _config(tmp_path, "backends: [needsghost]\nworkloads: [largefile]\n"), env=env,
                     timeout=300)
    assert named.returncode == 2, named.stdout + named.stderr
    assert "backends[0] (needsghost/default) needs ghost, which environment 'local' does not provide: system " \
           "plugin 'ghost'" in named.stderr, named.stderr


def test_a_plugin_that_raises_in_its_run_fails_its_cell_and_the_run_goes_on(tmp_path, hostile):
    env = hostile("dfsbench-crash", {"dfsbench.workloads": {"crashing": "hostile_kinds:Crashing"}})
    config = _config(tmp_path, "backends: [localdir]\nworkloads:\n  - crashing\n"
                               "  - {name: largefile, options: {sizes: [1MiB]}}\n")
    run = dfsbench("run", config, "--format", "json", env=env, timeout=300)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stdout + run.stderr
    import json
    records = json.loads(run.stdout)["records"]
    failed = [r for r in records if r["workload"] == "crashing"]
    assert [(r["params"]["n"], r["flags"], r["value"]) for r in failed] == [(1, ["failed"], None), (2, ["failed"], None)]
    assert "workload plugin 'crashing' (distribution 'dfsbench-crash', hostile_kinds:Crashing) is broken: running " \
           "crashing" in failed[0]["params"]["error"] and "raised SystemExit: a plugin's exit in its run" in \
           failed[0]["params"]["error"], failed[0]
    assert "raised TypeError: a plugin's bug in its run" in failed[1]["params"]["error"]
    assert {r["test"] for r in records if r["workload"] == "largefile" and r["value"] is not None} == {"write", "read"}


def test_a_distribution_named_like_dfsbench_replaces_nothing(tmp_path, hostile):
    """importlib's entry_points() keeps the first distribution of a name: one called
    'DFSBench', first on the path, would stand in for dfsbench whole (run from elsewhere
    than the checkout, whose own metadata comes first)."""
    env = hostile("DFSBench", {"dfsbench.backends": {"localdir": "hostile_kinds:Impostor"}})
    listed = dfsbench("list", env=env, timeout=300, cwd=tmp_path)
    line = next(x for x in listed.stdout.splitlines() if x.strip().startswith("localdir "))
    assert "BROKEN" in line and "registered 2 times" in line and "hostile_kinds:Impostor" in line, line
    for other in ("local", "fio", "largefile", "glusterfs", "ceph"):
        line = next(x for x in listed.stdout.splitlines() if x.strip().startswith(other + " "))
        assert "BROKEN" not in line, line


def test_a_plugins_hooks_and_its_detach_are_its_own_fault_said_in_a_line(tmp_path, hostile):
    env = hostile("dfsbench-hooks", {"dfsbench.backends": {"onlyhere": "hostile_kinds:OnlyHere",
                                                           "detachy": "hostile_kinds:Detachy"}})
    checked = dfsbench("check", _config(tmp_path, "backends: [onlyhere]\nworkloads: [largefile]\n"), env=env,
                       timeout=300)
    assert checked.returncode == 1 and "Traceback" not in checked.stderr, checked.stderr
    assert "backend plugin 'onlyhere' (distribution 'dfsbench-hooks', hostile_kinds:OnlyHere) is broken: checking " \
           "backends[0] raised TypeError: only_here bug" in checked.stderr, checked.stderr
    run = dfsbench("run", _config(tmp_path, "backends: [detachy]\nworkloads:\n"
                                            "  - {name: largefile, options: {sizes: [1MiB]}}\n"), env=env, timeout=300)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stdout + run.stderr
    assert "the end of attaching detachy/default raised TypeError: detach bug" in run.stderr, run.stderr
    assert "Large files" in run.stdout and "detach bug" in run.stdout, run.stdout + run.stderr  # (what was measured is kept and shown)
