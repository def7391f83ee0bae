"""``python -m services.broker_agent.simulation``: a fleet of simulated brokers in one process.

Each broker has its own gRPC port, etcd session and registration (``broker``), with the real
agent's defaults (``BrokerConfig``); one renewal process renews all their leases
(``RenewalProcess``, as the agent's; batched: every lease due in one write,
``leasehold.etcd.keepalive``), and each UpdateMetadata body is
decoded once for all of them (``sharing``). Once all are registered the process prints one JSON
line, ``{"ready": {<broker id>: <port>}}``, then answers JSON commands, one per stdin line, with
one JSON line each:

- ``{"cmd": "stats"}``: every broker's figures (``SimulatedBroker.stats``) and the process RSS;
- ``{"cmd": "watch", "leader": <id>, "partitions": [[topic, p], ...]}``: from now on each
  broker's ``still_led`` counts those partitions its cache shows led by ``leader``, and its
  ``cleared_at`` is the instant the UpdateMetadata that left none was applied
  (``cleared_arrived_at``: when that request reached the broker's servicer);
- ``{"cmd": "shutdown"}``: controlled shutdown of every broker here, then exit.

SIGTERM does what the agent does on it: controlled shutdown, then revoke the sessions. The gRPC
server is plaintext (loopback, beside the benchmark that started it), but the fence acts as a
TLS broker's (the controller epoch checked against etcd's) unless ``--confirm-in-etcd`` asks for
the plaintext broker's extra reads (every leader change and deletion confirmed in etcd).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import signal
import sys
import threading
import time
from collections.abc import Sequence

from leasehold import logs
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.renewal_process import RenewalProcess
from services.broker_agent.config import BrokerConfig
from services.broker_agent.model import TopicPartition
from services.broker_agent.simulation.broker import SimSettings, SimulatedBroker, Watch
from services.broker_agent.simulation.sharing import Sharing

START_CONCURRENCY = 32


def default_settings(session_ttl: int | None) -> SimSettings:
    """The agent's own defaults (a simulated broker never runs with settings of its own)."""
    d = {f.name: f.default for f in dataclasses.fields(BrokerConfig)}
    common = BrokerConfig(broker_id=0, data_dir="-").common
    return SimSettings(
        session_ttl=session_ttl or d["session_ttl"],
        max_receive_bytes=common.max_receive_bytes,
        max_partitions_per_request=d["max_partitions_per_request"],
        max_control_partitions_per_request=d["max_control_partitions_per_request"],
        controlled_shutdown_timeout_ms=d["controlled_shutdown_timeout_ms"],
        controlled_shutdown_retry_backoff_ms=d["controlled_shutdown_retry_backoff_ms"],
        controller_retry_backoff_ms=d["controller_retry_backoff_ms"],
    )


def broker_ids(text: str) -> list[int]:
    """``"1-100,205"`` -> [1, ..., 100, 205]."""
    out: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    if not out or min(out) < 0 or len(set(out)) != len(out):
        raise ValueError(f"--brokers: want distinct ids >= 0, got {text!r}")
    return out


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Fleet:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.etcd = EtcdClient(args.etcd.split(","))
        self.keyspace = Keyspace(args.cluster_id)
        settings = default_settings(args.session_ttl)
        # One renewal process and stream for every broker's lease here (each lease its own).
        self.renewer = RenewalProcess(
            self.etcd, name="fleet-leases", batched=True, service="simulation"
        )
        # UpdateMetadata bodies decoded once, topic states built once, for every broker here.
        self.sharing = Sharing()
        self.brokers = [
            SimulatedBroker(
                b,
                args.host,
                self.etcd,
                self.keyspace,
                settings,
                args.confirm_in_etcd,
                self.renewer,
                self.sharing,
            )
            for b in broker_ids(args.brokers)
        ]
        self._fences: list[asyncio.Task] = []
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        await self.etcd.connect()
        await asyncio.to_thread(self.renewer.wait_ready)
        for broker in self.brokers:
            self._fences.append(asyncio.create_task(broker.fence.run()))
        await asyncio.gather(*(b.fence.loaded.wait() for b in self.brokers))
        for i in range(0, len(self.brokers), START_CONCURRENCY):
            await asyncio.gather(*(b.start() for b in self.brokers[i : i + START_CONCURRENCY]))

    def answer(self, command: dict) -> dict:
        cmd = command.get("cmd")
        if cmd == "stats":
            stats = [b.stats() for b in self.brokers]
            shared = {
                "decodes": [self.sharing.decodes.hits, self.sharing.decodes.misses],
                "topic_states": [self.sharing.updates.hits, self.sharing.updates.misses],
                "requests": [
                    self.sharing.updates.request_hits,
                    self.sharing.updates.request_misses,
                ],
                "heap": [self.sharing.heap.settles, self.sharing.heap.thaws],
            }
            return {"stats": stats, "rss_kb": rss_kb(), "at": time.time(), "shared": shared}
        if cmd == "watch":
            # One watch for the process: its count is shared by brokers holding the same states.
            watch = Watch(
                int(command["leader"]),
                (TopicPartition(t, int(p)) for t, p in command["partitions"]),
            )
            for b in self.brokers:
                b.watch(watch)
            return {"watching": len(watch.partitions)}
        return {"error": f"unknown command {cmd!r}"}

    async def commands(self) -> None:
        """Answer stdin's commands until ``shutdown``, end of input or SIGTERM. Lines are read
        on a daemon thread: a blocked read must not keep the process from exiting."""
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str] = asyncio.Queue()

        def read() -> None:
            for line in sys.stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, "")

        threading.Thread(target=read, name="commands", daemon=True).start()
        while not self._stopping.is_set():
            line = await lines.get()
            if not line:
                break
            command = json.loads(line)
            if command.get("cmd") == "shutdown":
                break
            print(json.dumps(self.answer(command)), flush=True)
        self._stopping.set()

    async def stop(self) -> None:
        """Controlled shutdown of every broker here, then revoke the sessions."""
        results = await asyncio.gather(*(b.controlled_shutdown() for b in self.brokers))
        print(json.dumps({"shutdown": all(results), "at": time.time()}), flush=True)
        await asyncio.gather(*(b.stop() for b in self.brokers))
        await asyncio.to_thread(self.renewer.stop)
        for task in self._fences:
            task.cancel()
        await self.etcd.close()


async def run(args: argparse.Namespace) -> None:
    fleet = Fleet(args)
    heap = fleet.sharing.heap
    heap.enabled = True  # a process-wide collector setting: only in the process's main
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, fleet._stopping.set)
    await fleet.start()
    heap.settle()  # the brokers started live as long as the process

    async def maintain() -> None:  # as the agent's checkpoint task does
        while True:
            await asyncio.sleep(MAINTAIN_S)
            heap.maintain()

    ports = {b.broker_id: b.port for b in fleet.brokers}
    print(json.dumps({"ready": ports, "rss_kb": rss_kb()}), flush=True)
    reader = asyncio.create_task(fleet.commands())
    maintainer = asyncio.create_task(maintain())
    await fleet._stopping.wait()
    await fleet.stop()
    reader.cancel()
    maintainer.cancel()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m services.broker_agent.simulation")
    p.add_argument("--etcd", required=True, help="etcd endpoints, comma-separated")
    p.add_argument("--cluster-id", default="leasehold")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--brokers", required=True, help="broker ids, e.g. 1-100,205")
    p.add_argument("--session-ttl", type=int, default=None, help="default: the agent's")
    p.add_argument(
        "--confirm-in-etcd",
        action="store_true",
        help="confirm every leader change and deletion in etcd, as a broker without TLS does "
        "(default: as a broker with TLS, which checks only the controller epoch in etcd)",
    )
    return p.parse_args(argv)


# How often the heap freezer is asked whether its hourly thaw is due.
MAINTAIN_S = 60.0


def main(argv: Sequence[str] | None = None) -> int:
    # The interpreter's defaults, as the agent's (its thread switch interval included): the
    # leases are renewed by a process of their own (``RenewalProcess``), which no GIL here
    # delays.
    logs.configure("simulated-brokers", "warning")  # JSON lines with times, as the services
    asyncio.run(run(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
