"""``mpirun``'s launch agent (its ``plm_rsh_agent``) for a cell's MPI job: how this machine
starts Open MPI's daemon on a client host, in place of ``ssh``.

    DFSBENCH_MPI_HOSTS=HOSTS_JSON python3 mpi_agent.py NAME COMMAND-WORDS…

``mpirun`` calls it with a host's name from the job's hostfile and the daemon's command
line (words of a shell line), in mpirun's environment. ``HOSTS_JSON`` (named there, not on
the agent's line, which mpirun splits on white space) is a file dfsbench wrote beside the
job's log (a name: the argv
that runs a command on that host from this machine — ``docker exec`` into a client
container, or dfsbench's SSH runner — ending in ``sh -c``); the agent appends the command
line as one word and execs it (telling dfsbench's SSH runner that the command lasts as long
as the job). A name the file does not hold is refused: nothing but the hosts of the job is
reached. Only the standard library: ``mpirun`` runs it with this
machine's Python, outside dfsbench.
"""

from __future__ import annotations

import json
import os
import sys

HOSTS_ENV = "DFSBENCH_MPI_HOSTS"  # (the job's file of hosts)


def main(argv: list[str]) -> int:
    path = os.environ.get(HOSTS_ENV)
    if len(argv) < 3 or not path:
        sys.stderr.write(f"usage: {HOSTS_ENV}=HOSTS_JSON mpi_agent.py NAME COMMAND...\n")
        return 2
    with open(path) as f:
        hosts = json.load(f)
    prefix = hosts.get(argv[1])
    if not isinstance(prefix, list) or not prefix or not all(isinstance(w, str) for w in prefix):
        sys.stderr.write(f"mpi_agent: {argv[1]!r} is not a host of this job\n")
        return 2
    # (through dfsbench's SSH runner, the daemon's command lasts as long as the job does)
    os.environ["DFSBENCH_SSH_LIFELONG"] = "1"
    os.execvp(prefix[0], [*prefix, " ".join(argv[2:])])
    return 127  # (execvp does not return)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
