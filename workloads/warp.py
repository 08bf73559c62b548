"""warp's JSON output (``warp-<op>-<date>.json.zst``, or ``warp analyze --json``) as records of
the ``s3`` workload, for ``dfsbench parse warp`` and ``dfsbench import warp``: a site that
runs warp sets its figures beside dfsbench's own.

Read: warp's data version 2 (warp 1.1 and later). Per operation type in ``by_op_type``
(GET, PUT, STAT read as HEAD, DELETE, LIST; another type by its own name; of a benchmark of
one operation, 'warp get', that one only: the rest is its preparation; an output of several
whose command line names no benchmark known to measure them all, 'warp mixed', is refused),
warp keeps:

- ``throughput``: what it counted in its measured window (``measure_duration_millis``; warp
  leaves the run's first and last seconds out of it): ``ops`` started in it, ``errors`` of
  them, ``bytes`` moved (a failed request's object counted as moved, but a 'warp put''s);
- ``requests_by_client``: per client, 10-second windows, each with the requests that ended in
  it (failed ones too): their count, mean, median, 90th and 99th percentile (and for a GET
  the time to the first byte);
- ``total_requests`` and ``total_errors`` over the whole run, and its ``first_errors``.

What a record says, by the same names the ``s3`` workload uses:

- ``iops``: the operations of warp's window that succeeded (``ops - errors``), over it (warp's
  own obj/s shares an operation between the seconds it spans: a little apart from this); its
  ``workers`` are each warp client's (warp adds its clients' up), and a run held to a rate by
  ``--rps-limit`` says it (``warp_rps_limit``);
- ``throughput`` (GET, PUT): warp's bytes over its window, only where none of the window's
  requests failed;
- ``errors``: ``total_errors`` of ``total_requests``, in %;
- ``lat_mean`` and, for a GET, ``ttfb_mean``: the mean of every request, each window's mean
  weighted by its requests — only where no request failed (warp times failed ones with the
  rest) and every request is in a window of one object size. warp's own "Reqs: Avg" is the
  mean of its windows' means, which differs where windows hold different numbers of requests.

Not read: percentiles. warp's JSON keeps them per client per 10-second window only, and a
run's percentile cannot be made from windows' percentiles (the mean of the windows' p99 that
warp prints is not the run's p99). :data:`LEFT_OUT` says what is left out where it is imported.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from harness.api.parsing import tool_parser
from harness.api.records import Measurement
from harness.errors import BadInput
from harness.system.files import printable

VERSION = 2
OPS = {"GET": "get", "PUT": "put", "STAT": "head", "DELETE": "delete", "LIST": "list"}
# warp's benchmarks of one operation: the others in their output are their preparation (the
# PUTs of the objects a 'warp get' reads), not what they measured; 'mixed' measured them all
SINGLE = {"get": "GET", "put": "PUT", "stat": "STAT", "delete": "DELETE", "list": "LIST"}
ALL = ("mixed",)
RATE_LIMIT = re.compile(r"(?:^|\s)--rps-limit[= ](\d+(?:\.\d+)?)(?=\s|$)")
MOVES_BYTES = ("get", "put")
OP_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,31}$")  # (an operation type of warp's: GET, MULTIPART_PUT, …)
MOST_WORKERS = 1_000_000
LARGEST = 5 << 40  # S3's largest object
HINT = "pass the JSON warp wrote at the end of its run (warp-<op>-<date>.json.zst), or 'warp analyze --json' of it"
SAID = 200  # characters kept of each of warp's first errors
# what the records leave out of warp's output, said where they are imported
LEFT_OUT = ("percentiles (warp's JSON keeps them per client per 10-second window only, and a run's percentile "
            "cannot be made from those); an operation's throughput where a request of it failed in warp's window "
            "(warp may count a failed request's bytes as moved); its mean latency where a request failed (warp "
            "times failed requests with the rest), where its objects were of several sizes, or where a request is "
            "in none of warp's windows; the mean time to the first byte unless every window has one; a "
            "one-operation run's preparation (the PUTs of a 'warp get')")


@tool_parser("warp")
def parse(text: str, source: str = "warp output") -> list[Measurement]:
    """The records of warp's JSON (see the module; :data:`LEFT_OUT`: what they leave out)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{source} is not JSON ({exc})", hint=HINT) from None
    except ValueError:  # (a number of thousands of digits)
        raise BadInput(f"{source} is not warp's JSON: it holds a number thousands of digits long", hint=HINT) from None
    if not isinstance(doc, dict) or "by_op_type" not in doc and "v" not in doc:
        raise BadInput(f"{source} is not warp's JSON output: it has no 'v' and no 'by_op_type'", hint=HINT)
    version = doc.get("v")
    if version != VERSION:
        raise BadInput(f"{source}: warp's data version {printable(str(version), 20)} is not read (only "
                       f"version {VERSION}, written by warp 1.1 and later)",
                       hint="run 'warp analyze --json' of the run's data with warp 1.1 or later")
    by_op = doc.get("by_op_type")
    if not isinstance(by_op, dict) or not by_op:
        raise BadInput(f"{source}: warp's output names no operation (by_op_type is empty or missing)", hint=HINT)
    measured = _measured(doc.get("commandline"), by_op, source)
    limited = _rate_limit(doc.get("commandline"))
    out: list[Measurement] = []
    try:
        size = object_size(by_op)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadInput(f"{source}: warp's request windows are not as warp writes them "
                       f"({type(exc).__name__}: {printable(str(exc), 120)})", hint=HINT) from None
    tests: dict[str, str] = {}
    for name in sorted(measured):
        try:
            test = _test(str(name))
            if test in tests:
                raise ValueError(f"both {tests[test]} and {name} are read as {test}")
            tests[test] = str(name)
        except ValueError as exc:
            raise BadInput(f"{source}: warp's {printable(str(name), 40)}: {exc}", hint=HINT) from None
    for test, name in tests.items():
        try:
            out.extend(_operation(test, by_op[name], size, limited))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadInput(f"{source}: warp's {printable(str(name), 40)} is not as warp writes it "
                           f"({type(exc).__name__}: {printable(str(exc), 120)})", hint=HINT) from None
    return out


def _measured(commandline: Any, by_op: dict[str, Any], source: str) -> list[str]:
    """The operation types the run measured: the one of a one-operation benchmark ('warp get
    …': the first word after the program), every one of a 'warp mixed', the only one there is;
    else which of them the benchmark measured is not known (another benchmark's, or an
    analysis that names none, may hold its preparation's PUTs), and the output is refused."""
    words = commandline.split() if isinstance(commandline, str) else []
    mode = words[1] if len(words) > 1 else ""
    if SINGLE.get(mode) in by_op:
        return [SINGLE[mode]]
    if mode in ALL or len(by_op) == 1:
        return list(by_op)
    names = ", ".join(printable(str(n), 20) for n in sorted(by_op))
    said = f"'warp {printable(mode, 20)}'" if mode else "no benchmark (an analysis of older data)"
    raise BadInput(f"{source}: warp's output holds {names}, and its command line names {said}: which of them "
                   "it measured, and which prepared it, is not known",
                   hint="import warp reads the runs of warp get, put, stat, delete, list and mixed, and a run of "
                        "one operation of any other")


def _rate_limit(commandline: Any) -> float | None:
    """warp's --rps-limit, where the run was held to one (its operations a second, in all)."""
    found = RATE_LIMIT.search(commandline) if isinstance(commandline, str) else None
    return float(found.group(1)) if found and float(found.group(1)) > 0 else None


def _test(name: str) -> str:
    if name in OPS:
        return OPS[name]
    if not OP_NAME.match(name):
        raise ValueError(f"an operation type warp does not name: {printable(name, 40)!r}")
    return name.lower()


def _number(value: Any, what: str, most: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} is {printable(repr(value), 40)}, not a number at least 0")
    if value > most:
        raise ValueError(f"{what} is {printable(repr(value), 40)}, more than {most:g}")
    return float(value)


def _windows(aggregate: dict[str, Any]) -> list[dict[str, Any]]:
    """Every client's request windows that are not skipped (warp writes an empty window as
    ``skipped``), each its requests' statistics: one entry per object size of the window
    (``size`` None: a window of several sizes, each range of them an entry)."""
    found: list[dict[str, Any]] = []
    for windows in (aggregate.get("requests_by_client") or {}).values():
        for window in windows or ():
            single, multi = window.get("single_sized_requests"), window.get("multi_sized_requests")
            if single is not None and not single.get("skipped"):
                found.append({"requests": single["requests"], "mean_ms": single["dur_avg_millis"],
                              "size": single.get("obj_size"), "ttfb": single.get("first_byte")})
            elif multi is not None and not multi.get("skipped"):
                for by_size in multi.get("by_size") or ():
                    found.append({"requests": by_size["requests"], "mean_ms": by_size["avg_duration_millis"],
                                  "size": None, "ttfb": by_size.get("first_byte")})
    return found


def object_size(by_op: dict[str, Any]) -> int | None:
    """The size of the run's objects where they were all of one: the one size its GETs and
    PUTs moved (a HEAD's or DELETE's window says 0, as does a window of failed requests
    only); None where they were of several, or none moved any."""
    sizes: set[int | None] = set()
    for name, aggregate in by_op.items():
        if OPS.get(str(name)) in MOVES_BYTES:
            for w in _windows(aggregate):
                if w["size"] is None:
                    sizes.add(None)
                elif _number(w["size"], "a window's object size", LARGEST) > 0:
                    sizes.add(int(w["size"]))
    return next(iter(sizes)) if len(sizes) == 1 else None


def _operation(test: str, aggregate: dict[str, Any], object_size: int | None,
               limited: float | None) -> list[Measurement]:
    throughput = aggregate["throughput"]
    window_s = _number(throughput["measure_duration_millis"], "measure_duration_millis") / 1000
    ops = int(_number(throughput["ops"], "throughput's ops"))
    failed_in_window = int(_number(throughput.get("errors", 0), "throughput's errors"))
    requests = int(_number(aggregate["total_requests"], "total_requests"))
    errors = int(_number(aggregate["total_errors"], "total_errors"))
    if failed_in_window > ops or errors > requests:
        raise ValueError(f"more errors than requests ({failed_in_window} of {ops} in the window, {errors} of "
                         f"{requests} in all)")
    windows = _windows(aggregate)
    concurrency = int(_number(aggregate["concurrency"], "concurrency", MOST_WORKERS))
    clients = aggregate.get("clients")
    hosts = len(clients) if isinstance(clients, list) and clients else 1
    if concurrency < 1 or concurrency % hosts:
        raise ValueError(f"concurrency {concurrency} over {hosts} warp clients is not a whole number of workers each")
    # (warp adds its clients' threads up; the s3 workload's workers are each client's)
    params: dict[str, Any] = {"tool": "warp", "workers": concurrency // hosts, "window_s": round(window_s, 3)}
    if object_size is not None:
        params["object_size"] = object_size
    else:
        params["sizes"] = "several"  # (warp's --obj.randsize, or sizes it does not say)
    if hosts > 1:
        params["clients"] = hosts
    if limited is not None:  # (an open loop of warp's own, its rate warp's, not a closed loop)
        params["warp_rps_limit"] = limited

    def m(metric: str, value: float | None, unit: str, more: dict[str, Any] | None = None,
          flags: tuple[str, ...] = ()) -> Measurement:
        return Measurement("s3", test, metric, value, unit, {**params, **(more or {})}, flags=flags)

    out: list[Measurement] = []
    if window_s > 0:
        out.append(m("iops", (ops - failed_in_window) / window_s, "op/s", {"ops": ops - failed_in_window}))
        # (warp counts a failed GET's object as moved, and a failed PUT's of a 'warp mixed')
        if test in MOVES_BYTES and failed_in_window == 0:
            out.append(m("throughput", _number(throughput["bytes"], "throughput's bytes") / window_s, "B/s",
                         {"bytes": round(float(throughput["bytes"]))}))
    else:  # (warp measured no window: a run too short for it)
        out.append(m("iops", None, "op/s", {"error": "warp measured no window (the run was too short for one)"},
                     flags=("failed",)))
    if requests:
        more: dict[str, Any] = {"failed_ops": errors}
        first = aggregate.get("first_errors") or []
        if not isinstance(first, list) or not all(isinstance(e, str) for e in first):
            raise ValueError("first_errors is not a list of messages")
        said = [printable(e, SAID) for e in first[:10]]
        if said:
            more["error_said"] = {"warp": said[0]} if len(said) == 1 else {f"warp {i + 1}": s
                                                                           for i, s in enumerate(said)}
        out.append(m("errors", 100.0 * errors / requests, "%", more))
    for w in windows:
        if _number(w["requests"], "a window's requests") != int(w["requests"]):
            raise ValueError(f"a window's requests are {printable(repr(w['requests']), 20)}, not a whole number")
    timed = sum(int(w["requests"]) for w in windows)
    # the mean of every request, where every one is in a window of one size and none failed
    # (warp times failed requests with the rest, and the s3 workload's mean is of those that
    # succeeded)
    if timed and timed == requests and not errors and all(w["size"] is not None for w in windows):
        total_ms = sum(_number(w["mean_ms"], "a window's mean") * w["requests"] for w in windows)
        out.append(m("lat_mean", total_ms / timed / 1000, "s", {"requests_timed": timed}))
        ttfb = [_number(w["ttfb"]["average_millis"], "a window's mean time to first byte") * w["requests"]
                for w in windows if isinstance(w["ttfb"], dict)]
        if test == "get" and object_size and len(ttfb) == len(windows):  # (every GET had a first byte)
            out.append(m("ttfb_mean", sum(ttfb) / timed / 1000, "s", {"requests_timed": timed}))
    return out
