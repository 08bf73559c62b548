"""fio's JSON output (``json`` or ``json+``, fio 3's or fio 2's, local or client/server) as
records, and what a local run's ``--status-interval`` documents say of its timing and its
latency over time; a text without JSON goes to the parser of fio's normal output."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from harness.api.parsing import tool_parser
from harness.api.histogram import Histogram
from harness.api.records import TOOL_TOTAL, Measurement
from harness.api.series import percentile_of_bins
from harness.errors import BadInput
from harness.units import parse_size
from workloads.fio.text_output import DIRECTIONS, _TEXT_JOB, parse_text

PERCENTILES = {"p50": "50.000000", "p90": "90.000000", "p99": "99.000000", "p99.9": "99.900000"}

# where a JSON document of fio's may begin: a '{' that opens a line (after blanks)
_OPENS_LINE = re.compile(r"^[^\S\n]*\{", re.MULTILINE)
_BROKEN_MOST = 32  # such lines in one text (see _json_documents)


def _json_documents(text: str) -> list[dict[str, Any]]:
    """fio's JSON documents in order — one, or one per ``--status-interval`` and the final
    one last — even when client/server mode printed ``<host> …`` lines before them.

    In one pass over the text: each document is decoded in place (never from a copy of the
    rest of the text, which made an hour of ``--status-interval=1`` output quadratic), and
    the search goes on after it; after what is not JSON, from the next line that opens an
    object: a document cut short (fio killed while it printed) is read by the decoder on into
    the next one, as if that were a value of it, and fails only after it — that next one
    must still be found, or an interval's figures would stand as the final ones. fio's own
    output breaks off once at most: a text where many lines open a JSON document that is
    not one is refused (each refusal goes over the text up to where the decoder stopped, and
    its error counts the lines up to there: a bounded number of them keeps this linear)."""
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    at, broken, first_broken = 0, 0, 0
    while (opening := _OPENS_LINE.search(text, at)) is not None:
        start = opening.end() - 1
        try:
            doc, at = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            broken += 1
            first_broken = first_broken or text.count("\n", 0, start) + 1
            if broken > _BROKEN_MOST:
                raise BadInput(f"more than {_BROKEN_MOST} lines open a JSON document that is not one (the "
                               f"first of them at line {first_broken}): not what fio writes",
                               hint="pass fio's output as it printed it (--output-format=json or json+)") from None
            at = start + 1  # (a document that starts inside the broken one is looked for: see above)
            continue
        if isinstance(doc, dict) and ("jobs" in doc or "client_stats" in doc):
            found.append(doc)
    return found


def _json_document(text: str, source: str) -> dict[str, Any]:
    """fio's (final) JSON document."""
    docs = _json_documents(text)
    if not docs:
        raise BadInput(f"{source} holds no fio JSON output",
                       hint="run fio with --output-format=json or json+ (the normal text output is not parsed)")
    return docs[-1]


def _io_bytes(d: dict[str, Any]) -> float:
    """A direction's bytes moved. fio 3 writes them as ``io_bytes`` beside ``io_kbytes``
    and ``bw_bytes``; fio 2's ``io_bytes`` is KiB (``io_bytes >> 10`` in its stat.c), and
    it has neither of the others."""
    value = float(d.get("io_bytes", 0))
    return value if "io_kbytes" in d or "bw_bytes" in d else value * 1024


def _runtime_ms(job: dict[str, Any], d: dict[str, Any]) -> float:
    """How long a direction's I/O has run (ms): fio 3's ``runtime`` of the direction, which
    group reporting takes as the longest of its jobs'; else the job's ``job_runtime``, which
    group reporting sums over its jobs (two jobs of 3 s: 6000) — the time only of one job."""
    runtime = d.get("runtime")
    return float(runtime) if isinstance(runtime, (int, float)) and runtime > 0 else float(job.get("job_runtime", 0))


def timed(text: str) -> dict[str, tuple[float, float, float, float, tuple[tuple[float, float, float], ...]]]:
    """Per direction of a local fio run's (one job, or group_reporting) output: when its
    timed I/O started and ended on the host's clock (the final document's ``timestamp_ms``,
    less the direction's runtime: :func:`_runtime_ms`), the bytes and operations it did, and
    its progress (time, bytes, operations so far) from every ``--status-interval`` document.
    A document of a warm-up (``ramp_time``: fio counts its I/O, then sets every figure back to
    zero at its end) is none of that progress: it was printed before the timed I/O began."""
    docs = [d for d in _json_documents(text) if d.get("jobs") and "timestamp_ms" in d]
    if not docs or len(docs[-1]["jobs"]) != 1:  # (several jobs reported apart: no one interval)
        return {}
    out = {}
    for direction in DIRECTIONS:
        progress = []
        for doc in docs:
            job = doc["jobs"][0]
            d = job.get(direction) or {}
            start = (doc["timestamp_ms"] - _runtime_ms(job, d)) / 1000
            progress.append((doc["timestamp_ms"] / 1000, _io_bytes(d), float(d.get("total_ios", 0)), start))
        last = progress[-1]
        if not last[1] and not last[2]:
            continue
        started = last[3]
        timed_steps = [(t, b, n) for t, b, n, _ in progress if t > started]  # (not the warm-up's)
        out[direction] = (started, last[0], last[1], last[2], ((started, 0.0, 0.0), *timed_steps))
    return out


def _bins(raw: Any, per_second: float) -> dict[float, float] | None:
    """fio's ``json+`` bins (latency in its unit → I/Os) in seconds, or None where they are
    not a histogram (a key or a count that is not a finite number at or above zero)."""
    if not isinstance(raw, dict):
        return None
    out: dict[float, float] = {}
    try:
        for value, count in raw.items():
            v, c = float(value) / per_second, float(count)
            if not (math.isfinite(v) and math.isfinite(c) and v >= 0 and c >= 0):
                return None
            out[v] = out.get(v, 0.0) + c
    except (TypeError, ValueError):
        return None
    return out


INTERVAL_MOST_S = 10.0  # the longest interval between two of fio's --status-interval=1 reports taken as one


def _stamp(doc: dict[str, Any]) -> float | None:
    """A document's ``timestamp_ms``, where it is a finite number."""
    v = doc.get("timestamp_ms")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def interval_histograms(text: str) -> dict[tuple[str, str], tuple[tuple[float, float, dict[float, float]], ...]]:
    """Per direction and latency kind (``("read", "lat")``: total latency, ``clat``:
    completion latency) of a local fio run's ``json+`` output: the histogram (latency in s →
    I/Os) of the I/Os that completed in each interval between two consecutive
    ``--status-interval`` documents — the difference of their cumulative ``bins`` — as
    (start, end, bins) on the host's clock; the first interval starts with the job's timed
    I/O. An interval in which nothing completed has empty bins."""
    docs = [d for d in _json_documents(text) if d.get("jobs") and _stamp(d) is not None]
    if len(docs) < 2 or any(len(d["jobs"]) != 1 for d in docs):
        return {}
    final = docs[-1]["timestamp_ms"] / 1000
    out: dict[tuple[str, str], list[tuple[float, float, dict[float, float]]]] = {}
    for direction in DIRECTIONS:
        first = docs[-1]["jobs"][0]
        start = (docs[-1]["timestamp_ms"] - _runtime_ms(first, first.get(direction) or {})) / 1000
        for kind in ("clat", "lat"):
            previous: dict[float, float] = {}
            since = start
            for doc in docs:
                until = doc["timestamp_ms"] / 1000
                if until <= start:  # (a warm-up's report, ramp_time: before the timed I/O, its bins empty)
                    continue
                now = _bins(((doc["jobs"][0].get(direction) or {}).get(f"{kind}_ns") or {}).get("bins"), 1e9)
                if now is None:
                    break
                interval = {k: v - previous.get(k, 0.0) for k, v in now.items() if v - previous.get(k, 0.0) > 0}
                # (an interval is between two reports within the job's own time: a report
                # whose clock says otherwise — 0, a year on — makes none)
                if start - 1 <= since < until <= final + 1 and until - since <= INTERVAL_MOST_S:
                    out.setdefault((direction, kind), []).append((since, until, interval))
                previous, since = now, until
    return {k: tuple(v) for k, v in out.items() if any(b for _, _, b in v)}


def interval_latencies(text: str) -> dict[tuple[str, str], tuple[tuple[float, float], ...]]:
    """Per direction and percentile (``(direction, "clat_p99")``, ``"lat_p99"``): the completion
    (or total) latency percentile (s) of the I/Os that completed in each interval between two consecutive
    ``--status-interval`` documents of a local fio run's ``json+`` output — from the
    difference of their cumulative ``bins`` histograms
    (:func:`interval_histograms`), never from their cumulative percentiles, which mix every
    interval before. Each as (the interval's start on the host's clock, value); the first
    interval starts with the job's timed I/O. An interval in which nothing completed has no
    point."""
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for (direction, kind), intervals in interval_histograms(text).items():
        for since, _, interval in intervals:
            for tail, key in PERCENTILES.items():
                value = percentile_of_bins(interval, float(key))
                if value is not None:
                    out.setdefault((direction, f"{kind}_{tail}"), []).append((since, value))
    return {k: tuple(v) for k, v in out.items()}


def _number(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return parse_size(v)
        except ValueError:
            return v
    return v


@tool_parser("fio")
def parse(text: str, source: str = "fio output") -> list[Measurement]:
    """Records from fio's ``json`` or ``json+`` output, local or client/server, of fio 3
    or fio 2; failing that, from its normal text output (as transcribed in the seed
    documents).

    One record per job, direction with I/O and metric: throughput (B/s), iops, lat_mean,
    clat_p50, clat_p90, clat_p99, clat_p99.9 and, where fio measured them, lat_p50, lat_p90, lat_p99,
    lat_p99.9 (s). Client/server output gives a ``host`` per record; fio's own "All
    clients" entry becomes host ``total`` (its clients' total over the longest runtime: fio
    says no client's start, so it is not the span of ``all``), with ``clients`` and
    ``basis``; flagged ``incomplete``, with ``failed_clients``, where a client that ran
    failed or is missing from it.
    """
    try:
        doc = _json_document(text, source)
    except BadInput:
        if _TEXT_JOB.search(text):
            return parse_text(text, source)
        raise
    if "client_stats" in doc:
        jobs = doc["client_stats"]
    else:
        jobs = doc.get("jobs", [])
    if not isinstance(jobs, list) or not jobs:
        raise BadInput(f"{source}: fio JSON without any job results")
    failed_clients = _failed_clients(text, jobs) if "client_stats" in doc else 0
    global_opts = doc.get("global options", {}) or {}
    seen: dict[tuple[str, str], int] = {}
    out: list[Measurement] = []
    for job in jobs:
        name = str(job.get("jobname", "?"))
        host = None
        if "client_stats" in doc:
            host = TOOL_TOTAL if name == "All clients" else str(job.get("hostname", "?"))
        job_opts = job.get("job options") or {}
        total: dict[str, Any] = {}
        flags: tuple[str, ...] = ("failed",) if job.get("error") else ()
        if name == "All clients":  # fio's aggregate carries no options of its own
            name, job_opts = _aggregate_of(jobs)
            total = {"clients": len({j.get("hostname") for j in jobs if j.get("jobname") != "All clients"}),
                     "basis": "fio's own: the clients' total over the longest runtime"}
            if failed_clients:  # (a total over fewer clients than ran is no total of them all)
                total["failed_clients"] = failed_clients
                flags = (*flags, "incomplete")
        key = (name, host or "")
        seen[key] = seen.get(key, 0) + 1
        opts = {**global_opts, **job_opts}
        params: dict[str, Any] = {
            "rw": opts.get("rw", opts.get("readwrite", "read")),
            "bs": _number(opts.get("bs", opts.get("blocksize", "4k"))),
            "iodepth": int(_number(opts.get("iodepth", 1))),
            "numjobs": int(_number(opts.get("numjobs", 1))),
            "ioengine": opts.get("ioengine", "psync"),
            "direct": str(opts.get("direct", "0")) in ("1", "true"),
        }
        if host is not None:
            params["host"] = host
        params.update(total)
        if seen[key] > 1:
            params["instance"] = seen[key]
        for direction in DIRECTIONS:
            d = job.get(direction)
            # (fio 2 may lack total_ios, and its io_bytes, in KiB, is 0 below 1 KiB)
            if not d or not (d.get("total_ios") or d.get("io_bytes") or ("bw_bytes" not in d and d.get("iops"))):
                continue
            out += _direction_records(d, name, {**params, "direction": direction}, flags,
                                      f"{source}: fio job {name} ({doc.get('fio version', 'fio')}), {direction}")
    return out


def _direction_records(d: dict[str, Any], name: str, p: dict[str, Any], flags: tuple[str, ...],
                       where: str) -> list[Measurement]:
    """One direction's records, in base units whichever fio wrote it: fio 3 gives
    ``bw_bytes`` (B/s) and latencies in ns (``lat_ns``, ``clat_ns``); fio 2 gives only
    ``bw`` (KiB/s, as fio 3's ``bw`` is too) and latencies in usec (``lat``, ``clat``,
    percentiles under ``clat``). The keys present decide, not the version's number (fio
    2.99 already wrote ns)."""
    if "bw_bytes" in d:
        rate = float(d["bw_bytes"])
    elif "bw" in d:
        rate = float(d["bw"]) * 1024
    else:
        raise BadInput(f"{where}: neither 'bw_bytes' nor 'bw' (its bandwidth)")
    out = [Measurement("fio", name, "throughput", rate, "B/s", p, flags=flags),
           Measurement("fio", name, "iops", float(d["iops"]), "op/s", p, flags=flags)]
    ns = any(f"{kind}_ns" in d for kind in ("lat", "clat", "slat"))
    suffix, per_second = ("_ns", 1e9) if ns else ("", 1e6)
    lat = d.get(f"lat{suffix}") or {}
    samples = lat.get("N")  # (fio 2 has no N: all zero where nothing was measured)
    if samples if samples is not None else (lat.get("mean") or lat.get("max")):
        out.append(Measurement("fio", name, "lat_mean", lat.get("mean", 0) / per_second, "s", p, flags=flags))
    # clat is from submission to completion; lat (with lat_percentiles=1, as
    # dfsbench's jobs ask) also counts submission, where a FUSE client's direct
    # I/O does its waiting
    for kind in ("clat", "lat"):
        pct = (d.get(f"{kind}{suffix}") or {}).get("percentile") or {}
        bins = _bins((d.get(f"{kind}{suffix}") or {}).get("bins"), per_second)
        histogram = Histogram(bins) if bins else None  # (json+: what an aggregate over clients merges)
        for tail, k in PERCENTILES.items():
            if k in pct:
                out.append(Measurement("fio", name, f"{kind}_{tail}", pct[k] / per_second, "s", p, flags=flags,
                                       histogram=histogram))
    return out


# fio's client/server mode: each server's text comes prefixed '<host> ', and each prints
# 'Starting N process(es)' once; fio 3.33 prints 'client: host=H disconnected' for a server
# lost on the way (its "All clients" then sums the others), and, on stderr, 'fio: failed
# to connect to H:PORT' for one it never reached (client.c)
_STARTED = re.compile(r"(?m)^<[^>\n]*> Starting \d+ (?:process|thread)")
_LOST = re.compile(r"(?m)^client: host=(\S+) disconnected")
_UNREACHED = re.compile(r"(?m)^fio: failed to connect to (\S+?)(?::\d+)?$")


def _failed_clients(text: str, jobs: list[Any]) -> int:
    """How many clients that ran are not whole in fio's "All clients" entry: those whose
    job failed (fio adds their numbers up all the same), those that started or were asked
    but reported nothing (fio sums the rest and says nothing of them)."""
    own = [j for j in jobs if isinstance(j, dict) and j.get("jobname") != "All clients"]
    reported = {str(j.get("hostname")) for j in own}
    failed = {str(j.get("hostname")) for j in own if j.get("error")}
    lost = set(_LOST.findall(text)) - reported
    missing = max(len(_STARTED.findall(text)) - len(reported), len(lost), 0)
    return len(failed) + missing + len(set(_UNREACHED.findall(text)) - reported)


def _aggregate_of(jobs: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Name and options of the jobs fio's "All clients" entry sums, where they agree."""
    parts = [j for j in jobs if j.get("jobname") != "All clients"]
    names = {str(j.get("jobname")) for j in parts}
    options = [j.get("job options") or {} for j in parts]
    common = {k: v for k, v in options[0].items() if all(o.get(k) == v for o in options)} if options else {}
    return (names.pop() if len(names) == 1 else "all-jobs"), common
