"""Workload ``s3``: a closed-loop mix of S3 operations, as warp's ``mixed`` runs it, on an
``s3`` target (an endpoint, a key pair and a bucket of the run's own).

Each client prepares its objects first, untimed (``objects`` of them over its workers, sizes
drawn from the weighted ``sizes``, spread over ``buckets`` buckets of the cell's own). Then,
from one start, every worker — a process of its own with one keep-alive connection — draws
one operation after another by the weights of ``mix`` over the objects it owns: GET and HEAD
of one of them, PUT of a new one, DELETE of one, LIST of its own prefix; for ``seconds``.
The engine is ``workloads/s3_engine.py`` (standard library only, run on the client's host).

What a cell records, per operation (the test: ``get``, ``head``, ``put``, ``delete``,
``list``):

- ``iops``: the operations that succeeded and completed within the timed span, over it;
  ``throughput`` (GET, PUT): their bytes over it;
- ``lat_mean`` and ``lat_p50`` … ``lat_p99.9``: time from the request's start to its answer
  read whole, of those operations (a histogram each, whole and per second: over several
  clients the percentile of their merged histograms); for GET also ``ttfb_p50`` …: the time
  to the body's first byte;
- ``errors``: the share of the operations tried that failed, in %, with how many
  (``failed_ops``) and of which kinds (``error_kinds``: no answer, a status that is not a
  success, a GET whose bytes are not what was PUT — every GET is checked byte for byte
  unless ``verify: false``). An error is a counted outcome, never the end of the cell.

And for the cell (test ``all``): ``iops`` over every operation (with ``reconnects``: the
connections opened again after an error or a gateway's close, each operation after one
timed with its connection's opening), and ``client_cpu_per_op``, the load generator's CPU
(user and system, of its worker processes, from the start to the last operation that
completed within the span) per operation it tried then. The load generator is part of the
measurement: where its workers were on a CPU or waiting in a run queue for one at least
:data:`SATURATED` of the span (``client_busy_share``, from the kernel's schedstat: never
waiting for the gateway), the cell is flagged ``host-bound`` [B] — the client, or the CPUs it
shares, set the rate, not the gateway.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from harness.api.contracts import Options, Workload
from harness.api.histogram import Histogram, SLO_PERCENTILES
from harness.api.model import MAX_SECONDS
from harness.api.records import OFFERED_LOAD, Measurement, fell_behind
from harness.api.series import percentile_of_bins
from harness.api.tables import Column, TableSpec
from harness.api.target import S3Access, Target, Written
from harness.errors import DfsbenchError
from harness.system.names import host_part, named_path
from harness.units import parse_size, size
from workloads import warp

ENGINE = Path(__file__).with_name("s3_engine.py")  # (run on the client's host: a path, not an import)
OPS = ("get", "head", "put", "delete", "list")
Op = Literal["get", "head", "put", "delete", "list"]
DEFAULT_MIX: dict[Op, float] = {"get": 45.0, "head": 30.0, "put": 15.0, "delete": 10.0}  # warp's mixed
MAX_OBJECT = 256 << 20
HELD_MOST = 4 << 30  # what a cell's workers may hold of the client's memory together
SATURATED = 0.9  # the share of the CPUs it could use at which the load generator was the bound
PERCENTILES = tuple(float(p[1:]) for p in SLO_PERCENTILES)

Weight = Annotated[float, Field(ge=0, le=1e6)]


def size_label(nbytes: int) -> str:
    """A size as the config may write it, exactly (64KiB; 100000B where no unit divides it)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return f"{nbytes}B"


class S3Load(Options):
    iops: list[Annotated[int, Field(ge=1, le=1_000_000)]] = Field(min_length=1, description="operations per "
                                                                 "second each client offers, the whole mix (open loop: "
                                                                 "Poisson arrivals), a cell each")


class S3Options(Options):
    mix: dict[Op, Weight] = Field(
        default_factory=lambda: dict(DEFAULT_MIX), description="each operation's weight (warp's mixed: get 45, "
        "head 30, put 15, delete 10; list: a LIST of 100 keys of the worker's own prefix)")
    sizes: dict[str, Annotated[float, Field(gt=0, le=1e6)]] = Field(
        default_factory=lambda: {"64KiB": 1.0}, description="object sizes and their weights, e.g. "
        "{4KiB: 10, 64KiB: 60, 4MiB: 30}")
    objects: int = Field(200, ge=1, le=1_000_000, description="objects each client puts before the timed "
                         "mix (over its workers)")
    buckets: int = Field(1, ge=1, le=100, description="buckets the objects are spread over (on RGW one "
                         "bucket's index ages otherwise than many)")
    workers: list[Annotated[int, Field(ge=1, le=256)]] = Field([8], min_length=1, description="workers per "
                                                               "client, each with its own connection: a cell each")
    seconds: PositiveInt = Field(description="seconds of the timed mix", le=MAX_SECONDS)
    verify: bool = Field(True, description="check every GET's bytes against what was put")
    load: S3Load | None = Field(None, description="offered load (open loop) instead of as fast as the workers go: "
                                "{iops: [100, 200, 400]}; latency then counts from each request's arrival")
    timeout_s: float = Field(60, gt=0, le=3600, description="seconds one request may take before it is "
                             "counted as an error")
    deadline_s: float = Field(1800, gt=0, description="seconds one step (the preparation, the mix) may "
                              "take; past it the workers are killed and the cell recorded hung")

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v: dict[str, float]) -> dict[str, float]:
        out: dict[str, float] = {}
        for text, weight in v.items():
            n = parse_size(text.strip())  # (ValueError: not a size, and the key says which)
            if not 1 <= n <= MAX_OBJECT:
                raise ValueError(f"an object of {size(n)} is outside 1 B … {size(MAX_OBJECT)}")
            out[size_label(n)] = out.get(size_label(n), 0.0) + weight
        if not out:
            raise ValueError("give at least one object size")
        return out

    @model_validator(mode="after")
    def _mix(self) -> S3Options:
        if not any(w > 0 for w in self.mix.values()):
            raise ValueError("mix: give at least one operation a weight above 0")
        if not self.mix.get("put", 0) > 0:
            if self.mix.get("delete", 0) > 0:
                raise ValueError("mix: a mix that deletes and never puts runs out of objects: give 'put' a weight")
            if self.objects < max(self.workers):
                raise ValueError(f"objects: {self.objects} objects over {max(self.workers)} workers leave a worker "
                                 "none to read, and the mix never puts one: give at least one object per worker")
        return self

    def size_weights(self) -> list[list[int | float]]:
        return [[parse_size(k), w] for k, w in self.sizes.items()]

    def largest(self) -> int:
        return max(parse_size(k) for k in self.sizes)


def mix_label(mix: Mapping[Any, float]) -> str:
    return ", ".join(f"{op} {mix[op]:g}" for op in OPS if mix.get(op, 0) > 0)


def sizes_label(sizes: dict[str, float]) -> str:
    if len(sizes) == 1:
        return next(iter(sizes))
    return ", ".join(f"{k}×{w:g}" for k, w in sizes.items())


def _row(m: Measurement) -> tuple[str, str]:
    p = m.params
    sizes = size(p["object_size"]) if isinstance(p.get("object_size"), int) else p.get("sizes")
    return (m.test.upper() if m.test != "all" else "all", f"{sizes} × {p.get('workers')} workers")


def _order(m: Measurement) -> int:
    return OPS.index(m.test) if m.test in OPS else len(OPS)


def bins_s(pairs: list[list[int]]) -> dict[float, float]:
    """The engine's bins ([lower bound ns, count]) as latencies in seconds → counts."""
    from workloads.s3_engine import bin_value_s

    out: dict[float, float] = {}
    for lower, count in pairs:
        value = bin_value_s(int(lower))
        out[value] = out.get(value, 0.0) + float(count)
    return out


def offered_per_op(result: dict[str, Any]) -> dict[str, float]:
    """What the client offered of each operation (and of them all, ``all``) per second, in an
    open loop: its rate, shared by the mix's weights (each arrival draws its operation)."""
    rate, weights = result.get("rate"), result.get("weights") or {}
    if not isinstance(rate, (int, float)) or not weights:
        return {}
    total = sum(float(w) for w in weights.values())
    return {"all": float(rate), **{op: float(rate) * float(w) / total for op, w in weights.items()}}


def records(result: dict[str, Any], cell: dict[str, Any], target: Target) -> Iterator[Measurement]:
    """The records of one client's mix, as its engine counted it (see the module): rates over
    the timed span, percentiles of its histograms, errors by kind, the client's CPU per
    operation; every record flagged host-bound where the load generator was saturated."""
    seconds = float(result["seconds"])
    span_start = float(result["started"])
    here = target.host.here
    timing, _ = target.timing(span_start, float(result["ended"]))
    ops: dict[str, dict[str, Any]] = result["ops"]
    tried = sum(o["count"] + sum(o["errors"].values()) for o in ops.values())
    workers = int(result["workers"])
    busy = result.get("busy_s")
    share = float(busy) / (seconds * workers) if isinstance(busy, (int, float)) and seconds > 0 else None
    flags: tuple[str, ...] = ("host-bound",) if share is not None and share >= SATURATED else ()
    base = {**cell, **timing}
    offered = offered_per_op(result)

    def m(test: str, metric: str, value: float | None, unit: str, more: dict[str, Any] | None = None,
          progress: tuple[tuple[float, float], ...] = (), histogram: Histogram | None = None) -> Measurement:
        said = {**base, **(more or {})}
        marks = flags
        if test in offered:  # (open loop: what this client offered of it, and whether it fell behind)
            said[OFFERED_LOAD] = round(offered[test], 6)
            if fell_behind(offered[test] * seconds, done.get(test, 0)):
                marks = (*marks, "saturated")
        return Measurement("s3", test, metric, value, unit, said, target.backend, target.variant, flags=marks,
                           progress=progress, histogram=histogram)

    done = {op: int(found["count"]) for op, found in ops.items()}
    done["all"] = sum(done.values())

    for op in sorted(ops, key=lambda o: OPS.index(o) if o in OPS else len(OPS)):
        found = ops[op]
        count, failed = int(found["count"]), int(sum(found["errors"].values()))
        # every second of the span, those in which none completed too (a stall: flat, never
        # a line drawn across it from the seconds around it)
        by_second = {int(sec): (int(n), int(moved), b) for sec, n, moved, b in found["seconds"]}
        per_second = [(sec, *by_second.get(sec, (0, 0, []))) for sec in range(math.ceil(seconds))]
        done_ops, done_bytes, cum_ops, cum_bytes = [(here(span_start), 0.0)], [(here(span_start), 0.0)], 0, 0
        for second, n, moved, _ in per_second:
            cum_ops += n
            cum_bytes += moved
            t = here(span_start + min(float(second) + 1, seconds))
            done_ops.append((t, float(cum_ops)))
            done_bytes.append((t, float(cum_bytes)))
        yield m(op, "iops", count / seconds, "op/s", {"ops": count}, tuple(done_ops))
        if op in ("get", "put"):
            yield m(op, "throughput", found["bytes"] / seconds, "B/s", {"bytes": found["bytes"]}, tuple(done_bytes))
        if count:
            lat = bins_s(found["lat"])
            intervals = tuple((here(span_start + s), here(span_start + min(s + 1.0, seconds)), bins_s(b))
                              for s, _, _, b in per_second)
            yield m(op, "lat_mean", float(found["lat_sum_s"]) / count, "s")
            for p, name in zip(PERCENTILES, SLO_PERCENTILES):
                yield m(op, f"lat_{name}", percentile_of_bins(lat, p), "s", histogram=Histogram(lat, intervals))
            if op == "get" and found["ttfb"]:
                ttfb = bins_s(found["ttfb"])
                for p, name in zip(PERCENTILES, SLO_PERCENTILES):
                    yield m(op, f"ttfb_{name}", percentile_of_bins(ttfb, p), "s", histogram=Histogram(ttfb))
        if count + failed:
            kinds = dict(sorted(found["errors"].items()))
            more: dict[str, Any] = {"failed_ops": failed}
            if kinds:
                more["error_kinds"] = kinds
                more["error_said"] = {k: str(v)[:200] for k, v in sorted(found.get("samples", {}).items())}
            yield m(op, "errors", 100.0 * failed / (count + failed), "%", more)
    total = sum(int(o["count"]) for o in ops.values())
    connects = result.get("connects")
    yield m("all", "iops", total / seconds, "op/s", {"ops": total, "reconnects": max(0, int(connects) - workers)
                                                     if isinstance(connects, int) else None})
    if total:  # (every operation of the mix together: their histograms merged, bin by bin)
        whole: dict[float, float] = {}
        each_second: dict[int, dict[float, float]] = {sec: {} for sec in range(math.ceil(seconds))}
        for found in ops.values():
            for value, times in bins_s(found["lat"]).items():
                whole[value] = whole.get(value, 0.0) + times
            for sec, _, _, b in found["seconds"]:
                into = each_second.setdefault(int(sec), {})
                for value, times in bins_s(b).items():
                    into[value] = into.get(value, 0.0) + times
        intervals = tuple((here(span_start + sec), here(span_start + min(sec + 1.0, seconds)), bins)
                          for sec, bins in sorted(each_second.items()))
        for p, name in zip(PERCENTILES, SLO_PERCENTILES):
            yield m("all", f"lat_{name}", percentile_of_bins(whole, p), "s", histogram=Histogram(whole, intervals))
    if tried:
        yield m("all", "client_cpu_per_op", float(result["cpu_s"]) / tried, "s",
                {"client_cpu_s": round(float(result["cpu_s"]), 4),
                 "client_busy_share": None if share is None else round(share, 4)})


class S3(Workload):
    name = "s3"
    accepts = frozenset({"s3"})
    Options = S3Options
    options: S3Options
    times_phases = True
    tools = (("python3", "python3"),)
    tool = "warp"
    parser = staticmethod(warp.parse)
    parser_leaves = warp.LEFT_OUT
    tables = (
        TableSpec("S3: operations per second by operation",
                  (Column("iops", "op/s"), Column("throughput", "rate"), Column("errors", "errors"),
                   Column("client_cpu_per_op", "client CPU/op")), "iops",
                  ("operation", "object size × workers"), _row, _order, chart="iops"),
        TableSpec("S3: latency and time to first byte", (Column("lat_mean", "mean"), Column("lat_p50", "p50"),
                                                        Column("lat_p99", "p99"), Column("ttfb_mean", "TTFB mean"),
                                                        Column("ttfb_p50", "TTFB p50"), Column("ttfb_p99", "TTFB p99")),
                  "lat_p99", ("operation", "object size × workers"), _row, _order,
                  select=lambda m: m.metric in ("lat_mean", "ttfb_mean")
                  or m.metric.startswith(("lat_p", "ttfb_p"))),
    )

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        if scale == "report":
            return {"seconds": 60, "objects": 2000, "workers": [8, 32]}
        return {"seconds": 5, "objects": 200, "workers": [8]}

    @classmethod
    def is_write(cls, record: Measurement) -> bool:
        return record.test == "put"

    def cells(self) -> list[dict[str, Any]]:
        o = self.options
        one = {"object_size": parse_size(next(iter(o.sizes)))} if len(o.sizes) == 1 else {"sizes": sizes_label(o.sizes)}
        rates: list[int | None] = list(o.load.iops) if o.load is not None else [None]
        return [{**one, "mix": mix_label(o.mix), "objects": o.objects, "buckets": o.buckets, "workers": w,
                 "seconds": o.seconds, **({"offered_iops": r} if r is not None else {})} for w in o.workers for r in rates]

    def lasts(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "seconds", float(self.options.seconds)

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "deadline_s", self.options.deadline_s

    def verification(self) -> str:
        return ("every object the mix left, those it put while the fault held among them, read back whole "
                "against what was put") if self.options.verify else ""

    def unrunnable(self, kind: str) -> tuple[str, str, str] | None:
        """Workers that would hold more of the client's memory than :data:`HELD_MOST`: each
        holds the bytes objects are cut from, and an object being put or read, of the
        largest size."""
        o = self.options
        held = max(o.workers) * 3 * o.largest()
        if held > HELD_MOST:
            return ("sizes", f"{max(o.workers)} workers with objects of {size(o.largest())} hold about "
                    f"{size(held)} of the client's memory (at most {size(HELD_MOST)})",
                    "give fewer workers or smaller objects")
        return None

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        s3 = target.reach(S3Access)
        host = target.host
        o = self.options
        buckets = [f"{s3.bucket}-{target.tag}-{i}" for i in range(int(cell["buckets"]))]
        prefix = target.file_of("o", host) + "/"
        plan = {"buckets": buckets, "prefix": prefix, "objects": int(cell["objects"]),
                "workers": int(cell["workers"]), "sizes": o.size_weights(), "seed": int(target.tag, 16)}
        endpoint = s3.endpoint()
        alone = target.lineup is None or target.lineup.clients <= 1
        faulted = o.verify and target.lineup is not None and target.lineup.keep is not None  # (through a fault)
        cleaned = False
        try:
            prepared = host.engine(ENGINE, "prepare", {"endpoint": endpoint, "plan": plan, "timeout_s": o.timeout_s,
                                                       "deadline": o.deadline_s},
                                   deadline=o.deadline_s, output=raw_dir / f"s3-prepare-{cell['workers']}.json")
            target.begin("mix")
            out = raw_dir / f"s3-mix-{cell['workers']}.json"
            lasts = o.deadline_s + float(cell["seconds"])  # (deadline_s: its set-up, its last request's end)
            result = host.engine(ENGINE, "mix", {"endpoint": endpoint, "plan": plan, "weights": dict(o.mix),
                                                 "seconds": float(cell["seconds"]), "timeout_s": o.timeout_s,
                                                 "verify": o.verify, "deadline": lasts, "report_left": faulted,
                                                 **({"rate": float(cell["offered_iops"])} if "offered_iops" in cell
                                                    else {})},
                                 deadline=lasts, output=out)
            left = result.pop("left", None)
            out.write_text(json.dumps({**result, "prepared": prepared, "host": host.name}, indent=1))
            yield from records(result, {**cell, "verify": o.verify}, target)
            target.settle("the mix")  # (no client deletes its objects while another's mix still runs)
            written = self._written(target, result, left, plan, endpoint, buckets, prefix, raw_dir, cell, alone) \
                if left else None
            if written is not None and target.keep(written):
                cleaned = True  # (kept for the check after the fault, which removes them after it)
                return
            self._clean(target, endpoint, buckets, prefix, raw_dir, cell, drop=alone)
            cleaned = True
        finally:
            if not cleaned:  # (a failed or interrupted cell leaves nothing of its own either)
                try:
                    self._clean(target, endpoint, buckets, prefix, raw_dir, cell, drop=alone)
                except Exception:  # noqa: BLE001 (the cell's own error is the one to show; detach drops the rest)
                    pass

    def _written(self, target: Target, result: dict[str, Any], left: list[Any], plan: dict[str, Any],
                 endpoint: dict[str, Any], buckets: list[str], prefix: str, raw_dir: Path, cell: dict[str, Any],
                 alone: bool) -> Written | None:
        """Every object the mix left, for the check after a fault: read back whole on a client
        (another where there is one) and compared byte for byte with what was put. It counts
        as written while the fault held only where a PUT of the mix was acknowledged then
        (``moments``: each left object's PUT, on this machine's clock); None where the mix put
        nothing. An object store's client keeps no cache, so the writer itself may read them
        from the storage where it is the only client."""
        writer = target.host
        moments = tuple(sorted(target.host.here(float(o[4])) for o in left if len(o) > 4 and o[4] is not None))
        if not moments:
            return None
        timing, _ = target.timing(float(result["started"]), float(result["ended"]))
        # (the list where any client that may check it reads it: in each one's scratch, written
        # now, inside the cell — the check comes after it, where no cell's scratch is at hand)
        name = f"s3-left-{target.tag}-{host_part(writer.label)}.json"
        lists = {}
        for peer in target.peers or target.hosts or (writer,):
            lists[peer.label] = target.on(peer).scratch() / name
            peer.write_text(lists[peer.label], json.dumps(left))

        def check(view: Target) -> bool:
            listed = lists.get(view.host.label)
            if listed is None:
                raise DfsbenchError(f"no list of the objects to check on {view.host.label}")
            got = view.host.engine(ENGINE, "check", {"endpoint": endpoint, "plan": plan, "objects_file": str(listed),
                                                     "timeout_s": self.options.timeout_s},
                                   deadline=self.options.deadline_s,
                                   output=named_path(raw_dir, f"s3-check-{host_part(view.host.label)}.json"))
            return int(got["checked"]) == len(left) and int(got["wrong"]) == 0

        return Written(f"{len(left)} objects the mix left ({len(moments)} put by it, on {writer.label})", writer,
                       timing["started"], timing["ended"], check,
                       lambda: self._clean(target, endpoint, buckets, prefix, raw_dir, cell, drop=alone),
                       cacheless=True, moments=moments)

    def _clean(self, target: Target, endpoint: dict[str, Any], buckets: list[str], prefix: str, raw_dir: Path,
               cell: dict[str, Any], drop: bool) -> None:
        """Every object of this client's prefix deleted; the buckets too where it is the
        cell's only client (several: the attachment's end drops them)."""
        target.host.engine(ENGINE, "clean", {"endpoint": endpoint, "buckets": buckets, "prefix": prefix,
                                             "drop_buckets": drop, "timeout_s": self.options.timeout_s},
                           deadline=self.options.deadline_s, output=raw_dir / f"s3-clean-{cell['workers']}.json")
