"""The field types of a plugin's options (re-exported by :mod:`harness.api.contracts`):
what a config's value may be where it becomes a size, a name in a path or an argv, a host, a
path a tool's input names, or a tool's own option — each refused, with why, at the edge."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import AfterValidator, BeforeValidator, Field

from harness.api.model import SameAs, bytes_bound
from harness.api.records import OVER_CLIENTS
from harness.system import files
from harness.system.names import NAME_PATTERN
from harness.system.secret import Expanded
from harness.units import SIZE_PATTERN, parse_size


def _to_bytes(v: Any) -> Any:
    return parse_size(v) if isinstance(v, str) else v


# A size in bytes in any plugin's options: 4096, "40KiB", "256MiB", "1G", "210MB" (as a config
# file may give it: its JSON Schema takes both)
Bytes = Annotated[int, BeforeValidator(_to_bytes, json_schema_input_type=Union[
    Annotated[int, Field(gt=0)], Annotated[str, Field(pattern=SIZE_PATTERN)]]),
    Field(gt=0), AfterValidator(bytes_bound)]

# A name from a config that becomes part of a path, a file name, an argv or a tool's input
# (variants, profiles, pools, volumes, file systems, client names): the rule of
# harness.system.names, which also holds every name read from a store before it is a path
Name = Annotated[str, Field(pattern=NAME_PATTERN)]



def _not_aggregate(v: str) -> str:
    if v.lower().rstrip(".") in OVER_CLIENTS:  # (harness.api.records: the host of an aggregate's record)
        raise ValueError(f"'{v}' is the name the records give an aggregate over several clients "
                         f"({', '.join(sorted(OVER_CLIENTS))}): a client of that name would be mixed with it in "
                         "every table; give the client another name (a host: its address, or a 'name')")
    return v


# how a client host is named in its records (their param 'host'): a Name, and never the name
# of an aggregate over clients
ClientName = Annotated[Name, AfterValidator(_not_aggregate)]

_DNS_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)
# the zone of an IPv6 address (after '%'): a network interface's name or index, as Linux
# names an interface (at most 15 characters, IFNAMSIZ less its NUL); ipaddress takes any
# text there, which would reach an argv, an SSH connect and a directory name
_ZONE = re.compile(r"[A-Za-z0-9_.-]{1,15}", re.ASCII)


def host_address(v: str) -> str:
    """A host as a config names it: an IP address (``ipaddress`` decides; an IPv6 one also
    in brackets, with a zone after ``%``: an interface's name or index) or a DNS name (labels of letters, digits and '-',
    not beginning or ending with '-', the last not all digits, 253 characters at most, a
    final '.' allowed), and never the name of an aggregate over clients (ValueError)."""
    bare = v[1:-1] if v.startswith("[") and v.endswith("]") else v
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        address = None
    if address is not None and (bare == v or address.version == 6):
        zone = getattr(address, "scope_id", None)
        if zone is None or _ZONE.fullmatch(zone):
            return v
        raise ValueError(f"'{files.printable(v, 60)}' has a zone (after '%') that is not a network interface's "
                         "name or index (letters, digits, '_', '.' and '-', at most 15: e.g. fe80::1%eth0)")
    labels = v.removesuffix(".").split(".")
    if bare != v or len(v) > 253 or not all(_DNS_LABEL.fullmatch(label) for label in labels) or \
            labels[-1].isdigit():
        shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in v[:60])
        raise ValueError(f"'{shown}' is neither an IP address nor a host's DNS name (letters, digits and "
                         "'-' between dots, e.g. client1.example.com, 10.0.0.5, fd00::5)")
    return _not_aggregate(v)


def host_key(v: str) -> str:
    """What a host of a config is compared by (one machine named twice in a list): an IP
    address as ``ipaddress`` writes it (``FD00:0::5`` and ``[fd00::5]`` are ``fd00::5``),
    else the name in lower case without its final dot (DNS names are case-blind)."""
    bare = v[1:-1] if v.startswith("[") and v.endswith("]") else v
    try:
        return ipaddress.ip_address(bare).compressed
    except ValueError:
        return v.lower().removesuffix(".")


# what fio reads as syntax inside a value of a job file's line: '#' and ';' end it (a
# comment), '$' expands (${VAR}, $ncpus)
JOB_SYNTAX = "#;$"


def _plain_path(v: Path) -> Path:
    text = str(v)
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in text):
        raise ValueError("a path with a control character (a line break?) in it")
    syntax = sorted(set(text) & set(JOB_SYNTAX))
    if syntax:  # (fio ends a job file's value at # or ;, and expands $)
        raise ValueError(f"a path with {' '.join(syntax)} in it, which the tools' input files read as syntax")
    files.fits_linux(text)
    if any(part != part.strip() for part in v.parts):
        raise ValueError("a path with a name that starts or ends with a blank")
    return v.absolute()  # (relative: to the working directory, as the config was read)


# a path from a config that a tool's input names (a directory, a device): one line, nothing
# a job file reads as syntax, within Linux's lengths
PlainPath = Annotated[Path, AfterValidator(_plain_path)]
# of a site's description: a host's name or address (also the label its raw outputs go under,
# when no 'name' is given: never '.', '..' or an option), and a path on the client hosts that
# goes into a mount option or a client's environment (no ',', '=', space or newline to split it)
HostName = Annotated[Expanded, AfterValidator(host_address), SameAs(host_key)]
HostPath = Annotated[Expanded, Field(pattern=r"^/[A-Za-z0-9_./+@-]*$"), AfterValidator(files.fits_linux)]
# a tool's option, as a key and a value of argv ('--key=value', 'volume set VOL key value'):
# the key a word of the tool's own option names (ceph's client_oc_size, gluster's
# performance.cache-size), the value one line of printable text
OptionKey = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")]
OptionValue = Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f]{0,1024}$")]


def option_key(prefixes: str, separator: str, forbidden: str, tool: str) -> Any:
    """A key of a tool's own option names: one of the families (``prefixes``) of the
    options it lists for a client or a volume, and none that names a file, a socket or a
    command (which would put a file of the config's choosing on a host, as root)."""
    pattern = re.compile(rf"(?:{prefixes}){re.escape(separator)}[a-z0-9][a-z0-9_.-]{{0,100}}")
    refused = re.compile(forbidden)

    def check(v: str) -> str:
        if not pattern.fullmatch(v):
            raise ValueError(f"'{v}' is not one of {tool}'s options (those begin {prefixes.replace('|', ', ')})")
        if refused.search(v):
            raise ValueError(f"'{v}' names a file, a socket or a command: {tool} would act on a place the "
                             "config chooses")
        return v

    return AfterValidator(check)
