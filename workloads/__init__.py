"""Workloads: one module per tool or engine (smallfile, largefile, ...)."""
