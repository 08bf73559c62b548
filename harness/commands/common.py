"""What the commands share: the results directory a command reads or writes, and its store
and catalogue; the paths no file dfsbench writes for a user may land on; the one escaping
rule every line of output passes; and the pause of the cycle collector while every record
of the runs shown is read."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import BadInput
from harness.system import files

if TYPE_CHECKING:
    from harness.results.catalogue import Catalogue
    from harness.results.store import Store


def shown_line(line: str) -> str:
    """A line of output with its control characters escaped (a CSV line keeps its '\\r')."""
    body, end = (line[:-1], "\r") if line.endswith("\r") else (line, "")
    return (body if body.isprintable() else files.printable(body, most=1 << 30)) + end


def results_dir(args: argparse.Namespace) -> Path:
    from harness.results.store import default_results_dir  # only commands that read or write runs pay for it

    root: Path = args.results or default_results_dir()
    if root.exists() and not root.is_dir():
        raise BadInput(f"--results {root} is a file, not a directory")
    return root


def store_of(args: argparse.Namespace) -> Store:
    from harness.results.store import Store

    return Store(results_dir(args))


def catalogue_of(args: argparse.Namespace) -> Catalogue:
    from harness.results.catalogue import Catalogue

    return Catalogue(results_dir(args))


def kept(results: Path) -> dict[Path, str]:
    """What no file dfsbench writes for a user may land on: the store and its journals, and
    every run's raw outputs."""
    from harness.results.schema import DB_NAME

    return {**{results / (DB_NAME + end): "the results store" for end in ("", "-wal", "-shm", "-journal")},
            results / "raw": "among the stored runs' raw outputs"}


@contextmanager
def collector_paused() -> Iterator[None]:
    """Reading every record of the runs shown: Python's cycle collector would walk the records
    again and again while they are made and tabled (a second of 100,000), and none of them is
    in a cycle; it runs again afterwards."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
