"""GlusterFS: its CLI and volume facts (client), and the backend of a FUSE mount of a
volume (glusterfs)."""
