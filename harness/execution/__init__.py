"""Carrying out a run: the config made a plan, the runner, each cell it runs (one object:
``cell``) and the checks before it, resuming a run, clients run together, the timeline of a
fault, what the lab's nodes spent, progress."""
