"""Carrying out a run: the config made a plan, the runner and the checks before each cell,
clients run together, the timeline of a fault, what the lab's nodes spent, progress."""
