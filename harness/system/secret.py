"""Secrets: keyrings, passwords and keys. A config value may come from the environment
(``${NAME}``) or a file (``file:PATH``) instead of the config itself; a value that is a
secret is also remembered here, for this process, so that every text dfsbench writes —
stored runs, raw tool outputs, progress lines, error messages — has it replaced by
``[secret]`` on the way out. A secret is never put on a command line: it goes into a
file of mode 0600 or straight to the library that needs it.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ValidationInfo

from harness import errors
from harness.system import files

SHOWN = "[secret]"
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_known: set[str] = set()
_lock = threading.Lock()


def expand(value: str) -> str:
    """``${NAME}`` (anywhere in the value) from the environment, or the whole value from
    ``file:PATH``; any other value as it is. A missing variable or file is a ValueError
    naming it (the config's validation says which key)."""
    if value.startswith("file:"):
        path = Path(value[5:]).expanduser()
        try:  # (a key or a password: a regular file of a few lines, never a FIFO or /dev/zero)
            return files.read_text(path, "file", 64 << 10, secret=True).rstrip("\n")
        except errors.BadInput as exc:
            raise ValueError(exc.message) from None

    def variable(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ValueError(f"environment variable {name} is not set")
        return os.environ[name]

    return _REFERENCE.sub(variable, value)


def remember(value: str) -> str:
    """Hide ``value`` from everything written from now on (values under 4 characters
    would hide digits of measurements, and are not secrets worth the name)."""
    if len(value) >= 4:
        with _lock:
            _known.add(value)
    return value


def redact(text: str) -> str:
    """``text`` with every remembered secret replaced by ``[secret]``."""
    if not _known or not text:
        return text
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for value in known:
        if value in text:
            text = text.replace(value, SHOWN)
    return text


errors.redact_with(redact)


def redact_file(path: Path) -> None:
    """Rewrite a file dfsbench keeps (a tool's raw output) without the secrets in it."""
    if not _known or not path.exists():
        return
    text = path.read_text(errors="replace")
    clean = redact(text)
    if clean != text:
        path.write_text(clean)


def redact_json(value: Any) -> Any:
    """A JSON-able value (a stored config, a target's description) without secrets."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_json(v) for v in value]
    return value


def _expanded(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str):
        return expand(value)
    return value


def _kept(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str):
        remember(expand(value))  # readable now, and hidden from everything written from now on
    return value


def is_reference(value: str | None) -> bool:
    """Whether a secret is given as ``${NAME}`` or ``file:PATH`` rather than written out."""
    return bool(value) and (_REFERENCE.fullmatch(value or "") is not None or (value or "").startswith("file:"))


# a config value that may come from ${ENV} or file:PATH
Expanded = Annotated[str, BeforeValidator(_expanded)]
# a secret, kept as the config wrote it (a reference, or the value itself), checked that it
# can be read and hidden from all output; expand() gives its value where it is needed
SecretReference = Annotated[str, AfterValidator(_kept)]
