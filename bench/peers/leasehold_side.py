"""The Leasehold side of each side-by-side scenario, on the scenario suites' own machinery.

The cluster is :class:`bench.scenario.Scenario` (etcd, 2 controllers, 3 broker agents, admin,
real processes) at the services' default session TTL (``Sizing.ttl``; :func:`default_ttl`
reads it from their configuration classes for the output). The figures reuse the suites' own
steps and witnesses: topic creation is ``bench.topic_creation.create``, a controller failover
``bench.controller_failover.fail_over``, brokers are watched with ``bench.observe.poll_topics``
(each broker's own Metadata answer) and etcd watches. Keys of the returned figures match the
Kafka side (``bench/peers/kafka/side.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
from dataclasses import dataclass

from bench import topic_creation
from bench.controller_failover import fail_over
from bench.framework import percentile
from bench.observe import poll_topics, warm_metadata, watch_until
from bench.scenario import Scenario, Sizing, count_online
from leasehold.client import AdminClient, Producer
from leasehold.common.v1 import common_pb2
from services.broker_agent.config import BrokerConfig
from services.controller.config import ControllerConfig

# A restarted node loads 10,000 logs before it listens: minutes on a loaded 2-core machine.
RESTART_TIMEOUT_S = 600.0


def _default(cls: type, name: str) -> int:
    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


def default_ttl() -> int:
    """The session TTL (seconds) controllers and broker agents run with when not told."""
    controller, broker = (
        _default(ControllerConfig, "session_ttl"),
        _default(BrokerConfig, "session_ttl"),
    )
    if controller != broker:
        raise RuntimeError(f"controller and broker default TTLs differ: {controller} / {broker}")
    return controller


def default_sizing(partitions: int) -> Sizing:
    """The scenario suites' settle rules and log placement for this size; its sessions run at
    the services' default TTL, which the output reports from their configuration classes."""
    sizing = Sizing.of(partitions)
    if sizing.ttl != default_ttl():
        raise RuntimeError(f"scenario TTL {sizing.ttl} s is not the default {default_ttl()} s")
    return sizing


def ms(later: float, earlier: float) -> float:
    return (later - earlier) * 1000


@dataclass
class LeaseholdSide:
    sc: Scenario
    admin: AdminClient
    topics: dict[str, int]

    def detection_settings(self) -> dict[str, str]:
        return {"session TTL (controllers, broker agents)": f"{self.sc.sizing.ttl} s"}

    # --- topic creation -------------------------------------------------------------------------

    async def create(self, names: list[str], per_topic: int) -> dict:
        """One CreateTopics call through admin (``bench.topic_creation.create``)."""
        values = await topic_creation.create(self.sc, self.admin, names, per_topic)
        self.topics.update(dict.fromkeys(names, per_topic))
        count = len(names) * per_topic
        return {
            "answer_ms": values["answer_ms"],
            "brokers_ms": values["brokers_ms"],
            "partitions_per_s": count / values["brokers_ms"] * 1000,
        }

    async def delete(self, names: list[str]) -> None:
        response = await self.admin.delete_topics(names, timeout_ms=120_000)
        for result in response.topics:
            if result.error_code != common_pb2.ERROR_CODE_NONE:
                raise RuntimeError(f"DeleteTopics {result.name}: {result.error_message}")
        for name in names:
            self.topics.pop(name, None)
        await self.settled(timeout=300)

    async def settled(self, timeout: float = 900.0) -> None:
        """Exactly the scenario's partitions, all online with a full ISR, and a settled cluster."""
        sc = self.sc
        expected = sum(self.topics.values())
        deadline = time.monotonic() + timeout
        while True:
            states, online = await count_online(sc.client, sc.keyspace, set(sc.cluster.brokers), 3)
            if states == expected and online == expected:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{online} of {expected} online, {states} states")
            await asyncio.sleep(0.5)
        await sc.settle(timeout=timeout)

    # --- produce --------------------------------------------------------------------------------

    async def produce(self, topic: str, payload: bytes, window: int, duration: float) -> dict:
        """Records/s and MB/s with ``window`` records outstanding through the SDK Producer at
        its default batching; then single-record sends (send and wait)."""
        address = self.sc.cluster.admin_address
        async with Producer(admin=address, acks="all") as p:
            await p.send_and_wait(topic, payload)
            slots = asyncio.Semaphore(window)
            failed: list[BaseException] = []

            def done(future: asyncio.Future) -> None:
                slots.release()
                if not future.cancelled() and future.exception() is not None:
                    failed.append(future.exception())

            sent = 0
            started = time.perf_counter()
            while time.perf_counter() - started < duration:
                await slots.acquire()
                (await p.send(topic, payload)).add_done_callback(done)
                sent += 1
            await p.flush()
            elapsed = time.perf_counter() - started
            latencies = []
            begun = time.perf_counter()
            while time.perf_counter() - begun < duration:
                t0 = time.perf_counter()
                await p.send_and_wait(topic, payload)
                latencies.append((time.perf_counter() - t0) * 1000)
        if failed:
            raise RuntimeError(f"Leasehold produce failed: {failed[:3]}")
        return {
            "records_per_s": sent / elapsed,
            "mb_per_s": sent * len(payload) / elapsed / 1e6,
            "p50_ms": percentile(latencies, 50),
            "p99_ms": percentile(latencies, 99),
        }

    # --- controller failover --------------------------------------------------------------------

    async def controller_failover(self, sig: int) -> dict:
        """``fail_over`` (old election key deleted -> every broker on the new epoch), both clocks;
        the old controller comes back as a standby and the cluster settles."""
        result = await fail_over(self.sc, sig)
        told = max(result.brokers.values())
        old = next(c for c in self.sc.cluster.controllers if c != result.new_controller)
        await self.sc.restart_controller(old)
        await self.sc.settle()
        return {
            "fault_ms": ms(told, result.signalled),
            "detection_ms": ms(told, result.lease_gone),
            "detected_after_ms": ms(result.lease_gone, result.signalled),
            "first_broker_ms": ms(min(result.brokers.values()), result.signalled),
        }

    # --- brokers --------------------------------------------------------------------------------

    async def controlled_shutdown(self, broker: int) -> dict:
        """SIGTERM a broker agent (it asks the controller for a controlled shutdown, then
        exits); until the others show it leads nothing, and until its process exits."""
        proc = self.sc.cluster.brokers[broker]
        survivors = self.sc.broker_addresses(exclude=(broker,))
        await warm_metadata(survivors)

        async def exit_time() -> float:
            await asyncio.to_thread(proc.popen.wait, 300)
            return time.time()

        signalled = time.time()
        proc.signal(signal.SIGTERM)
        exited = asyncio.create_task(exit_time())
        told = await poll_topics(
            survivors, self.topics, lambda p: p.leader not in (broker, -1), interval=0.05,
            timeout=300,
        )  # fmt: skip
        return {
            "fault_ms": ms(max(told.values()), signalled),
            "exit_ms": ms(await exited, signalled),
        }

    async def restore_broker(self, broker: int) -> None:
        """Start it again, wait for full ISRs, elect preferred leaders, wait until shown."""
        sc = self.sc
        proc = sc.cluster.brokers[broker]
        proc.start()
        await asyncio.to_thread(proc.wait_ready, RESTART_TIMEOUT_S)
        await sc.wait_registered(timeout=RESTART_TIMEOUT_S)
        await self.settled()
        answer = await self.admin.elect_leaders(
            common_pb2.ELECTION_TYPE_PREFERRED, [], timeout_ms=120_000
        )
        if not answer.completed:
            raise RuntimeError("preferred leader election did not complete")
        await poll_topics(
            sc.broker_addresses(), self.topics, lambda p: p.leader == p.replicas[0],
            interval=0.5, timeout=300,
        )  # fmt: skip
        await sc.settle()

    async def broker_kill(self, broker: int) -> dict:
        """SIGKILL a broker agent; until the others show every partition led by a live broker.
        Detection: its registration key deleted (lease expiry), seen by an etcd watch."""
        sc = self.sc
        survivors = sc.broker_addresses(exclude=(broker,))
        _, revision = await sc.client.get_with_revision(sc.keyspace.broker(broker))
        gone = asyncio.create_task(
            watch_until(sc.client, sc.keyspace.broker(broker), start_revision=revision + 1,
                        done=lambda e: e.deleted)
        )  # fmt: skip
        await warm_metadata(survivors)
        try:
            killed = time.time()
            sc.cluster.brokers[broker].kill()
            expired = await asyncio.wait_for(gone, timeout=sc.sizing.ttl + 30)
            told = await poll_topics(
                survivors, self.topics, lambda p: p.leader not in (broker, -1), interval=0.05,
                timeout=300,
            )  # fmt: skip
        finally:
            gone.cancel()
        return {
            "fault_ms": ms(max(told.values()), killed),
            "detection_ms": ms(max(told.values()), expired),
            "detected_after_ms": ms(expired, killed),
        }
