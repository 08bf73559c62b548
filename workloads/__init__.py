"""Workloads: one module (or package) per tool or engine (smallfile, largefile, fio, ...)."""

from pathlib import Path

# the stdlib-only engines the file workloads run on a client's host (Host.engine): a path,
# not an import, since it runs there, not here
ENGINES = Path(__file__).with_name("engines.py")
