"""``free_port``: below the kernel's ephemeral range (where outgoing connections cannot take
it before the service binds it), never twice in one process, and really free."""

from __future__ import annotations

import socket

from leasehold.testing import ports


def test_ports_come_from_below_the_ephemeral_range_and_are_bindable() -> None:
    top = ports._ephemeral_start()
    got = [ports.free_port() for _ in range(50)]
    assert len(set(got)) == 50
    for port in got:
        if top - ports._LOW >= 1_000:
            assert ports._LOW <= port < top
        assert ports._bindable("127.0.0.1", port)


def test_a_port_in_use_or_handed_out_is_skipped(monkeypatch) -> None:
    candidates = [
        p for p in range(ports._LOW + 7_000, ports._LOW + 7_100) if ports._bindable("127.0.0.1", p)
    ]
    busy_port, handed_port, free = candidates[:3]
    monkeypatch.setattr(ports, "_ephemeral_start", lambda: ports._LOW + 10_000)
    monkeypatch.setattr(ports, "_handed", {handed_port})
    tries = iter([busy_port, handed_port, free])
    monkeypatch.setattr(ports.random, "randrange", lambda a, b: next(tries))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", busy_port))
        busy.listen()
        assert ports.free_port() == free
    assert ports._handed == {handed_port, free}


def test_without_a_known_range_the_kernel_picks(monkeypatch) -> None:
    monkeypatch.setattr(ports, "_ephemeral_start", lambda: 0)
    port = ports.free_port()
    assert port > 0 and ports._bindable("127.0.0.1", port)
