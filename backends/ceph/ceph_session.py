"""A long-lived monitor-command session, run by the interpreter that has Ceph's bindings.

The ``ceph`` CLI costs a Python start-up and a new cluster connection per call (about
0.2-0.7 s each). Bring-up and status polling send dozens of commands, so dfsbench starts
this script once (with the interpreter named in the ``ceph`` CLI's own first line, which
has the ``rados`` module) and talks to it over stdin/stdout, one JSON object per line:

    in:  {"cmd": {"prefix": "osd stat", "format": "json"}, "target": "mon"}
    out: {"ret": 0, "out": "...", "err": "..."}

This file is executed as a script; it imports nothing from dfsbench.
"""

import json
import os
import sys
import time


def main() -> int:
    # (run as a file, its own directory comes first on the path, and dfsbench's module of
    # the same name there would shadow the bindings)
    if "__file__" in globals():
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import rados  # only present for the system interpreter that Ceph's packages serve

    conffile, keyring, connect_timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    cluster = rados.Rados(conffile=conffile, name="client.admin", conf={"keyring": keyring})
    deadline = time.monotonic() + connect_timeout
    while True:
        try:
            cluster.connect(timeout=max(1, int(deadline - time.monotonic())))
            break
        except rados.Error as exc:
            if time.monotonic() > deadline:
                print(json.dumps({"ret": -1, "out": "", "err": f"connect: {exc}"}), flush=True)
                return 1
            time.sleep(0.2)
    print(json.dumps({"ret": 0, "out": "connected", "err": ""}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        cmd = json.dumps(request["cmd"])
        timeout = int(request.get("timeout", 30))
        try:
            # (the calls below ignore their timeout argument; librados waits as long as no
            # monitor or manager answers, unless this is set: then it answers ETIMEDOUT)
            cluster.conf_set("rados_mon_op_timeout", str(timeout))
            if request.get("target") == "mgr":
                ret, out, err = cluster.mgr_command(cmd, b"", timeout=timeout)
            else:
                ret, out, err = cluster.mon_command(cmd, b"", timeout=timeout)
            reply = {"ret": ret, "out": out.decode(errors="replace"), "err": err}
        except rados.Error as exc:
            reply = {"ret": -1, "out": "", "err": str(exc)}
        print(json.dumps(reply), flush=True)
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
