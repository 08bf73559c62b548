"""fio's normal (text) output, fio 3's or fio 2's, as far as it carries numbers: what
``workloads.fio.json_output.parse`` reads where a text holds no JSON document of fio's (the
seed documents transcribe this output)."""

from __future__ import annotations

import bisect
import re
from typing import Any

from harness.api.parsing import tool_parser
from harness.api.records import Measurement
from harness.errors import BadInput
from harness.units import parse_size

# (fio's data directions, in the order it reports them: its JSON output's keys too)
DIRECTIONS = ("read", "write", "trim")


# fio 3 (stat.c show_ddir_status):  '  read: IOPS=1023, BW=4192kB/s (4094KiB/s)(8389kB/2001msec)'
#   num2str: 'KiB', 'MiB' … are powers of 1024, 'kB', 'MB' … of 1000 (kb_base=1000 puts
#   them first); no prefix is bytes ('BW=5B/s'); unit_base=1 prints bits ('Mbit/s').
# fio 2:  '  read : io=3072.0MB, bw=104.75MB/s, iops=104, runt= 29327msec'
#   num2str prints 'K', 'M', 'G', 'P', 'E' (the 4th power is 'P'), in powers of 1024 — or of
#   1000 under kb_base=1000, with the very same letters; block sizes in the job's line
#   ('bs=4K-4K/4K-4K/4K-4K', read/write/trim) are powers of 1024 whatever kb_base.

# (each pattern starts where one match can start, and no repeat in it runs past what it may
# hold — a job name where a name begins, a prefix of a few characters on its line, a figure
# within its line's reach — so that no text, however long a line or however many, makes a
# search go back over it again: what is searched is linear in the text)
_TEXT_JOB = re.compile(r"(?m)^[^\w\n]{0,16}?(?:\d+\.?[^\S\n]+)?([\w.-]+): \(groupid=\d+, jobs=(\d+)\)")
_NAME_STARTS = r"(?<![\w.-])"
_TEXT_HEAD = re.compile(_NAME_STARTS + r"([\w.-]+): \(g=\d+\): rw=(\w+), bs=\(R\) ([\d.]+[KMG]?i?B)")
_TEXT_HEAD_2 = re.compile(_NAME_STARTS + r"([\w.-]+): \(g=\d+\): rw=(\w+), bs=(\d+[KMGPE]?)-(\d+[KMGPE]?)/"
                          r"(\d+[KMGPE]?)-(\d+[KMGPE]?)(?:/(\d+[KMGPE]?)-(\d+[KMGPE]?))?")
_TEXT_ENGINE = re.compile(r"ioengine=(\w+), iodepth=(\d+)")
_ENGINE_REACH = 400  # characters after a job's header where its engine may be (a transcription wraps the line)
_TEXT_DIRECTION = re.compile(r"\b(read|write|trim): IOPS=([\d.]+)([kMG]?), BW=([\d.]+)([kKMGTPE]?)(i?)(B|bit)/s")
_TEXT_DIRECTION_2 = re.compile(r"\b(read|write|trim) ?: io=([\d.]+)([KMGPE]?)B, bw=([\d.]+)([KMGPE]?)(B|bit)/s, "
                               r"iops=([\d.]+)([KMGPE]?), runt=\s*(\d+)\s*msec")
_TEXT_LAT = re.compile(r"(?<![a-z])lat \((nsec|usec|msec|sec)\): min=[^,]{0,40}, max=[^,]{0,40}, avg=\s*([\d.]+)")
_TEXT_PCT_UNIT = re.compile(r"(?<![a-z])(c?lat) percentiles \((nsec|usec|msec|sec)\)")
_TEXT_PCT = re.compile(r"(?<![\d.])(\d+\.\d+)th=\[\s*(\d+)\]")
_KB_BASE = re.compile(r"\bkb_base\s*=\s*(1000|1024)\b")
_TIME = {"nsec": 1e-9, "usec": 1e-6, "msec": 1e-3, "sec": 1.0}
_SUFFIX = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}
_POWER_3 = {"": 0, "k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_POWER_2 = {"": 0, "K": 1, "M": 2, "G": 3, "P": 4, "E": 5}
_FIO2_ASSUMED = ("fio 2 prints 'KB' for 1024 bytes, and for 1000 under kb_base=1000: read as 1024, the "
                 "output giving no sign of kb_base=1000")


def _size_2(token: str | None) -> int | None:
    """A block size of fio 2's job line ('4K', '1M', '512'): powers of 1024 (its to_kmg)."""
    if not token:
        return None
    letter = token[-1] if token[-1].isalpha() else ""
    return int(token[:len(token) - len(letter)]) * 1024 ** _POWER_2[letter]


def _text_heads(text: str) -> dict[str, tuple[dict[str, Any], tuple[int | None, ...]]]:
    """Per job name: rw, bs, ioengine and iodepth from its header line, and (fio 2) the
    fixed block size of each direction, None where it varies or is not known."""
    found: dict[str, tuple[dict[str, Any], int, tuple[int | None, ...]]] = {}
    starts = []
    for m in _TEXT_HEAD.finditer(text):
        found[m.group(1)] = ({"rw": m.group(2), "bs": parse_size(m.group(3))}, m.end(), (None, None, None))
        starts.append(m.start())
    for m in _TEXT_HEAD_2.finditer(text):
        sizes = [_size_2(s) for s in m.groups()[2:]]
        fixed = tuple(lo if lo is not None and lo == hi else None for lo, hi in zip(sizes[::2], sizes[1::2]))
        found[m.group(1)] = ({"rw": m.group(2), "bs": sizes[0]}, m.end(), fixed)
        starts.append(m.start())
    starts.sort()
    heads = {}
    for name, (params, end, fixed) in found.items():
        # its engine is on its header's line (or the next, where a transcription wrapped it),
        # never on the next job's header
        following = bisect.bisect_left(starts, end)
        engine = _TEXT_ENGINE.search(text, end, min(end + _ENGINE_REACH,
                                                    starts[following] if following < len(starts) else len(text)))
        if engine:
            params.update(ioengine=engine.group(1), iodepth=int(engine.group(2)))
        heads[name] = (params, fixed)
    return heads


def _base_2_vote(d: re.Match[str], bs: int | None) -> int | None:
    """The kb_base a fio 2 direction line's own numbers show — io = iops × runt × bs holds
    in one base only (1024 vs 1000 is 2.4 % a prefix) — or None where they cannot tell:
    block sizes that vary, no prefix, or an iops too coarse (truncated: 1/iops off)."""
    io, power, iops, runt = float(d.group(2)), _POWER_2[d.group(3)], _iops_2(d), int(d.group(9))
    if not bs or not power or iops < 200 or not io or not runt:
        return None
    expected = iops * runt / 1000 * bs
    off = {base: abs(io * base ** power / expected - 1) for base in (1024, 1000)}
    best = min(off, key=lambda base: off[base])
    return best if off[best] <= 0.008 and max(off.values()) >= 0.015 else None


def _iops_2(d: re.Match[str]) -> float:
    return float(d.group(7)) * 1000 ** _POWER_2[d.group(8)]


@tool_parser("fio")
def parse_text(text: str, source: str = "fio output") -> list[Measurement]:
    """fio's normal output, fio 3's or fio 2's, as far as it carries numbers: per job and
    direction, IOPS and bandwidth (as rounded as fio printed them), mean latency and the
    clat (or, with lat_percentiles, lat) percentiles. Tolerates the line numbers and
    wrapped lines of a transcription."""
    heads = _text_heads(text)
    jobs = list(_TEXT_JOB.finditer(text))
    parsed: list[tuple[str, dict[str, Any], list[tuple[re.Match[str], bool, str]], list[int]]] = []
    for i, job in enumerate(jobs):
        name = job.group(1)
        body = text[job.end():jobs[i + 1].start() if i + 1 < len(jobs) else len(text)]
        body = body.split("Run status group")[0]
        head, fixed = heads.get(name, ({}, (None, None, None)))
        params: dict[str, Any] = {"numjobs": int(job.group(2)), **head}
        found = sorted([(d, False) for d in _TEXT_DIRECTION.finditer(body)] +
                       [(d, True) for d in _TEXT_DIRECTION_2.finditer(body)], key=lambda f: f[0].start())
        directions = []
        for j, (d, old) in enumerate(found):
            part = body[d.end():found[j + 1][0].start() if j + 1 < len(found) else len(body)]
            directions.append((d, old, part))
        votes = [v for d, old, _ in directions if old
                 for v in [_base_2_vote(d, fixed[DIRECTIONS.index(d.group(1))] if len(fixed) == 3 else None)]
                 if v is not None]
        parsed.append((name, params, directions, votes))
    stated = _KB_BASE.search(text)
    everywhere = {v for *_, votes in parsed for v in votes}
    out: list[Measurement] = []
    for name, params, directions, votes in parsed:
        shown = set(votes) or everywhere  # (this job's numbers; else those of the run's other jobs)
        if len(shown) > 1 or stated and shown and shown != {int(stated.group(1))}:
            said = f"; the text says {stated.group(0)}" if stated else ""
            raise BadInput(f"{source}: fio 2 job {name}: its numbers do not agree on kb_base "
                           f"(1024 or 1000 bytes to a 'KB'{said})")
        base = shown.pop() if shown else int(stated.group(1)) if stated else None
        for d, old, part in directions:
            p = {**params, "direction": d.group(1)}
            if old:
                iops, power = _iops_2(d), _POWER_2[d.group(5)]
                bw = float(d.group(4)) * (base or 1024) ** power
                if power and base is None:
                    p["note"] = _FIO2_ASSUMED
                bits = d.group(6) == "bit"
            else:
                iops, power = float(d.group(2)) * _SUFFIX[d.group(3)], _POWER_3[d.group(5)]
                bw = float(d.group(4)) * (1024 if d.group(6) else 1000) ** power
                bits = d.group(7) == "bit"
            out.append(Measurement("fio", name, "iops", iops, "op/s", p))
            out.append(Measurement("fio", name, "throughput", bw / 8 if bits else bw, "B/s", p))
            lat = _TEXT_LAT.search(part)
            if lat:
                out.append(Measurement("fio", name, "lat_mean", float(lat.group(2)) * _TIME[lat.group(1)], "s", p))
            units = list(_TEXT_PCT_UNIT.finditer(part))
            for k, unit in enumerate(units):
                block = part[unit.end():units[k + 1].start() if k + 1 < len(units) else len(part)]
                pct = {key: float(v) for key, v in _TEXT_PCT.findall(block)}
                for tail, key in (("p50", "50.00"), ("p90", "90.00"), ("p99", "99.00"), ("p99.9", "99.90")):
                    if key in pct:
                        out.append(Measurement("fio", name, f"{unit.group(1)}_{tail}",
                                               pct[key] * _TIME[unit.group(2)], "s", p))
    if not out:
        raise BadInput(f"{source}: fio text output without any 'read:/write: IOPS=' (fio 3) or "
                       "'read :/write: io=' (fio 2) lines")
    return out
