"""What a plugin author reads: the contracts of the three axes, what crosses between them
(targets, table specs, system facts, measurement records), how plugins are found, the guard
around tool parsers, the fault and sampler interfaces, and the base of environments that
keep a lab."""
