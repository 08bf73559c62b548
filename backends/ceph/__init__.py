"""Ceph: its client and cluster facts (client), and the backends on it: CephFS through
ceph-fuse (cephfs), RBD images (rbd) and RADOS pools (rados)."""
