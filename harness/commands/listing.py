"""``dfsbench list``: every plugin registered, and what it says of itself (a storage system,
also where it runs and is faulted, its client and its packages)."""

from __future__ import annotations

import argparse
import sys

from harness.api import registry
from harness.api.systems import System
from harness.errors import DfsbenchError
from harness.system import files


def cmd_list(args: argparse.Namespace) -> int:
    """Every plugin registered, a line each, its name and what it says of itself escaped
    (a plugin is a stranger's code); one that cannot be used is named BROKEN with why, and
    the others are listed all the same. Exit 1 where one is broken."""
    broken = 0
    for kind in ("environment", "backend", "workload", "system"):
        print(f"{kind}s:")
        for name in registry.names(kind):
            shown = files.printable(name, 80)
            try:
                cls = registry.load(kind, name)
            except DfsbenchError as exc:
                print(f"  {shown:<12} BROKEN: {files.printable(exc.message, 1000)}")
                broken += 1
                continue
            print(f"  {shown:<12} {files.printable(_about(cls), 200)}")
            if kind == "system":
                assert issubclass(cls, System)  # (what the registry checked)
                print(f"  {'':<12} {files.printable(_capabilities(cls), 400)}")
    return 1 if broken else 0


def _capabilities(system: type[System]) -> str:
    """Where a storage system runs, where its nodes can be faulted, its client and the Debian
    packages its nodes need."""
    runs = ", ".join(registry.places(system)) or "no installed environment"
    faults = ", ".join(registry.places(system, faults=True)) or "none"
    packages = " ".join(system.packages) or "none"
    return f"runs in {runs}; faults in {faults}; client: {system.client}; packages: {packages}"


def _about(cls: type) -> str:
    """The first line of what a plugin's module says of itself."""
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    doc = getattr(module, "__doc__", None)
    lines = doc.strip().splitlines() if isinstance(doc, str) else []
    return lines[0] if lines else ""
