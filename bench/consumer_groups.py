"""Consumer groups: rebalance time on a join and on a member crash, and the offset commit rate.

A cluster of 1 controller, 3 broker agents and admin, at the brokers' default group settings
(session timeout 45 s, heartbeat interval 5 s), gets one topic of ``partitions`` partitions,
RF 3. ``members`` SDK ``GroupConsumer``s in this process (sharing one metadata cache) join one
group and settle; then, timed from the event with the coordinator's ``DescribeGroups`` polled
every 50 ms:

- **join**: one more member joins; until the group is STABLE again (every member at the new
  assignment epoch, every partition owned by its target member);
- **crash**: one member stops heartbeating without leaving (its process "dies"); from the fault
  until the coordinator removes it (the group epoch moves: detection, bounded below by the
  session timeout) and until the group is STABLE again; also from detection to STABLE.

The baseline is one heartbeat round trip of a settled member (what the protocol costs per
step); a rebalance takes at least a heartbeat interval, as members learn their new target on
their next heartbeat. The commit rows are ``OffsetCommit`` of one partition by a member
(acks=all on ``__consumer_offsets``, RF 3), 1 and 16 in flight.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from bench.framework import BenchSuite, Column, Result, Row, RunContext, closed_loop
from bench.scenario import Scenario
from leasehold.client import AdminClient, ClusterMetadata, Committed, GroupClient, GroupConsumer
from leasehold.common.v1 import common_pb2

TOPIC = "group-bench"
GROUP = "bench-group"
POLL_S = 0.05


@dataclass(frozen=True)
class Knobs:
    members: int
    partitions: int
    commit_s: float

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        return cls(
            members=ctx.pick(100, 5),
            partitions=ctx.pick(1000, 20),
            commit_s=ctx.pick(5.0, 0.5),
        )


def stable(described, members: int) -> bool:
    return (
        described.error_code == common_pb2.ERROR_CODE_NONE
        and described.group_state == "STABLE"
        and len(described.members) == members
        and described.group_epoch == described.assignment_epoch
    )


async def until_stable(groups: GroupClient, members: int, timeout_s: float) -> float:
    """Seconds until the group is STABLE with ``members`` members."""
    started = time.monotonic()
    while not stable(await groups.describe(GROUP), members):
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(f"the group did not settle with {members} members")
        await asyncio.sleep(POLL_S)
    return time.monotonic() - started


async def until_epoch_moves(groups: GroupClient, epoch: int, timeout_s: float) -> float:
    started = time.monotonic()
    while (await groups.describe(GROUP)).group_epoch <= epoch:
        if time.monotonic() - started > timeout_s:
            raise TimeoutError("the coordinator never removed the member")
        await asyncio.sleep(POLL_S)
    return time.monotonic() - started


async def heartbeat_rtt(member: GroupConsumer, count: int) -> float:
    """Median ms of ``count`` heartbeats of a settled member (nothing changes)."""
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        await member.groups.heartbeat(member._request(member.member_epoch))
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return samples[len(samples) // 2]


async def run(ctx: RunContext) -> list[Result]:
    k = Knobs.of(ctx)
    async with Scenario(controllers=1, brokers=3, admin=True) as sc:
        await sc.start_services()
        address = sc.cluster.admin_address
        async with AdminClient(address, timeout=60) as admin:
            created = await admin.create_topic(TOPIC, k.partitions, 3, timeout_ms=60_000)
            if created.error_code != common_pb2.ERROR_CODE_NONE:
                raise RuntimeError(f"cannot create {TOPIC}: {created.error_message}")
        await sc.settle()
        metadata = ClusterMetadata(address)
        groups = GroupClient(metadata)

        def member(i: int) -> GroupConsumer:
            return GroupConsumer(GROUP, [TOPIC], metadata=metadata, client_id=f"m{i}",
                                 enable_auto_commit=False)  # fmt: skip

        members = [member(i) for i in range(k.members)]
        try:
            for m in members:
                await m.start()
            settle_s = await until_stable(groups, k.members, 600)
            rtt_ms = await heartbeat_rtt(members[0], 20)

            joiner = member(k.members)
            started = time.monotonic()
            await joiner.start()
            members.append(joiner)
            await until_stable(groups, k.members + 1, 600)
            join_s = time.monotonic() - started

            victim = members.pop(len(members) // 2)
            epoch = (await groups.describe(GROUP)).group_epoch
            started = time.monotonic()
            await victim.close(leave=False)  # the fault: heartbeats stop, nothing is said
            detect_s = await until_epoch_moves(groups, epoch, 600)
            detected = time.monotonic()
            await until_stable(groups, k.members, 600)
            crash_s = time.monotonic() - started
            after_detect_s = time.monotonic() - detected

            committer = members[0]
            owned = sorted(committer.assignment())

            async def commit(worker: int) -> int:
                tp = owned[worker % len(owned)]
                await groups.commit(
                    GROUP, {tp: Committed(worker)}, committer.member_id, committer.member_epoch
                )
                return 1

            timing = {"duration_s": k.commit_s, "warmup_s": k.commit_s / 5}
            commits = {n: await closed_loop(commit, concurrency=n, **timing) for n in (1, 16)}
        finally:
            for m in members:
                await m.close()
            await metadata.close()
        losses = sc.lease_losses()
    size = f"{k.members} members x {k.partitions} partitions"
    rebalance = Result(
        f"consumer group rebalance, {size}, broker defaults (session 45 s, heartbeat 5 s)",
        (Column("ms", "ms", ",.1f"),),
        (
            Row("heartbeat round trip, settled member (median)", {"ms": rtt_ms}),
            Row("first settle, all members joining at once", {"ms": settle_s * 1000}),
            Row("join of one member -> STABLE", {"ms": join_s * 1000}),
            Row("member crash -> removed (detection)", {"ms": detect_s * 1000}),
            Row("member crash -> STABLE (from the fault)", {"ms": crash_s * 1000}),
            Row("member removed -> STABLE (from detection)", {"ms": after_detect_s * 1000}),
        ),
        baseline="heartbeat round trip, settled member (median)",
        ratio_of="ms",
        notes=(
            "STABLE: DescribeGroups on the coordinator shows every member at the new assignment "
            f"epoch, polled every {POLL_S * 1000:.0f} ms; members run in this one process; "
            f"etcd sessions lost: {losses}",
        ),
    )
    rate = Result(
        "OffsetCommit, one partition per call, acks=all on __consumer_offsets (RF 3)",
        (
            Column("ops_per_s", "commits/s"),
            Column("p50_ms", "p50 ms", ",.2f"),
            Column("p99_ms", "p99 ms", ",.2f"),
        ),  # fmt: skip
        tuple(Row(f"{n} in flight", load.figures()) for n, load in commits.items()),
        baseline="1 in flight",
        ratio_of="ops_per_s",
        notes=(f"{k.commit_s:g}s per row after a {k.commit_s / 5:g}s warm-up",),
    )
    return [rebalance, rate]


SUITE = BenchSuite(
    "consumer_groups",
    "group rebalance on join and crash, offset commit rate",
    run,
    time_limit_s=1800,
)
