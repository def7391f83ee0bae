"""The Leasehold side's sequence (``bench.peers.scenarios``), recorded into a ``SideRun``."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from bench.peers import scenarios as S
from bench.peers.leasehold_side import LeaseholdSide, default_sizing
from bench.scenario import Layout, Scenario
from leasehold.client import AdminClient
from leasehold.common.v1 import common_pb2

if TYPE_CHECKING:
    from bench.peers.run import SideRun

CONTROLLERS = 2


def describe(sc: Scenario) -> str:
    return (
        f"Leasehold: 1 etcd, {sc.controllers} controllers (one active) and {sc.brokers} broker "
        f"agents; {sc.sizing.describe()}; services at log level warning (bench/scenario.py)"
    )


async def leasehold_side(side: SideRun, knobs: S.Knobs) -> None:
    if knobs.small:
        sizing = default_sizing(knobs.partitions)
        async with Scenario(controllers=CONTROLLERS, brokers=3, admin=True, sizing=sizing) as sc:
            await sc.start_services()
            await sc.settle()
            async with AdminClient(sc.cluster.admin_address, timeout=120) as admin:
                ls = LeaseholdSide(sc, admin, {})
                side.settings.update(ls.detection_settings())
                side.notes.append(describe(sc))
                await scenarios(side, ls, knobs)
                side.notes.append(f"etcd sessions lost during the run: {sc.lease_losses()}")
    if knobs.large:
        await large(side)


async def scenarios(side: SideRun, ls: LeaseholdSide, knobs: S.Knobs) -> None:
    side.loaded("create_1")
    side.record("create_1", await ls.create(knobs.names("create", 1), knobs.per_topic))
    await ls.delete(knobs.names("create", 1))
    side.loaded("create_10")
    side.record("create_10", await ls.create(knobs.names("bench", knobs.topics), knobs.per_topic))
    await ls.settled()
    created = await ls.admin.create_topic(
        S.PRODUCE_TOPIC, S.PRODUCE_PARTITIONS, 3, configs={"min.insync.replicas": S.MIN_ISR},
        timeout_ms=60_000,
    )  # fmt: skip
    if created.error_code != common_pb2.ERROR_CODE_NONE:
        raise RuntimeError(f"cannot create {S.PRODUCE_TOPIC}: {created.error_message}")
    ls.topics[S.PRODUCE_TOPIC] = S.PRODUCE_PARTITIONS
    await ls.settled()
    side.loaded("produce")
    side.record(
        "produce", await ls.produce(S.PRODUCE_TOPIC, S.RECORD, knobs.window, knobs.produce_s)
    )
    for key, sig in (
        ("controller_sigterm", signal.SIGTERM),
        ("controller_sigkill", signal.SIGKILL),
    ):
        side.loaded(key)
        side.record(key, await ls.controller_failover(sig))
    side.loaded("controlled_shutdown")
    side.record("controlled_shutdown", await ls.controlled_shutdown(S.BROKER))
    await ls.restore_broker(S.BROKER)
    side.loaded("broker_sigkill")
    side.record("broker_sigkill", await ls.broker_kill(S.BROKER))


async def large(side: SideRun) -> None:
    """100,000 partitions (tmpfs logs, as the suites place them from 50,000): the topics are
    written straight into etcd by ``Scenario.bring_up`` (the admin contract), leaders rotating."""
    n = S.LARGE_PARTITIONS
    layout = Layout(n, 1_000, brokers=(1, 2, 3))
    sizing = default_sizing(n)
    async with Scenario(controllers=CONTROLLERS, brokers=3, admin=True, sizing=sizing) as sc:
        setup = await sc.bring_up(layout, timeout=3600)
        async with AdminClient(sc.cluster.admin_address, timeout=120) as admin:
            topics = {name: len(parts) for name, parts in layout.topics().items()}
            ls = LeaseholdSide(sc, admin, topics)
            side.notes.append(f"{describe(sc)} (100,000 partitions; {setup})")
            side.loaded("large_controller_sigkill")
            side.record("large_controller_sigkill", await ls.controller_failover(signal.SIGKILL))
            side.loaded("large_broker_sigkill")
            side.record("large_broker_sigkill", await ls.broker_kill(S.BROKER))
