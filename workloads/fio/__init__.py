"""Workload ``fio``: the class the entry point names."""

from workloads.fio.workload import Fio

__all__ = ["Fio"]
