"""The measurement record: one number, in base units, with everything that qualifies it.

This is the public contract spoken by the store, ``parse``, ``import`` and
``compare --format json`` (see DESIGN.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.errors import BadInput

UNITS = frozenset({"B", "B/s", "op/s", "s", "files/s"})

# Every flag a record can carry, with what it means and what to do; printed once under a table.
FLAGS: dict[str, str] = {
    "failed": "the tool failed; the cell has no value. Its error is listed under 'Cells that "
              "failed'; the raw output is stored with the run.",
    "hung": "the tool passed its deadline and was killed; the cell has no value. Check the "
            "client (the report's iozone -I hung on one), or raise the workload's deadline_s.",
    "incomplete": "the tool ended early; the value covers only part of the work. Rerun the cell.",
    "no-cache-drop": "caches were not dropped before this read (or could not be: not root?); it "
                     "may measure the client's cache, not the storage. Run as root, or distrust it.",
    "exceeds-network": "faster than the network allows: a cache answered, not the storage. Use "
                       "O_DIRECT, or files larger than the client's RAM, and drop caches.",
    "fits-in-cache": "cached mode with a file smaller than client RAM: it measures caching. "
                     "Read it as a cache figure, or use O_DIRECT or larger files.",
    "unstable": "the repeats vary more than the CV threshold; the median is not a firm figure. "
                "Add repeats or find the source of the noise before comparing.",
    "not-comparable": "the runs compared differ in parameters or topology (listed above); the "
                      "difference may come from that, not from the systems.",
}


# How a flag shows in a table cell (explained once under the table).
FLAG_CODES: dict[str, str] = {
    "failed": "F", "hung": "H", "incomplete": "I", "no-cache-drop": "D", "exceeds-network": "N",
    "fits-in-cache": "C", "unstable": "U", "not-comparable": "X",
}


def flag_marks(flags: set[str] | tuple[str, ...]) -> str:
    """' [N,C]' for a cell's flags, '' for none."""
    return " [" + ",".join(sorted(FLAG_CODES.get(f, f) for f in flags)) + "]" if flags else ""


@dataclass(frozen=True)
class Measurement:
    workload: str
    test: str
    metric: str
    value: float | None
    unit: str
    params: dict[str, Any] = field(default_factory=dict)
    backend: str = ""
    variant: str = "default"
    run_id: str = ""
    repeat: int = 0
    flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise BadInput(f"measurement {self.workload}/{self.test}/{self.metric}: unit "
                           f"'{self.unit}' is not one of {', '.join(sorted(UNITS))}")
        if self.value is None:
            if not self.flags:
                raise BadInput(f"measurement {self.workload}/{self.test}/{self.metric} has no "
                               "value and no flag saying why")
        else:
            value = float(self.value)
            if math.isnan(value) or math.isinf(value):
                raise BadInput(f"measurement {self.workload}/{self.test}/{self.metric}: "
                               f"value {self.value} is not a finite number")
            object.__setattr__(self, "value", value)
        object.__setattr__(self, "flags", tuple(self.flags))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["flags"] = list(self.flags)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Measurement:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        known["flags"] = tuple(known.get("flags", ()))
        return cls(**known)
