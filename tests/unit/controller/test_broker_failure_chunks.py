"""A broker failure re-elects the dead broker's partitions in chunks (``ELECTION_CHUNK``): each
chunk is committed and its LeaderAndIsr and UpdateMetadata handed to gRPC before the next chunk
is even decided, per broker in Kafka's order; the replica step is cut between partitions, never
inside one."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest

from bench.controller_micro import RecordingChannels, failover, standby
from leasehold.broker.v1 import control_pb2
from leasehold.statechange import StateChangeRecord
from services.controller import events as ev
from services.controller.channels import _RESPONSES, LEADER_AND_ISR, UPDATE_METADATA, _Broker
from services.controller.core import PartitionReplica, TopicPartition
from services.controller.flows import brokers as broker_flows
from services.controller.flows.brokers import _by_partition_chunks
from services.controller.statelog import StateChangeLog

PARTITIONS = 5  # one topic, bench-0; broker 1 leads every partition
TPS = [TopicPartition("bench-0", p) for p in range(PARTITIONS)]
_DECODE = {
    LEADER_AND_ISR: control_pb2.LeaderAndIsrRequest,
    UPDATE_METADATA: control_pb2.UpdateMetadataRequest,
}


class _Seen(RecordingChannels):
    """Notes each serialised request: broker, kind, its partitions, and which partitions the
    controller had already re-elected (leader no longer broker 1) at that moment."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, str, tuple[int, ...], tuple[int, ...]]] = []
        self.elected = lambda: ()

    def _method(self, broker: _Broker, kind: str):
        def call(request, timeout=None):
            async def invoke():
                data = broker.serialize(request)
                partitions = tuple(
                    s.partition for s in _DECODE[kind].FromString(data).partition_states
                )
                self.seen.append((broker.info.id, kind, partitions, self.elected()))
                await asyncio.sleep(0)
                return _RESPONSES[kind]()

            return asyncio.get_running_loop().create_task(invoke())

        return call


async def test_each_chunk_is_sent_before_the_next_is_decided(monkeypatch) -> None:
    monkeypatch.setattr(broker_flows, "ELECTION_CHUNK", 2)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sc.log"
        log = StateChangeLog(str(path), controller_id=1)
        c = await standby(PARTITIONS, 1, log)
        c._channel_factory = _Seen
        await failover(c)
        channels = c.channels
        assert isinstance(channels, _Seen)
        await asyncio.sleep(0.05)
        lines_before = len(path.read_text().splitlines())
        channels.elected = lambda: tuple(
            tp.partition for tp in TPS if c.ctx.leader_and_isr(tp).leader != 1
        )
        channels.seen.clear()

        await c.handle(ev.BrokerChange(deregistered=(1,)))
        await asyncio.sleep(0.05)
        seen = channels.seen
        lines = path.read_text().splitlines()
        await c.deactivate("done")
        log.close()

    for b in (2, 3):
        mine = [(k, p) for x, k, p, _ in seen if x == b]
        assert mine == [
            (LEADER_AND_ISR, (0, 1)),
            (UPDATE_METADATA, (0, 1)),
            (LEADER_AND_ISR, (2, 3)),
            (UPDATE_METADATA, (2, 3)),
            (LEADER_AND_ISR, (4,)),
            (UPDATE_METADATA, (4,)),
            # Nothing from the replica step: every state it would send went out in this event.
        ]
        # The first chunk's requests left while the later partitions still had broker 1 as
        # their leader in the controller's context: not decided yet. (Later chunks leave when
        # the loop is free: here, with commits that never wait, possibly after the last.)
        assert [e for x, _, _, e in seen if x == b][:2] == [(0, 1), (0, 1)]

    records = [StateChangeRecord.from_json(line) for line in lines[lines_before:]]
    assert [(r.kind, r.partition, r.to_state or r.event) for r in records] == [
        ("broker", -1, "expired"),
        *(
            (kind, p, state)
            for chunk in ((0, 1), (2, 3), (4,))
            for kind, state in (("partition", "OfflinePartition"), ("partition", "OnlinePartition"))
            for p in chunk
        ),
        *(("replica", p, "OfflineReplica") for p in range(PARTITIONS)),
    ]


def _replicas(*pairs: tuple[int, int]) -> list[PartitionReplica]:
    return [PartitionReplica(TopicPartition("t", p), r) for p, r in pairs]


@pytest.mark.parametrize(
    "pairs, size, cuts",
    [
        ((), 2, []),
        (((0, 1),), 2, [1]),
        (((0, 1), (1, 1), (2, 1), (3, 1), (4, 1)), 2, [2, 2, 1]),
        (((0, 1), (1, 1), (2, 1)), 5, [3]),
        # Two dead brokers: a partition's two replicas stay in one chunk (one ISR write).
        (((0, 1), (0, 2), (1, 1), (1, 2), (2, 1)), 1, [2, 2, 1]),
        (((0, 1), (1, 1), (1, 2), (2, 1), (3, 1)), 2, [3, 2]),
        (((0, 1), (0, 2), (0, 3)), 1, [3]),
    ],
)
def test_replica_chunks_cut_between_partitions(pairs, size, cuts) -> None:
    replicas = _replicas(*pairs)
    chunks = _by_partition_chunks(replicas, size)
    assert [len(c) for c in chunks] == cuts
    assert [r for c in chunks for r in c] == replicas
