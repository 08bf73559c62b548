"""What reaching a client host costs: the round trip of one short command (``true``) on
this machine, through ``docker exec`` into a lab node, and over SSH (paramiko, one
connection kept open) to the same node — side by side, in one run, so the ratio holds
whatever else the machine is doing. Every harness step on a client host (a mount check,
a cache drop, a tool start) pays it once or a few times.

    python bench/ssh_overhead.py --host 172.18.0.2 --key ~/.ssh/id --node dfsbench-LAB-client1 [N]

(``tests/integration/test_existing.py`` shows how a lab's client node gets an sshd.)
"""

from __future__ import annotations

import argparse
import statistics
import time

from environments.nodes import Node
from harness.system.hosts import LOCAL, Host
from harness.system.ssh import Reach, SshHost


def timed(host: Host, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        host.run(["true"], timeout=30)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("n", type=int, nargs="?", default=50)
    args = parser.parse_args()
    t0 = time.perf_counter()
    ssh = SshHost(Reach(args.host, key=args.key))
    connect = time.perf_counter() - t0
    hosts: list[tuple[str, Host]] = [("this machine", LOCAL), ("docker exec", Node(args.node)), ("ssh", ssh)]
    results = {name: [] for name, _ in hosts}  # type: dict[str, list[float]]
    for _ in range(3):  # interleaved rounds, so drift hits all three alike
        for name, host in hosts:
            results[name] += timed(host, args.n // 3 + 1)
    base = statistics.median(results["this machine"])
    print(f"ssh connect (handshake + key auth): {connect * 1000:.0f} ms")
    for name, values in results.items():
        q = statistics.quantiles(values, n=10)
        print(f"{name:>13}: median {statistics.median(values) * 1000:6.1f} ms  "
              f"(p10 {q[0] * 1000:.1f}, p90 {q[-1] * 1000:.1f}; {len(values)} runs)  "
              f"{statistics.median(values) / base:5.1f}× this machine")
    ssh.close()


if __name__ == "__main__":
    main()
