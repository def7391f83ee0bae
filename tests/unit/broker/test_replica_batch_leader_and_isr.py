"""A big LeaderAndIsr: durable before the answer, batched, and the event loop keeps running."""

from __future__ import annotations

import asyncio
import errno
import itertools

import pytest

from leasehold.etcd import Keyspace
from services.broker_agent.log import LogManager, Record, checkpoint
from services.broker_agent.log.epoch_journal import JOURNAL, decode_records
from services.broker_agent.log.manager import PARTITION_METADATA
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import Code, LeaderAndIsr, LeaderAndIsrPartition, TopicPartition
from services.broker_agent.partition import PartitionError
from services.broker_agent.replica_manager import YIELD_EVERY, ReplicaManager
from services.broker_agent.topic_configs import ConfigStore

COUNT = 600


@pytest.fixture
def manager(tmp_path):
    ticks = itertools.count()
    logs = LogManager(tmp_path)
    configs = ConfigStore(Keyspace("test"), 1, 1, 1 << 20)
    replicas = ReplicaManager(1, logs, MetadataCache(), configs, lambda: next(ticks), 30_000)
    replicas.broker_epoch = 7
    yield replicas
    logs.close()


def request(leader: int, epoch: int, count: int = COUNT) -> LeaderAndIsr:
    return LeaderAndIsr(
        controller_id=100,
        controller_epoch=1,
        broker_epoch=7,
        partitions=tuple(
            LeaderAndIsrPartition(
                topic=f"t{i % 3}",
                partition=i,
                leader=leader,
                leader_epoch=epoch,
                isr=(1, 2),
                replicas=(1, 2),
                topic_id=f"id-t{i % 3}",
            )
            for i in range(count)
        ),
    )


def on_disk(manager: ReplicaManager, tp: TopicPartition) -> tuple[list, str | None]:
    """What a restart would read: the epoch journal's entries and the topic-id file."""
    data_dir = manager.log_manager.data_dir
    journal = decode_records((data_dir / JOURNAL).read_bytes())[0]
    topic_id = checkpoint.read_topic_id(
        data_dir / f"{tp.topic}-{tp.partition}" / PARTITION_METADATA
    )
    return journal.get((tp.topic, tp.partition), []), topic_id


async def test_new_leaders_are_durable_when_answered_and_the_loop_ran(manager):
    turns = 0

    async def other_task() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(other_task())
    await asyncio.sleep(0)
    turns = 0
    result = await manager.become_leader_or_follower(request(leader=1, epoch=1))
    task.cancel()
    assert result.error == Code.NONE
    assert set(result.errors_by_partition().values()) == {Code.NONE}
    assert len(result.partition_errors) == COUNT
    # Yielded while classifying and while changing roles, besides the thread hops.
    assert turns >= 2 * (COUNT // YIELD_EVERY)
    for i in (0, 1, COUNT - 1):
        tp = TopicPartition(f"t{i % 3}", i)
        assert on_disk(manager, tp) == ([(1, 0)], f"id-t{i % 3}")
        partition = manager.partition(tp)
        assert partition.is_leader and not partition.awaiting_sync


async def test_flips_write_the_new_epoch_and_stale_epochs_are_refused(manager):
    await manager.become_leader_or_follower(request(leader=1, epoch=1))
    tp = TopicPartition("t0", 0)
    manager.partition(tp).append_as_leader(
        [Record(b"v")], current_leader_epoch=1, required_acks=1, min_insync_replicas=1
    )
    result = await manager.become_leader_or_follower(request(leader=2, epoch=2))
    assert set(result.errors_by_partition().values()) == {Code.NONE}
    assert on_disk(manager, tp)[0] == [(1, 0)]  # a follower does not take the epoch itself
    assert not manager.partition(tp).is_leader
    result = await manager.become_leader_or_follower(request(leader=1, epoch=3))
    assert set(result.errors_by_partition().values()) == {Code.NONE}
    assert on_disk(manager, tp)[0] == [(1, 0), (3, 1)]
    assert on_disk(manager, TopicPartition("t1", 1))[0] == [(3, 0)]
    again = await manager.become_leader_or_follower(request(leader=1, epoch=3))
    assert set(again.errors_by_partition().values()) == {Code.STALE_CONTROLLER_EPOCH}


async def test_a_failed_write_answers_storage_error_and_the_replica_goes_offline(
    manager, monkeypatch
):
    await manager.become_leader_or_follower(request(leader=1, epoch=1, count=3))
    writer = manager.log_manager._writer
    real = writer.write_batch

    def failing(files, extra=()):
        failures = real([f for f in files if f.key != ("t1", 1)], extra)
        failures[("t1", 1)] = OSError(errno.EIO, "I/O error")
        return failures

    monkeypatch.setattr(writer, "write_batch", failing)
    result = await manager.become_leader_or_follower(request(leader=1, epoch=2, count=3))
    assert result.errors_by_partition() == {
        TopicPartition("t0", 0): Code.NONE,
        TopicPartition("t1", 1): Code.KAFKA_STORAGE_ERROR,
        TopicPartition("t2", 2): Code.NONE,
    }
    monkeypatch.setattr(writer, "write_batch", real)
    later = await manager.become_leader_or_follower(request(leader=1, epoch=3, count=3))
    assert later.errors_by_partition()[TopicPartition("t1", 1)] == Code.KAFKA_STORAGE_ERROR
    assert later.errors_by_partition()[TopicPartition("t0", 0)] == Code.NONE


async def test_a_fenced_request_changes_nothing(manager):
    stale = request(leader=1, epoch=1, count=2)
    manager.broker_epoch = 8
    result = await manager.become_leader_or_follower(stale)
    assert result.error == Code.STALE_BROKER_EPOCH
    assert manager.partitions == {}


def test_appends_wait_until_the_role_change_is_durable(tmp_path):
    logs = LogManager(tmp_path)
    replicas = ReplicaManager(
        1, logs, MetadataCache(), ConfigStore(Keyspace("t"), 1, 1, 1 << 20), lambda: 0, 30_000
    )
    partition = replicas._new_partition(TopicPartition("t", 0))
    state = request(leader=1, epoch=1, count=1).partitions[0]
    partition.make_leader(state, defer_sync=True)
    append = dict(current_leader_epoch=1, required_acks=1, min_insync_replicas=1)
    with pytest.raises(PartitionError) as refused:
        partition.append_as_leader([Record(b"v")], **append)
    assert refused.value.code == Code.NOT_LEADER_OR_FOLLOWER
    assert logs.sync_pending([("t", 0)]) == {}
    partition.sync_done()
    assert partition.append_as_leader([Record(b"v")], **append).first_offset == 0
    logs.close()
