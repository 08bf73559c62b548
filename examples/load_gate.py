"""Each system's knee and highest load within each SLO, read from ``dfsbench compare RUN
--format json`` (its 'load' table: each figure a number with its unit; no text parsed).
With LOAD, a gate: exit 1 where a system holds less than LOAD op/s within an SLO, or its
figure is flagged (degraded, host-bound, a contended lab: not a figure to gate on).

    dfsbench compare latest --format json > run.json
    python examples/load_gate.py run.json [LOAD]      (or '-' for stdin)
"""
import json
import sys


def shown(f):  # (with its flags: a figure measured degraded, host-bound or on a contended lab says so)
    flags = f" [flagged: {', '.join(f['flags'])}]" if f.get("flags") else ""
    return (f"{f['value']:g} {f['unit']}" if f["value"] is not None else f"none ({f['why']})") + flags


doc = json.load(open(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "-" else sys.stdin)
need = float(sys.argv[2]) if len(sys.argv) > 2 else None
failed = False
for row in next((t["rows"] for t in doc["tables"] if t["name"] == "load"), []):
    slos = [v for k, v in row.items() if k.startswith("within_")]
    print(f"{row['figure']} {row['system']}: knee {shown(row['knee'])}" + "".join(
        f"; within {s['percentile']} ≤ {s['target']['value']:g} {s['target']['unit']}: {shown(s)}" for s in slos))
    failed |= need is not None and any((s["value"] or 0) < need or s.get("flags") for s in slos)
sys.exit(1 if failed else 0)
