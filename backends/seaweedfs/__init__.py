"""SeaweedFS: what is true of weed itself (weed), the storage system plugin that brings it up
or finds it (system), and the backend of a FUSE mount of its filer (seaweedfs)."""
