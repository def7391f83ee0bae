"""Metadata answers are kept per topic until an update touches the topic or the live brokers."""

from __future__ import annotations

from services.broker_agent.convert import MetadataTopicPbCache, metadata_pb
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import Code, Endpoint, MetadataPartition, UpdateMetadata

B1, B2, B3 = (Endpoint(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3))


def mp(topic, p, leader, epoch=1, replicas=(1, 2, 3)):
    return MetadataPartition(topic, p, leader, epoch, replicas, replicas, 1, 1, "tid")


def request(partitions, brokers=(B1, B2, B3), deleted=()):
    return UpdateMetadata(
        controller_id=1,
        controller_epoch=1,
        broker_epoch=-1,
        partitions=tuple(partitions),
        live_brokers=tuple(brokers),
        deleted_topics=tuple(deleted),
    )


def leaders(cache: MetadataCache, topic: str) -> list[tuple[int, Code]]:
    (view,) = cache.describe([topic]).topics
    return [(p.leader, p.error) for p in view.partitions]


def test_a_topic_view_is_reused_until_the_topic_changes():
    cache = MetadataCache()
    cache.update(request([mp("a", 0, 1), mp("a", 1, 1), mp("b", 0, 1)]))
    a, b = cache.describe(["a", "b"]).topics
    cache.update(request([mp("a", 1, 2, epoch=2)]))  # touches a only
    a2, b2 = cache.describe(["a", "b"]).topics
    assert b2 is b
    assert a2 is not a
    assert [(p.partition, p.leader, p.leader_epoch) for p in a2.partitions] == [
        (0, 1, 1),
        (1, 2, 2),
    ]


def test_live_broker_changes_rebuild_every_view():
    cache = MetadataCache()
    cache.update(request([mp("a", 0, 1), mp("a", 1, 2)]))
    before = cache.describe(["a"]).topics[0]
    cache.update(request([], brokers=(B3, B2, B1)))  # same ids, other order: kept
    assert cache.describe(["a"]).topics[0] is before
    cache.update(request([], brokers=(B2, B3)))  # broker 1 gone
    assert leaders(cache, "a") == [(-1, Code.LEADER_NOT_AVAILABLE), (2, Code.NONE)]
    assert cache.describe(["a"]).topics[0].partitions[1].offline_replicas == (1,)
    cache.update(request([], brokers=(B1, B2, B3)))  # back
    assert leaders(cache, "a") == [(1, Code.NONE), (2, Code.NONE)]


def test_deleted_topics_and_partitions_leave_the_answer():
    cache = MetadataCache()
    cache.update(request([mp("a", 0, 1), mp("a", 1, 1), mp("b", 0, 1)]))
    cache.describe(["a", "b"])
    cache.update(request([mp("a", 1, -2)], deleted=["b"]))  # -2: partition being deleted
    a, b = cache.describe(["a", "b"]).topics
    assert [p.partition for p in a.partitions] == [0]
    assert (b.name, b.error, b.partitions) == ("b", Code.UNKNOWN_TOPIC_OR_PARTITION, ())


def test_protobuf_topics_are_rebuilt_only_for_new_views():
    cache = MetadataCache()
    pbs = MetadataTopicPbCache()
    cache.update(request([mp("a", 0, 1), mp("b", 0, 2)]))
    first = pbs.response(cache.describe(["a", "b", "zz"]), "cluster")
    assert first == metadata_pb(cache.describe(["a", "b", "zz"]), "cluster")
    a_pb, b_pb = pbs.topic_pb(cache.describe(["a"]).topics[0]), None
    cache.update(request([mp("b", 0, 3, epoch=2)]))
    b_view = cache.describe(["b"]).topics[0]
    b_pb = pbs.topic_pb(b_view)
    assert pbs.topic_pb(cache.describe(["a"]).topics[0]) is a_pb
    assert [(p.leader, p.leader_epoch) for p in b_pb.partitions] == [(3, 2)]
    second = pbs.response(cache.describe(["a", "b", "zz"]), "cluster")
    assert [t.name for t in second.topics] == ["a", "b", "zz"]
    assert second.topics[2].error_code == int(Code.UNKNOWN_TOPIC_OR_PARTITION)
    assert second.topics[1].partitions[0].leader == 3
    assert second == metadata_pb(cache.describe(["a", "b", "zz"]), "cluster")
