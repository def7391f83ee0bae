"""The metadata cache UpdateMetadata fills and clients' Metadata calls read."""

from __future__ import annotations

import random

import pytest

from leasehold.broker.v1 import control_pb2
from services.broker_agent import control_convert
from services.broker_agent.metadata_cache import (
    BLOCK_BITS,
    MetadataCache,
    PartitionView,
    TopicView,
    state_hash,
)
from services.broker_agent.model import (
    Code,
    Endpoint,
    MetadataPartition,
    TopicPartition,
    UpdateMetadata,
)

B1, B2, B3 = (Endpoint(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3))


def mp(topic, p, leader, epoch=1, replicas=(1, 2, 3), isr=None, tid="id-" + "x"):
    return MetadataPartition(
        topic, p, leader, epoch, tuple(isr or replicas), tuple(replicas), 1, 1, tid
    )


def request(partitions, brokers=(B1, B2, B3), deleted=(), epoch=3):
    return UpdateMetadata(
        controller_id=100,
        controller_epoch=epoch,
        broker_epoch=-1,
        partitions=tuple(partitions),
        live_brokers=tuple(brokers),
        deleted_topics=tuple(deleted),
        controller_host="10.0.0.9",
        controller_port=9190,
    )


def test_update_then_describe():
    cache = MetadataCache()
    assert cache.update(request([mp("a", 1, 2), mp("a", 0, 1), mp("b", 0, 3)])) == []
    view = cache.describe(None)
    assert view.brokers == (B1, B2, B3)
    assert (view.controller_id, view.controller_epoch) == (100, 3)
    assert cache.controller_endpoint == ("10.0.0.9", 9190)
    assert [t.name for t in view.topics] == ["a", "b"]
    assert view.topics[0] == TopicView(
        "a",
        Code.NONE,
        "id-x",
        (
            PartitionView(0, Code.NONE, 1, 1, (1, 2, 3), (1, 2, 3), ()),
            PartitionView(1, Code.NONE, 2, 1, (1, 2, 3), (1, 2, 3), ()),
        ),
    )


def test_updates_are_incremental_per_partition():
    cache = MetadataCache()
    cache.update(request([mp("a", 0, 1), mp("a", 1, 2)]))
    cache.update(request([mp("a", 1, 3, epoch=2, isr=(3,))]))
    assert cache.partition(TopicPartition("a", 0)).leader == 1
    assert cache.partition(TopicPartition("a", 1)).leader_epoch == 2
    assert cache.partition(TopicPartition("a", 1)).isr == (3,)


def test_dead_leader_and_replicas_are_reported():
    cache = MetadataCache()
    cache.update(request([mp("a", 0, 2), mp("a", 1, -1)], brokers=(B1, B3)))
    (topic,) = cache.describe(["a"]).topics
    assert topic.partitions[0] == PartitionView(
        0, Code.LEADER_NOT_AVAILABLE, -1, 1, (1, 2, 3), (1, 2, 3), (2,)
    )
    assert topic.partitions[1].error == Code.LEADER_NOT_AVAILABLE
    assert cache.alive_broker(2) is None and cache.alive_broker(3) == B3


def test_offline_replicas_are_the_sorted_union_of_listed_and_dead_ones():
    """The controller lists offline replicas in replica order; a replica on a broker missing
    from the live set counts as offline whether listed or not."""
    cache = MetadataCache()
    states = [
        mp("a", 0, 1, replicas=(3, 1, 2))._replace(offline_replicas=(3, 2)),
        mp("a", 1, 1, replicas=(3, 1, 2))._replace(offline_replicas=(2,)),
        mp("a", 2, 1, replicas=(3, 1, 2))._replace(offline_replicas=(3,)),
        mp("a", 3, 1, replicas=(1, 2))._replace(offline_replicas=(2, 2)),
    ]
    cache.update(request(states, brokers=(B1, B3)))
    (topic,) = cache.describe(["a"]).topics
    assert [p.offline_replicas for p in topic.partitions] == [(2, 3), (2,), (2, 3), (2,)]


def test_unknown_topic_and_duplicates_in_the_request():
    cache = MetadataCache()
    cache.update(request([mp("a", 0, 1)]))
    view = cache.describe(["zz", "a", "zz"])
    assert [(t.name, t.error) for t in view.topics] == [
        ("zz", Code.UNKNOWN_TOPIC_OR_PARTITION),
        ("a", Code.NONE),
    ]


def test_deletions():
    cache = MetadataCache()
    cache.update(request([mp("a", 0, 1), mp("a", 1, 1), mp("b", 0, 1), mp("b", 1, 1)]))
    # Leader -2 marks a partition of a topic being deleted.
    deleted = cache.update(request([mp("a", 0, -2)], deleted=["b"]))
    assert deleted == [TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("b", 1)]
    assert cache.topics() == ["a"]
    assert not cache.contains(TopicPartition("a", 0))
    assert cache.contains(TopicPartition("a", 1))
    cache.update(request([mp("a", 1, -2)]))
    assert cache.topics() == [] and not cache.has_topic("a")


def test_a_topic_deleted_and_listed_again_in_one_request():
    cache = MetadataCache()
    cache.update(request([mp("a", 0, 1), mp("b", 0, 1)]))
    deleted = cache.update(request([mp("a", 0, -2), mp("a", 1, 2), mp("b", 0, 3)]))
    assert deleted == [TopicPartition("a", 0)]
    assert (cache.partition(TopicPartition("a", 1)), cache.partition(TopicPartition("b", 0))) == (
        mp("a", 1, 2),
        mp("b", 0, 3),
    )
    assert (cache.topics(), cache.contains(TopicPartition("a", 0))) == (["a", "b"], False)


def test_a_change_copies_the_blocks_of_partitions_it_names_and_keeps_the_others():
    cache = MetadataCache()
    cache.update(request([mp("a", p, 1) for p in range(200)]))
    before = cache._topics["a"]
    cache.update(request([mp("a", 5, 2), mp("a", 130, 3)]))
    after = cache._topics["a"]
    touched = {5 >> BLOCK_BITS, 130 >> BLOCK_BITS}
    assert len(touched) == 2 and len(after.states) == len(before.states) > 3
    for b in after.states:
        assert (after.states[b] is before.states[b]) is (b not in touched)
        assert (after.hashes[b] is before.hashes[b]) is (b not in touched)
    assert before.get(5) == mp("a", 5, 1)  # what others may share is never changed
    assert cache.partition(TopicPartition("a", 5)) == mp("a", 5, 2)
    assert after.get(130) == mp("a", 130, 3)
    cache.update(request([mp("a", 6, -2)]))  # deleted, likewise
    assert (after.get(6), cache.partition(TopicPartition("a", 6))) == (mp("a", 6, 1), None)
    assert cache._topics["a"].states[1] is after.states[1]


def test_random_changes_answer_as_the_states_they_leave():
    """Partitions set, replaced and deleted across blocks, in random order and batches: the
    cache answers as one built from what is left, and holds no block with nothing in it."""
    rng = random.Random(7)
    block = 1 << BLOCK_BITS
    edges = (0, 1, block - 1, block, block + 1, 2 * block - 1, 2 * block, 299)
    cache, held = MetadataCache(), {}
    for step in range(300):
        batch = {}
        for _ in range(rng.randint(1, 20)):
            # Often the edges of the first blocks, so blocks fill and empty.
            p = rng.choice(edges) if rng.random() < 0.95 else rng.randrange(300)
            batch[p] = mp("a", p, -2 if rng.random() < 0.4 else rng.randint(1, 3), epoch=step)
        deleted = cache.update(request(batch.values()))
        gone = [p for p, s in batch.items() if s.leader == -2 and p in held]
        assert deleted == [TopicPartition("a", p) for p in gone]
        for p, s in batch.items():
            if s.leader == -2:
                held.pop(p, None)
            else:
                held[p] = s
        assert cache.partition_count("a") == (len(held) or None)
        for p in rng.sample(range(300), 20):
            assert cache.partition(TopicPartition("a", p)) == held.get(p)
        if held:
            assert cache.describe(["a"]) == fresh([held[p] for p in sorted(held)]).describe(["a"])
            blocks = cache._topics["a"].states.values()
            assert all(any(s is not None for s in block) for block in blocks)
        assert cache.digest() == fresh(list(held.values())).digest()


# ------------------------------------------------------------------- the metadata digest


def fresh(*batches) -> MetadataCache:
    cache = MetadataCache()
    for batch in batches:
        cache.update(request(batch))
    return cache


A0, A1, B0 = mp("a", 0, 1), mp("a", 1, 2), mp("b", 0, 3)
A1_MOVED = mp("a", 1, 3, epoch=2, isr=(3,))


@pytest.mark.parametrize(
    ("batches", "same_as"),
    [
        # Order and batching do not matter: a multiset hash of what is held.
        ([[B0, A1, A0]], [A0, A1, B0]),
        ([[A0], [B0], [A1]], [A0, A1, B0]),
        # A replaced state counts once, as its latest value; back again, back to the digest.
        ([[A0, A1], [A1_MOVED]], [A0, A1_MOVED]),
        ([[A0, A1], [A1_MOVED], [A1]], [A0, A1]),
        # Deletion markers and deleted topics take states out.
        ([[A0, A1, B0], [mp("a", 0, -2)]], [A1, B0]),
        ([[A0, A1, B0], [mp("a", 0, -2), mp("a", 1, -2)]], [B0]),
        ([[A0, A1, B0], [mp("a", 0, -2), mp("a", 1, 5)]], [mp("a", 1, 5), B0]),
        ([[A0, A1, B0], [mp("b", 0, -2), B0]], [A0, A1, B0]),
    ],
)
def test_digest_is_of_the_states_held(batches, same_as):
    assert fresh(*batches).digest() == fresh(same_as).digest()


def test_digest_after_deleted_topics_and_of_nothing():
    cache = fresh([A0, A1, B0])
    cache.update(request([], deleted=["a"]))
    assert cache.digest() == fresh([B0]).digest()
    cache.update(request([], deleted=["b"]))
    assert cache.digest() == bytes(16) == MetadataCache().digest()


def test_digest_tells_states_apart():
    digests = {fresh(batch).digest() for batch in ([A0], [A1], [A1_MOVED], [A0, A1], [])}
    assert len(digests) == 5


def test_decoded_hashes_are_the_hashes_of_states_built_in_code():
    """The decoder hashes the bytes that arrived; code-built requests are encoded and hashed:
    both must agree, or a cache filled by tests (or tools) would never match a controller."""
    states = [A0, A1_MOVED, B0, mp("c", 7, -1, replicas=(4, 5), isr=(4,), tid="")]
    pb = control_pb2.UpdateMetadataRequest(
        partition_states=[
            control_pb2.UpdateMetadataPartitionState(
                topic=s.topic, topic_id=s.topic_id, partition=s.partition,
                controller_epoch=s.controller_epoch, leader=s.leader,
                leader_epoch=s.leader_epoch, isr=s.isr, partition_epoch=s.partition_epoch,
                replicas=s.replicas, offline_replicas=s.offline_replicas,
            )
            for s in states
        ]
    )  # fmt: skip
    decoded = control_convert.update_metadata_from_pb(pb)
    assert decoded.partitions == tuple(states)
    assert decoded.state_hashes == tuple(state_hash(s) for s in states)
    assert len(set(decoded.state_hashes)) == 4
    assert fresh(states).digest() == fresh(decoded.partitions).digest()
    cache = MetadataCache()
    cache.update(decoded)
    assert cache.digest() == fresh(states).digest()


def test_caches_sharing_updates_share_each_topic_and_answer_as_unshared_ones():
    """Brokers of one process (a simulated fleet) share what they build from the same decoded
    requests: the same topic objects, the same digests and answers as a cache of its own."""
    import dataclasses

    from services.broker_agent.metadata_cache import SharedUpdates, topic_runs

    def decoded(req: UpdateMetadata) -> UpdateMetadata:
        """As the decoder makes it: cut into topic runs, which every broker then shares."""
        hashes = tuple(state_hash(s) for s in req.partitions)
        return dataclasses.replace(req, topic_runs=topic_runs(req.partitions, hashes))

    shared = SharedUpdates()
    one, two, alone = MetadataCache(shared), MetadataCache(shared), MetadataCache()
    steps = [
        decoded(request([mp("a", 0, 1), mp("a", 1, 2), mp("b", 0, 3)])),
        decoded(request([mp("a", 1, 3, epoch=2), mp("b", 0, -2)])),  # b-0 deleted: b is gone
        decoded(request([mp("c", 0, 1)], deleted=["a"])),
    ]
    for step in steps:
        deleted = [cache.update(step) for cache in (one, two, alone)]
        assert deleted[0] == deleted[1] == deleted[2]
        assert one.digest() == two.digest() == alone.digest()
        assert one.describe(None) == two.describe(None) == alone.describe(None)
    assert one._topics["c"] is two._topics["c"]
    assert one._topics["c"] is not alone._topics["c"]
    # 5 topic runs, each built once, by the first cache; the second took each whole request's
    # result, topics map and all.
    assert (shared.hits, shared.misses) == (0, 5)
    assert one._topics is two._topics
    assert one.topics() == ["c"]

    # A cache that missed requests (it started late: the last step only) holds the others'
    # states in a map built apart; its next request takes their result whole (keyed by the
    # digest), and from then on the map is theirs.
    late, late_alone = MetadataCache(shared), MetadataCache()
    more = decoded(request([mp("c", 1, 2), mp("d", 0, 1)]))
    for cache in (late, late_alone):
        cache.update(steps[2])
    assert late._topics is not one._topics and late.digest() == one.digest()
    assert late._topics["c"] is one._topics["c"]  # both applied the same run to no ``c``
    for cache in (one, two, late, late_alone):
        cache.update(more)
    assert late.digest() == late_alone.digest() and late.describe(None) == late_alone.describe(None)
    assert late._topics is one._topics
    # ``more``'s two runs built once, by ``one``; ``late``'s ``c`` taken from ``one``'s.
    assert (shared.hits, shared.misses) == (1, 7)
    assert (shared.request_hits, shared.request_misses) == (5, 5)
