"""One guard around every parser of a tool's output: whatever the text — truncated,
corrupted, another tool's, a file of zeros — a parser either returns records whose values
a storage system could have produced, or raises :class:`BadInput` naming the file (and
the line, where the parser knows it). Never a traceback, never a silently absurd number.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

from harness.errors import BadInput, DfsbenchError
from harness.system.files import printable

# nothing a client measures is beyond these (1 PiB/s, a billion operations or files a
# second, a year, an exbibyte): a value above one is a parse gone wrong
CEILING = {"B/s": 2.0**50, "op/s": 1e9, "files/s": 1e9, "s": 3.2e7, "B": 2.0**60,
           "s/GiB": 3.2e7,  # (a CPU-year per GiB moved)
           "%": 1e5}  # (a node's CPU in % of one core: a thousand cores busy)
# seconds since the epoch on any clock a record was made by: none before dfsbench existed
# (2020-01-01; a time near 0 is a clock at 1970 or a count of seconds, not a time), none past 2286
EARLIEST, LATEST = 1577836800.0, 1e10
# the numbers of a record's params that outputs compute with (harness.results.store checks
# their kinds), and the most each can be: an amount of bytes (an exbibyte), of files or
# operations (a billion a second for a year), a count of clients or threads (a million), a
# time on the records' clock, a ceiling of any unit's
PARAM_CEILING = {**dict.fromkeys(("bytes", "moved", "file_size", "record_size", "block_size"), CEILING["B"]),
                 **dict.fromkeys(("ops", "files"), CEILING["op/s"] * CEILING["s"]),
                 **dict.fromkeys(("clients", "threads"), 1e6),
                 **dict.fromkeys(("started", "ended"), LATEST),
                 "ceiling": max(CEILING.values())}
PARAM_FLOOR = dict.fromkeys(("started", "ended"), EARLIEST)  # the least a param may be, where not 0
COUNTS = frozenset({"clients", "threads"})  # whole numbers

F = TypeVar("F", bound=Callable[..., Any])
# what a parser raises when the text is not what it expects
BROKEN = (KeyError, IndexError, ValueError, TypeError, AttributeError, ZeroDivisionError, OverflowError,
          RecursionError, UnicodeError)


def plausible(value: float | None, unit: str) -> str:
    """'' for a value a storage system could have produced, else why not."""
    if value is None:
        return ""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "not a number"
    if math.isnan(value) or math.isinf(value):
        return "not a finite number"
    if value < 0:
        return "negative"
    ceiling = CEILING.get(unit)
    if ceiling is not None and value > ceiling:
        return f"beyond any storage (over {ceiling:g} {unit})"
    return ""


def plausible_param(key: str, value: Any) -> str:
    """'' for a number a record's param ``key`` can hold (see :data:`PARAM_CEILING`; a param
    not named there: any finite number), else why not."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number"
    ceiling = PARAM_CEILING.get(key)
    if ceiling is None:
        return ""
    if value < 0:
        return "negative"
    if value < PARAM_FLOOR.get(key, 0):
        return f"before any record's (under {PARAM_FLOOR[key]:.0f}, seconds since the epoch of 2020-01-01)"
    if value > ceiling:
        return f"beyond any record's (over {ceiling:g})"
    if key in COUNTS and value != int(value):
        return "not a whole number"
    return ""


def unbroken(text: str) -> bool:
    """Whether a name or text of a tool's output is one line of characters a store keeps and
    a terminal shows as they are: no control character (an escape, a line break), no lone
    surrogate (which a JSON escape can make, and no UTF-8 store can keep)."""
    return text.isprintable() and not any("\ud800" <= c <= "\udfff" for c in text)


def implausible_param(key: str, value: Any) -> str:
    """:func:`plausible_param`, and within a list or an object too: no number anywhere in a
    record's params is NaN or an infinity (JSON has neither, and the store reads none back)."""
    if isinstance(value, dict):
        return next((why for v in value.values() if (why := implausible_param("", v))), "")
    if isinstance(value, (list, tuple)):
        return next((why for v in value if (why := implausible_param("", v))), "")
    return plausible_param(key, value)


def tool_parser(tool: str) -> Callable[[F], F]:
    """Guard a parser ``fn(text, …, source=…)``: its failures become BadInput naming
    ``source``; the records (or the single rate) it returns are checked for plausibility."""

    def wrap(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            source = str(bound.arguments.get("source", f"{tool} output"))
            try:
                result = fn(*args, **kwargs)
            except DfsbenchError as exc:
                if source in exc.message:
                    raise
                kind = BadInput if isinstance(exc, BadInput) else DfsbenchError
                raise kind(f"{source}: {exc.message}", exc.hint) from exc
            except json.JSONDecodeError as exc:
                raise BadInput(f"{source}, line {exc.lineno}: not the JSON {tool} writes ({exc.msg})") from None
            except BROKEN as exc:
                what = f"{type(exc).__name__}: {exc}"[:200]
                raise BadInput(f"{source}: not a complete {tool} output ({what})",
                               hint=f"check that the file is what {tool} printed, whole") from None
            for m in result if isinstance(result, list) else []:
                test = printable(m.test, 60)  # (a tool output's name: shown, never a second line)
                broken = next((name for name in (m.test, m.metric, m.params.get("host"))
                               if isinstance(name, str) and not unbroken(name)), None)
                if broken is not None:
                    raise BadInput(f"{source}: {tool} {test}: the name {printable(broken, 60)} holds a "
                                   "control character or a broken character (a lone surrogate), which no "
                                   "tool writes", hint="the output is corrupt, or not from the run it claims")
                why = plausible(m.value, m.unit)
                if why:
                    raise BadInput(f"{source}: {tool} {test} {printable(m.metric, 60)} = "
                                   f"{printable(repr(m.value), 60)} {m.unit} is {why}",
                                   hint="the output is corrupt, or not from the run it claims")
                for key, value in m.params.items():  # (what the store would refuse to read back)
                    why = implausible_param(key, value)
                    if why:
                        raise BadInput(f"{source}: {tool} {test}: its {printable(key, 60)} = "
                                       f"{printable(repr(value), 60)} is {why}",
                                       hint="the output is corrupt, or not from the run it claims")
            if isinstance(result, (int, float)) and plausible(float(result), "B/s"):
                raise BadInput(f"{source}: {tool} rate {result!r} is {plausible(float(result), 'B/s')}")
            return result

        return guarded  # type: ignore[return-value]

    return wrap
