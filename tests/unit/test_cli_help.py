"""The command's help names what is installed and built in, read from where it is
registered or defined (the registry's entry points, the suites' table), so it cannot drift
from them; and reading it costs a command that shows no help nothing."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from harness.api import registry
from harness.execution.plan import CONFIG_SUITES, SUITES
from harness.execution.schema import DEFAULT_ENVIRONMENT
from tests.unit.inproc import dfsbench


@pytest.fixture
def unwrapped(monkeypatch):
    """Help on lines wide enough that argparse breaks none (it breaks a name at its '-')."""
    monkeypatch.setenv("COLUMNS", "2000")


def option_help(command: str, option: str) -> str:
    """What ``dfsbench COMMAND --help`` says of ``option``: its line, and the line under it
    where argparse put its help there (after a long list of choices)."""
    shown = dfsbench(command, "--help")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith(option))
    under = [line for line in lines[at + 1:at + 2] if line.startswith(" " * 4) and not line.lstrip().startswith("-")]
    return " ".join([lines[at], *under])


def named(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def test_the_help_of_run_names_every_environment_and_suite(unwrapped):
    environments = registry.names("environment")
    assert DEFAULT_ENVIRONMENT in environments
    env = option_help("run", "--env ")
    assert [name for name in environments if not named(name, env)] == [], env
    assert f"{DEFAULT_ENVIRONMENT} (where the config names none)" in env
    suites = option_help("run", "--suite ")
    every = [*SUITES, *CONFIG_SUITES]
    assert "{" + ",".join(every) + "}" in suites  # (the choices)
    assert [name for name in every if f"'{name}'" not in suites] == [], suites
    # the backends of the report suite as they declare it, and no system the help was told of
    members = sorted(name for name in registry.names("backend")
                     if "report" in getattr(registry.load("backend", name), "suites", {}))
    assert members and re.search(r"'report' \(the default\) [^;]* on ([\w, -]+);", suites).group(1).split(", ") \
        == sorted(members, key=lambda n: registry.load("backend", n).suites["report"]), suites


def test_the_help_of_lab_run_parse_and_import_names_what_is_installed(unwrapped):
    env = option_help("lab", "--env ")
    assert [name for name in registry.names("environment") if not named(name, env)] == [], env
    for kind in ("backend", "workload"):
        line = option_help("run", f"--{kind}s ")
        assert [name for name in registry.names(kind) if not named(name, line)] == [], line
    tools = sorted(registry.tools())
    assert tools
    for command in ("parse", "import"):
        line = option_help(command, "TOOL " if command == "parse" else "TOOL|BUNDLE ")
        assert [tool for tool in tools if not named(tool, line)] == [], line


def test_the_parser_reads_no_entry_point_and_imports_no_plugin_until_help_is_shown():
    """What the help lists is read when it is shown: a command pays nothing for it (the
    tools are known only by importing every workload)."""
    code = """if True:
        import sys
        from harness.api import registry
        from harness.cli import build_parser
        build_parser().parse_known_args(["compare", "latest"])
        print(registry._all_entry_points.cache_info().currsize,
              sorted(m for m in sys.modules if m.split(".")[0] in ("backends", "workloads", "environments")))
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "[]"], done.stdout
