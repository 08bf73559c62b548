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

# nothing a client measures is beyond these (1 PiB/s, a billion operations or files a
# second, a year, an exbibyte): a value above one is a parse gone wrong
CEILING = {"B/s": 2.0**50, "op/s": 1e9, "files/s": 1e9, "s": 3.2e7, "B": 2.0**60,
           "s/GiB": 3.2e7}  # (a CPU-year per GiB moved)

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
                why = plausible(m.value, m.unit)
                if why:
                    raise BadInput(f"{source}: {tool} {m.test} {m.metric} = {m.value!r} {m.unit} is {why}",
                                   hint="the output is corrupt, or not from the run it claims")
            if isinstance(result, (int, float)) and plausible(float(result), "B/s"):
                raise BadInput(f"{source}: {tool} rate {result!r} is {plausible(float(result), 'B/s')}")
            return result

        return guarded  # type: ignore[return-value]

    return wrap
