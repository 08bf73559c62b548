"""dfsbench core, in five rooms whose imports go one way (held by import-linter, see
setup.cfg):

- ``api``: what a plugin author reads — the Environment, Backend and Workload contracts,
  the Target, table specs and system facts, the measurement record, the registry, the
  parser guard, the fault and sampler interfaces, the base of environments with a lab;
- ``system``: machines, processes and undo — processes, signals, secrets, the ledger, hosts
  (this machine, a container node, an SSH host) and the engines they run;
- ``execution``: config, the runner, the cells it runs and their checks, resume, clients
  run together, the fault timeline, progress;
- ``results``: the store, the catalogue of runs, the reference data;
- ``report``: limits, statistics, comparison tables, the gate, the view and its renderers.

report → results → api → system; execution may use all of them, and ``cli`` sits on top.
Nothing here imports a plugin package (backends, workloads, environments).
"""

__version__ = "0.1.0"
