"""Workload ``fio``: ``profiles`` (the profile sets and options, and the checks on job
files), ``json_output`` and ``text_output`` (the parsers of fio's output), ``servers``
(``fio --server`` for client/server mode) and ``workload``: the class the entry point
names, exported here."""

from workloads.fio.workload import Fio

__all__ = ["Fio"]
