"""Reading a file a user named (a config, a file it points to, a tool output to parse):
only a regular file, only up to a size that such a file can have, only as UTF-8 text.
A FIFO, a device, a directory, a 50 MB file, binary bytes or another encoding is refused
at once with one line that says which, never read into memory or waited on."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harness.errors import BadInput

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def read_bytes(path: Path, what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (``what`` it is, for the error), at most
    ``limit`` of them. Opened without blocking (a FIFO would wait for a writer) and
    checked on the open descriptor, so a file swapped in between cannot slip through."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        kind = next((name for test, name in _KINDS if test(mode)), None)
        if kind is not None or not stat.S_ISREG(mode):
            raise BadInput(f"{what} {path} is {kind or 'not a regular file'}, not a file to read",
                           hint=f"give the path of the {what} itself")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise BadInput(f"{what} {path} is larger than {_size(limit)}: not a {what}",
                       hint=f"a {what} this large is not one dfsbench wrote or reads; check the path")
    return b"".join(chunks)


def read_text(path: Path, what: str, limit: int) -> str:
    """:func:`read_bytes`, as UTF-8 text: a byte-order mark, UTF-16, a NUL byte or bytes
    that are not UTF-8 (Latin-1, binary) are refused, saying where."""
    data = read_bytes(path, what, limit)
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise BadInput(f"{what} {path} is UTF-16 text", hint="save it as UTF-8")
    if data[:3] == b"\xef\xbb\xbf":
        raise BadInput(f"{what} {path} starts with a byte-order mark", hint="save it as UTF-8 without one")
    nul = data.find(b"\0")
    if nul >= 0:
        raise BadInput(f"{what} {path} holds binary data (a NUL byte at offset {nul}), not text",
                       hint="check the path")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BadInput(f"{what} {path} is not UTF-8 text: byte 0x{data[exc.start]:02x} on line {line}",
                       hint="save it as UTF-8 (Latin-1 and other encodings are not read)") from None


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB"
