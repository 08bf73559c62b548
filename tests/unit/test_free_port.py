"""The ports a lab's daemons are given: free when chosen, and below the kernel's range of
ephemeral ports, from which any outgoing connection may take one before the daemon binds it."""

from __future__ import annotations

import random
import socket

from harness.system import proc


def test_a_port_is_drawn_below_the_ephemeral_range_and_a_taken_one_is_passed_over(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        monkeypatch.setattr(proc, "ephemeral_low", lambda: busy + 1)
        draws = iter([busy, busy - 1])
        monkeypatch.setattr(random, "randint", lambda lo, hi: next(draws))
        assert proc.free_port() == busy - 1  # (the listened-on one passed over)


def test_ports_drawn_are_free_and_outside_what_outgoing_connections_use():
    low = proc.ephemeral_low()
    ports = {proc.free_port() for _ in range(50)}
    assert all(1024 <= p < low for p in ports) and len(ports) > 40  # (drawn at random: seldom the same)
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # (free: nothing holds it)
