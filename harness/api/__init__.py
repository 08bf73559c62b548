"""What a plugin author reads: the contracts of the three axes, what crosses between them
(targets, table specs, system facts, measurement records), how plugins are found, the guard
around tool parsers, the fault and sampler interfaces, the base of environments that
keep a lab, and what a backend's ``open`` builds on: the attachment's set-up as one
transaction (``attach``) and FUSE clients mounted, checked in /proc/mounts and undone
(``mounts``)."""
