"""Reading a file a user named (a config, a file it points to, a tool output to parse):
only a regular file, only up to a size that such a file can have, only as UTF-8 text.
A FIFO, a device, a directory, a 50 MB file, binary bytes or another encoding is refused
at once with one line that says which, never read into memory or waited on. Writing one
(a report): whole or not at all, never through a link, never onto what must be kept."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path

from harness.errors import BadInput

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def printable(text: object, most: int = 200) -> str:
    """A user's text (a path, a value) in a message: control characters shown escaped,
    so nothing reaches the terminal raw or makes a second line; long text cut."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return shown if len(shown) <= most else shown[:most - 3] + "..."


def _refuse_kind(mode: int, what: str, path: Path) -> None:
    kind = next((name for test, name in _KINDS if test(mode)), None)
    if kind is not None or not stat.S_ISREG(mode):
        raise BadInput(f"{what} {printable(path)} is {kind or 'not a regular file'}, not a file to read",
                       hint=f"give the path of the {what} itself")


PATH_MOST, NAME_MOST = 4096, 255  # Linux's PATH_MAX and NAME_MAX, in bytes


def too_long(path: str | Path) -> str | None:
    """Why ``path`` is longer than Linux allows (the kernel answers 'File name too long'),
    or None."""
    text = str(path)
    if len(text.encode(errors="surrogateescape")) >= PATH_MOST or \
            any(len(part.encode(errors="surrogateescape")) > NAME_MOST for part in text.split("/")):
        return f"a path longer than Linux allows ({PATH_MOST} bytes, {NAME_MOST} for each name in it)"
    return None


def fits_linux(path: str) -> str:
    """``path``, if Linux takes a path that long (ValueError saying :func:`too_long`, else)."""
    long = too_long(path)
    if long is not None:
        raise ValueError(long)
    return path


# trees of the system under which nothing of dfsbench's may go: the kernel's own file systems,
# the configuration, the boot loader ...
SYSTEM_TREES = ("/proc", "/sys", "/dev", "/etc", "/boot")
# ... but for the tmpfs of /dev every user may write to (a baseline in memory: /dev/shm/bench)
OPEN_TREES = ("/dev/shm",)
# and the system's programs and libraries
PROGRAM_TREES = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/snap", "/usr/bin", "/usr/sbin",
                 "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec", "/usr/include", "/usr/share", "/usr/src",
                 "/usr/local/bin", "/usr/local/sbin", "/usr/local/lib", "/usr/local/libexec",
                 "/usr/local/include", "/usr/local/share")
# where the system's programs keep their state, each in a directory of its own (/var/lib/docker):
# neither they nor a program's directory are a place for a benchmark's files
STATE_DIRECTORIES = frozenset({"/var/lib", "/var/cache", "/var/log", "/var/spool", "/var/backups", "/var/mail"})
# directories of the system that hold the above, never files of their own
SYSTEM_DIRECTORIES = frozenset({"/", "/usr", "/usr/local", "/var", "/var/local", "/var/opt", "/var/lock",
                                "/var/run", "/run", "/lost+found"}) | STATE_DIRECTORIES
# what disks and sites' data are mounted on and homes are under: a directory to measure in
# (a baseline writes its files into /mnt, where the disk under test is), never a dedicated
# directory (a lab's, which goes whole when the lab does)
MOUNT_POINTS = frozenset({"/home", "/media", "/mnt", "/opt", "/root", "/srv"})
# where every user's files are: a directory of its own below them is fine, they themselves are
# no dedicated directory
SHARED_DIRECTORIES = frozenset({"/tmp", "/var/tmp", "/dev/shm"})


def _under(path: str, trees: tuple[str, ...]) -> bool:
    return any(path == tree or path.startswith(tree + "/") for tree in trees)


def _of_the_system(path: str) -> bool:
    if _under(path, OPEN_TREES):
        return False
    return path in SYSTEM_DIRECTORIES or os.path.dirname(path) in STATE_DIRECTORIES or \
        _under(path, SYSTEM_TREES) or _under(path, PROGRAM_TREES)


def system_directory(path: str | Path, dedicated: bool = False) -> str | None:
    """Why ``path`` — resolved: through '..' and symbolic links — is no place for dfsbench's
    files, or None: a directory of the system (/, /usr, /var/lib and a program's directory
    in it), or anything under /proc, /sys, /dev (but /dev/shm), /etc, /boot or the system's
    program and library directories. ``dedicated``: a directory that is dfsbench's alone (a
    lab's, removed with it): nor a directory every user shares (/tmp, /var/tmp, /dev/shm),
    one disks are mounted on (/mnt, /srv, ...) or a home directory."""
    try:
        real = Path(path).expanduser().resolve()
    except (OSError, RuntimeError) as exc:  # (a loop of links)
        return f"it cannot be resolved ({exc})"
    text = str(real)
    shown = "" if text == str(path) else f" (it resolves to {printable(text, 80)})"
    # (as written too: /proc/self/cwd resolves to a directory outside /proc, and is one of it)
    for seen in (text, os.path.normpath(Path(path).expanduser().absolute())):
        if _of_the_system(seen):
            return f"a directory of the system{shown}"
    if dedicated and (text in SHARED_DIRECTORIES | MOUNT_POINTS or text == str(Path.home()) or
                      re.fullmatch(r"/home/[^/]+", text)):
        return f"a directory others use too{shown}, and this one must be dfsbench's alone"
    return None


def read_bytes(path: Path, what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (``what`` it is, for the error), at most
    ``limit`` of them. A device or FIFO is refused before it is opened (opening one can
    wait, or act: a tape rewinds); the open does not block and is checked again on the
    descriptor, so a file swapped in between cannot slip through."""
    long = too_long(path)
    if long is not None:
        raise BadInput(f"cannot read {what} {printable(path, 80)}: {long}", hint=f"give the path of the {what}")
    try:
        _refuse_kind(os.stat(path).st_mode, what, path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise BadInput(f"cannot read {what} {printable(path)}: {exc.strerror}") from None
    try:
        _refuse_kind(os.fstat(fd).st_mode, what, path)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise BadInput(f"cannot read {what} {printable(path)}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise BadInput(f"{what} {printable(path)} is larger than {_size(limit)}: not a {what}",
                       hint=f"a {what} this large is not one dfsbench wrote or reads; check the path")
    return b"".join(chunks)


def read_text(path: Path, what: str, limit: int, secret: bool = False) -> str:
    """:func:`read_bytes`, as UTF-8 text: a byte-order mark, UTF-16, a NUL byte or bytes
    that are not UTF-8 (Latin-1, binary) are refused, saying where (but for a ``secret``
    not which byte, nor which offset)."""
    data = read_bytes(path, what, limit)
    shown = printable(path)
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise BadInput(f"{what} {shown} is UTF-16 text", hint="save it as UTF-8")
    if data[:3] == b"\xef\xbb\xbf":
        raise BadInput(f"{what} {shown} starts with a byte-order mark", hint="save it as UTF-8 without one")
    nul = data.find(b"\0")
    if nul >= 0:
        where = "" if secret else f" (a NUL byte at offset {nul})"
        raise BadInput(f"{what} {shown} holds binary data{where}, not text",
                       hint="check the path")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        where = "" if secret else f": byte 0x{data[exc.start]:02x} on line {line}"
        raise BadInput(f"{what} {shown} is not UTF-8 text{where}",
                       hint="save it as UTF-8 (Latin-1 and other encodings are not read)") from None


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB"


def write_text(path: Path, text: str, what: str, refused: dict[Path, str] | None = None) -> None:
    """Write ``text`` as the file ``path`` (``what`` it is, for errors): into a new file
    beside it, then renamed over it, so a reader never sees half of it and a failed write
    leaves what was there. A symbolic link at ``path`` is replaced, never written through.
    What :func:`check_output` refuses is refused."""
    mode = check_output(path, what, refused)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise BadInput(f"cannot write {what} {printable(path)}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), mode)
            out.write(text)
        os.replace(tmp, path)  # (a link at path is itself replaced: rename does not follow it)
    except OSError as exc:
        raise BadInput(f"cannot write {what} {printable(path)}: {exc.strerror}") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


# directories of the system's own, never written to (their files are devices, or the kernel's),
# but for the one of them that holds files of users (a tmpfs)
SYSTEM_DIRS = (Path("/dev"), Path("/proc"), Path("/sys"))
USERS_DIRS = (Path("/dev/shm"),)


def _systems(path: Path) -> bool:
    """Whether ``path`` (resolved) is in one of the system's own directories."""
    def under(dirs: tuple[Path, ...]) -> bool:
        return any(path == d or d in path.parents for d in dirs)
    return under(SYSTEM_DIRS) and not under(USERS_DIRS)


def check_output(path: Path, what: str, refused: dict[Path, str] | None = None) -> int:
    """Refuse ``path`` as the file to write ``what`` to where it is, or leads through a
    link to, one of ``refused`` (paths, compared resolved, to what they hold: a file, or a
    directory with everything under it; the results store, a run's raw outputs) or an
    existing file that is not a regular one (a FIFO, a device, a directory); a link that leads
    to no regular file, or leads there through ``/dev`` or ``/proc`` (``/dev/stdout``, a
    dangling link: the file written would replace the link itself); a file in a system's own directory (``/dev``, ``/proc``, ``/sys``). The mode
    the written file gets: the replaced file's, else the umask's."""
    try:
        real = path.resolve()
        place = path.absolute().parent.resolve()
    except (OSError, RuntimeError) as exc:  # (a loop of links: RuntimeError before Python 3.13)
        raise BadInput(f"cannot write {what} {printable(path)}: its links lead nowhere ({exc})",
                       hint=f"name the file to write the {what} to itself") from None
    if _systems(place):
        raise BadInput(f"{what} {printable(path)} is in {printable(place)}, the system's own: dfsbench writes a "
                       f"{what} there never", hint=f"name a file in a directory of yours for the {what}")
    if path.is_symlink():
        try:
            through = next((hop for hop in _hops(path) if _systems(hop)), None)
            linked = through is None and stat.S_ISREG(path.stat().st_mode)
        except OSError:
            through, linked = None, False
        if not linked:
            what_it_is = (f"through {printable(through)}, the system's own (a process's output, a device)"
                          if through is not None else f"to {printable(real)}, which is no regular file (a terminal, "
                          "a pipe, a device, or nothing)")
            raise BadInput(f"{what} {printable(path)} is a link {what_it_is}: writing the {what} would replace the "
                           "link", hint=f"name the file to write the {what} to itself")
    for kept, holds in (refused or {}).items():
        kept = kept.resolve()
        if real == kept or kept in real.parents:
            shown = printable(path) if real == path.absolute() else f"{printable(path)} (a link to {printable(real)})"
            raise BadInput(f"{what} {shown} is {holds}: dfsbench never writes a {what} there",
                           hint=f"name a file outside it for the {what}")
    try:
        if not real.exists():
            return 0o666 & ~_umask()
        st = real.stat()
    except OSError as exc:
        raise BadInput(f"cannot write {what} {printable(path)}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{what} {printable(path)} is not a regular file (a FIFO, a device or a directory): "
                       f"the {what} is written to a file", hint="name a new file, or a file to replace")
    return stat.S_IMODE(st.st_mode)


def _hops(path: Path) -> list[Path]:
    """The paths a chain of links at ``path`` goes through, each with its directory resolved
    as the kernel resolves it (OSError: a loop, or one that cannot be read)."""
    hops: list[Path] = []
    here = path.absolute()
    for _ in range(40):  # (Linux's own limit on links followed)
        if not here.is_symlink():
            return hops
        step = Path(os.path.realpath(here.parent)) / os.readlink(here)
        here = Path(os.path.normpath(Path(os.path.realpath(step.parent)) / step.name))  # (a last '..' too)
        hops.append(here)
    raise OSError("too many levels of symbolic links")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
