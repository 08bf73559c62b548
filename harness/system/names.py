"""The one rule for a name that becomes part of a path, a file name, an argv or a tool's
input — a config's variant or pool, a run id, a backend — and the joining of names onto a
directory, which holds every name to that rule wherever it came from (a config, a store,
a tool's output): a name is never a path ('/x', '../x') nor an option ('-x')."""

from __future__ import annotations

import re
from pathlib import Path

from harness.errors import BadInput
from harness.system.files import printable

# letters, digits, '_', '.' and '-', not starting with '.' or '-' (so never '.', '..', a
# hidden file or an option), at most 64
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
_NAME = re.compile(NAME_PATTERN)
RULE = "letters, digits, '_', '.' and '-', at most 64, not starting with '.' or '-'"
# a part of a path made of names ('cephfs-tuned-r0-p2': a backend's, a variant's, a repeat's):
# the same letters, up to what Linux allows a file name
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")


def is_name(text: object) -> bool:
    return isinstance(text, str) and _NAME.fullmatch(text) is not None


# what a host's label keeps as it is in a file name: a DNS name's letters and an IPv4 address's
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")


def host_part(label: str) -> str:
    """The file name a host's label gives (a client's raw outputs, the files it writes
    for the others of a cell): a DNS name or an IPv4 address as it is; any other
    character (an IPv6 address's ':', '[', ']', '%', a client name's '_'), and a '.' or
    '-' it starts with, as '_' and its two hex digits (UTF-8 bytes): so that no host's file
    is hidden, an option or beside the directory, and two hosts never share a file name
    (``fd00::5`` is ``fd00_3a_3a5``; ``a_b`` is ``a_5fb``). Join it with
    :func:`named_path`, which holds it to a name's letters."""
    return "".join(c if c in _PLAIN and (j or c not in ".-") else "".join(f"_{b:02x}" for b in c.encode())
                   for j, c in enumerate(label))


def named_path(root: Path, *names: str) -> Path:
    """``root`` / each of ``names``, each a name (:data:`NAME_PATTERN`, or names joined by
    '-', up to 255 letters): a path of directories and files under ``root``, never beside
    or above it."""
    for name in names:
        if not isinstance(name, str) or _PART.fullmatch(name) is None:
            raise BadInput(f"'{printable(name, 80)}' is not a name ({RULE}), so it does not become part "
                           f"of a path under {printable(root)}",
                           hint="it was read from a store or a tool output that no dfsbench wrote; "
                                "check where it came from")
    return root.joinpath(*names)
