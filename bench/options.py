"""What the benches share of their command lines."""

from __future__ import annotations

from pathlib import Path


def keep_dir(args: list[str]) -> Path | None:
    """``--keep DIR`` taken out of ``args`` (the bench's own words stay): where the bench keeps
    what it made, to look at or to use again; None without it."""
    if "--keep" not in args:
        return None
    at = args.index("--keep")
    if at + 1 >= len(args):
        raise SystemExit("--keep needs a directory")
    keep = Path(args[at + 1])
    del args[at:at + 2]
    return keep
