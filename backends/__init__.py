"""Backends: one module per storage target (cephfs, glusterfs, localdir, ...)."""
