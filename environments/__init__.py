"""Environments: where the cluster comes from (local processes, containers, existing)."""
