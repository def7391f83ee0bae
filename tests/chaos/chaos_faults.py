"""Applying a fault schedule to a LocalCluster: resolve the role, hurt the process, heal it.

Roles are resolved from etcd (the store of record) at the moment a fault starts: the active
controller is the one named by ``/controller_epoch``; a partition's leader comes from its state
key and its followers from the topic's assignment. Every action is reported through ``say`` with
the run's clock, so the printed run is the replay log.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from chaos_schedule import Fault, FaultKind

from leasehold.etcd import EtcdClient, Keyspace
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import LocalCluster, Proc


@dataclass(frozen=True)
class Applied:
    """What one fault did, with run-clock times."""

    fault: Fault
    victim: str
    started_s: float
    healed_s: float


class Faulter:
    def __init__(
        self,
        cluster: LocalCluster,
        etcd: EtcdClient,
        topic: str,
        clock: Callable[[], float],
        say: Callable[[str], None],
    ) -> None:
        self.cluster = cluster
        self.etcd = etcd
        self.ks = Keyspace(cluster.spec.cluster_id)
        self.topic = topic
        self.clock = clock
        self.say = say
        self.applied: list[Applied] = []
        self.etcd_churn: list[str] = []  # leader changes across etcd faults (none expected)

    # ----------------------------------------------------------------------------- roles

    async def active_controller(self) -> int:
        kv = await self.etcd.get(self.ks.controller_epoch)
        if kv is None:
            raise RuntimeError("no controller epoch in etcd")
        return metadata_pb2.ControllerEpoch.FromString(kv.value).controller_id

    async def partition_roles(self, partition: int) -> tuple[int, list[int]]:
        """(leader, replicas) of ``partition`` as etcd holds them now; leader -1 if none."""
        state = await self.etcd.get(self.ks.partition_state(self.topic, partition))
        leader = metadata_pb2.PartitionState.FromString(state.value).leader if state else -1
        topic = await self.etcd.get(self.ks.topic(self.topic))
        assignment = metadata_pb2.TopicAssignment.FromString(topic.value)
        return leader, list(assignment.partitions[partition].replicas)

    async def leaderships(self) -> dict[int, tuple[int, int]]:
        """(leader, leader epoch) of every partition of the topic, as etcd holds them now."""
        kvs, _ = await self.etcd.range_prefix(self.ks.partition_states_prefix(self.topic))
        out = {}
        for kv in kvs:
            partition = int(kv.key.rsplit(b"/", 2)[-2])
            state = metadata_pb2.PartitionState.FromString(kv.value)
            out[partition] = (state.leader, state.leader_epoch)
        return out

    async def _victim(self, fault: Fault) -> tuple[str, Proc | None]:
        if fault.kind.targets_etcd:
            return "etcd", None
        if fault.kind.targets_controller:
            cid = await self.active_controller()
            return f"controller-{cid}", self.cluster.controllers[cid]
        leader, replicas = await self.partition_roles(fault.partition)
        if fault.kind.targets_follower:
            followers = [r for r in replicas if r != leader]
            broker = followers[fault.pick % len(followers)]
        elif leader >= 0:
            broker = leader
        else:  # offline partition: hit one of its replicas instead, and say so
            broker = replicas[fault.pick % len(replicas)]
            self.say(f"{self._t()}  partition {fault.partition} has no leader; hitting a replica")
        return f"broker-{broker}", self.cluster.brokers[broker]

    # ------------------------------------------------------------------------------ faults

    def _t(self) -> str:
        return f"t=+{self.clock():6.1f}s"

    async def apply(self, fault: Fault) -> Applied:
        name, proc = await self._victim(fault)
        pid = f" (pid {proc.pid})" if proc is not None else f" (pid {self.cluster.etcd.pid})"
        started = self.clock()
        self.say(f"{self._t()}  fault {fault.describe()} -> {name}{pid}")
        if proc is None:
            what = await self._etcd_fault(fault)
        elif fault.kind.is_kill:
            proc.kill()
            await asyncio.sleep(fault.duration_s)
            await self._restart(name, proc)
            what = f"{name} restarted (pid {proc.pid})"
        else:
            proc.pause()
            await asyncio.sleep(fault.duration_s)
            proc.resume()
            what = f"{name} resumed (SIGCONT)"
        applied = Applied(fault, name, started, self.clock())
        self.applied.append(applied)
        self.say(f"{self._t()}  healed #{fault.index}: {what}")
        return applied

    async def _etcd_fault(self, fault: Fault) -> str:
        """Kill and restart, or pause and resume, etcd; then, a grace later, compare every
        partition's leader and leader epoch with before the fault (``etcd_churn``)."""
        etcd = self.cluster.etcd
        before = await self.leaderships()
        if fault.kind is FaultKind.PAUSE_ETCD:
            etcd.pause()
            await asyncio.sleep(fault.duration_s)
            etcd.resume()
            what = "etcd resumed (SIGCONT)"
        else:
            etcd.kill()
            await asyncio.sleep(fault.duration_s)
            await asyncio.to_thread(etcd.start)
            what = f"etcd started again on its data dir (pid {etcd.pid})"
        # The controller holds brokers' registrations for a grace of TTL + 1 s after etcd is
        # back; a leader change for the outage would be committed by then.
        await asyncio.sleep(self.cluster.spec.session_ttl + 2.0)
        after = await self.leaderships()
        changed = sorted(p for p in before if after.get(p) != before[p])
        self.etcd_churn += [
            f"#{fault.index} {fault.kind.value}: p{p} {before[p]} -> {after.get(p)}"
            for p in changed
        ]
        return f"{what}; partitions with a new leader or leader epoch: {changed or 'none'}"

    async def _restart(self, name: str, proc: Proc) -> None:
        """Start a killed process again; a broker only once its old registration has expired
        (a live registration makes the agent refuse the id)."""
        if name.startswith("broker-"):
            key = self.ks.broker(int(name.removeprefix("broker-")))
            deadline = time.monotonic() + self.cluster.spec.session_ttl + 20
            while await self.etcd.get(key) is not None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name}'s registration did not expire")
                await asyncio.sleep(0.2)
        proc.start()
        await asyncio.to_thread(proc.wait_ready, 30.0)

    def heal_everything(self) -> None:
        """Safety net after an error: resume paused processes, start etcd if it is down."""
        for proc in self.cluster.processes():
            proc.resume()
        self.cluster.etcd.resume()
        if self.cluster.etcd.pid is None:
            self.cluster.etcd.start()
