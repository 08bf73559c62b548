"""Machines, processes and undo: running programs, signals, secrets, the ledger of what was
created, and the hosts a client runs on (this machine, a container node, an SSH host)."""
