"""BrokerService with hostile requests against broker 1 (leader of fuzz-base-0, follower of
fuzz-base-1): a clear error or a valid answer, never a crash; and what the broker tells clients
(Metadata, log start and end offsets) changes only through an accepted Produce.

Each RPC draws half its requests from a hostile generator (any field any value) and half from a
plausible one (real topic and partitions, sane sizes, one or two fields off), so both validation
and the code behind it are exercised. Produce counts as rejected when the call failed or every
partition was refused before anything was appended; REQUEST_TIMED_OUT and
NOT_ENOUGH_REPLICAS_AFTER_APPEND come after the append (as in Kafka), so they count as accepted.
Long polls are kept short (the broker caps them at 60 s, longer than a test should wait).
"""

from __future__ import annotations

import time

import pytest
from fuzz_harness import BASE_TOPIC, FuzzCluster, error_codes, note
from fuzz_strategies import FUZZ, INT32_MAX, INT32_MIN, int32s, int64s, small_ints, texts
from fuzz_strategies import topic_names as hostile_topics
from hypothesis import given
from hypothesis import strategies as st

from leasehold.broker.v1 import broker_pb2
from leasehold.common.v1 import common_pb2

pytestmark = pytest.mark.e2e

TARGET = 1
AFTER_APPEND = {
    common_pb2.ERROR_CODE_NONE,
    common_pb2.ERROR_CODE_REQUEST_TIMED_OUT,
    common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
}
EPOCHS = st.one_of(st.sampled_from([-1, 0, 1, 7]), int32s())
PLAUSIBLE_EPOCHS = st.sampled_from([-1, -1, 0, 1, 7])
WAITS = st.sampled_from([0, 1, 200, -1, INT32_MIN])
BYTES = st.sampled_from([0, 1, 1024, 1 << 20, INT32_MAX, -1, INT32_MIN])
BIG_VALUE = st.just(2 << 20).map(lambda n: b"x" * n)  # above max.message.bytes
HOSTILE_RECORD = st.builds(
    broker_pb2.Record,
    offset=int64s(),
    timestamp_ms=st.one_of(st.just(0), int64s()),
    key=st.one_of(st.none(), st.binary(max_size=64)),
    value=st.one_of(st.none(), st.binary(max_size=256), st.just(b""), BIG_VALUE),
    headers=st.lists(
        st.builds(broker_pb2.RecordHeader, key=texts(), value=st.binary(max_size=32)),
        max_size=3,
    ),
)
PLAIN_RECORD = st.builds(broker_pb2.Record, value=st.binary(min_size=1, max_size=32))


def requests(message, *, plausible: dict, hostile: dict):
    """Half plausible, half hostile requests of type ``message``."""
    return st.one_of(st.builds(message, **plausible), st.builds(message, **hostile))


def base_partitions(builder, **fields):
    """1-2 distinct real partitions of fuzz-base, as ``builder`` messages."""
    return (
        st.sampled_from([(0,), (1,), (0, 1)])
        .flatmap(
            lambda ps: st.tuples(*(st.builds(builder, partition=st.just(p), **fields) for p in ps))
        )
        .map(list)
    )


def any_partitions(builder, **fields):
    return st.lists(st.builds(builder, partition=small_ints(), **fields), max_size=3)


def settle(fuzz: FuzzCluster, quiet_s: float = 0.5, timeout_s: float = 20.0) -> None:
    """After an accepted append: until followers caught up and the view stops moving."""
    deadline = time.monotonic() + timeout_s
    last, since = fuzz.broker_view(TARGET), time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, "broker view did not settle"
        time.sleep(0.1)
        now = fuzz.broker_view(TARGET)
        if now != last:
            last, since = now, time.monotonic()


def exchange(fuzz: FuzzCluster, method: str, request, accepted=lambda _r: False) -> None:
    before = fuzz.broker_view(TARGET)
    stub = fuzz.broker(TARGET)
    outcome = fuzz.call(fuzz.cluster.brokers[TARGET], getattr(stub, method), request)
    took = not outcome.failed and accepted(outcome.response)
    if outcome.failed:
        note(outcome.status.name)
    else:
        codes = sorted(
            {common_pb2.ErrorCode.Name(c)[11:] for _, c in error_codes(outcome.response)}
        )
        note(("appended: " if took else "answered: ") + ",".join(codes))
    if took:
        settle(fuzz)
    else:
        assert fuzz.broker_view(TARGET) == before, f"{method} changed broker {TARGET}: {request}"


def appended(response: broker_pb2.ProduceResponse) -> bool:
    return any(p.error_code in AFTER_APPEND for t in response.topics for p in t.partitions)


PRODUCE = requests(
    broker_pb2.ProduceRequest,
    plausible=dict(
        acks=st.sampled_from([-1, 1, 0, 2]),
        timeout_ms=st.sampled_from([5000, 0, 1]),
        topics=st.lists(
            st.builds(
                broker_pb2.TopicProduceData,
                topic=st.just(BASE_TOPIC),
                partitions=base_partitions(
                    broker_pb2.PartitionProduceData,
                    records=st.lists(
                        st.one_of(PLAIN_RECORD, PLAIN_RECORD, HOSTILE_RECORD),
                        min_size=1,
                        max_size=3,
                    ),
                    current_leader_epoch=PLAUSIBLE_EPOCHS,
                ),
            ),
            min_size=1,
            max_size=1,
        ),
    ),
    hostile=dict(
        acks=st.one_of(st.sampled_from([-1, 1, 0]), int32s()),
        timeout_ms=st.sampled_from([0, 1, 1000, -1, INT32_MIN]),
        topics=st.lists(
            st.builds(
                broker_pb2.TopicProduceData,
                topic=hostile_topics(),
                partitions=any_partitions(
                    broker_pb2.PartitionProduceData,
                    records=st.lists(HOSTILE_RECORD, max_size=5),
                    current_leader_epoch=EPOCHS,
                ),
            ),
            max_size=2,
        ),
    ),
)


@FUZZ
@given(request_pb=PRODUCE)
def test_produce(fuzz, request_pb):
    exchange(fuzz, "Produce", request_pb, accepted=appended)


def fetch_fields(topics, partitions):
    return dict(
        replica_id=st.one_of(st.just(-1), st.sampled_from([-2, 0, 2, 3, 4, 99, INT32_MAX])),
        replica_broker_epoch=st.one_of(st.just(-1), int64s()),
        max_wait_ms=WAITS,
        min_bytes=BYTES,
        max_bytes=BYTES,
        topics=st.lists(
            st.builds(broker_pb2.FetchTopic, topic=topics, partitions=partitions),
            min_size=1,
            max_size=2,
        ),
        record_format=st.sampled_from([0, 1, 2, 3, -1]),
    )


FETCH_PARTITION = dict(
    current_leader_epoch=EPOCHS,
    fetch_offset=st.one_of(st.integers(0, 12), int64s()),
    last_fetched_epoch=EPOCHS,
    log_start_offset=st.one_of(st.just(0), int64s()),
    partition_max_bytes=BYTES,
)
FETCH = requests(
    broker_pb2.FetchRequest,
    plausible=fetch_fields(
        st.just(BASE_TOPIC), base_partitions(broker_pb2.FetchPartition, **FETCH_PARTITION)
    ),
    hostile=fetch_fields(
        hostile_topics(), any_partitions(broker_pb2.FetchPartition, **FETCH_PARTITION)
    ),
)


@FUZZ
@given(request_pb=FETCH)
def test_fetch(fuzz, request_pb):
    exchange(fuzz, "Fetch", request_pb)


LIST_OFFSETS_PARTITION = dict(
    current_leader_epoch=EPOCHS, timestamp=st.one_of(st.sampled_from([-1, -2, 0]), int64s())
)
LIST_OFFSETS = requests(
    broker_pb2.ListOffsetsRequest,
    plausible=dict(
        replica_id=st.sampled_from([-1, 2, 7]),
        topics=st.lists(
            st.builds(
                broker_pb2.ListOffsetsTopic,
                topic=st.just(BASE_TOPIC),
                partitions=base_partitions(
                    broker_pb2.ListOffsetsPartition, **LIST_OFFSETS_PARTITION
                ),
            ),
            min_size=1,
            max_size=1,
        ),
    ),
    hostile=dict(
        replica_id=int32s(),
        topics=st.lists(
            st.builds(
                broker_pb2.ListOffsetsTopic,
                topic=hostile_topics(),
                partitions=any_partitions(
                    broker_pb2.ListOffsetsPartition, **LIST_OFFSETS_PARTITION
                ),
            ),
            max_size=2,
        ),
    ),
)


@FUZZ
@given(request_pb=LIST_OFFSETS)
def test_list_offsets(fuzz, request_pb):
    exchange(fuzz, "ListOffsets", request_pb)


EPOCH_PARTITION = dict(current_leader_epoch=EPOCHS, leader_epoch=EPOCHS)
OFFSETS_FOR_LEADER_EPOCH = requests(
    broker_pb2.OffsetsForLeaderEpochRequest,
    plausible=dict(
        replica_id=st.sampled_from([-1, 2, 3]),
        topics=st.lists(
            st.builds(
                broker_pb2.OffsetForLeaderTopic,
                topic=st.just(BASE_TOPIC),
                partitions=base_partitions(broker_pb2.OffsetForLeaderPartition, **EPOCH_PARTITION),
            ),
            min_size=1,
            max_size=1,
        ),
    ),
    hostile=dict(
        replica_id=int32s(),
        topics=st.lists(
            st.builds(
                broker_pb2.OffsetForLeaderTopic,
                topic=hostile_topics(),
                partitions=any_partitions(broker_pb2.OffsetForLeaderPartition, **EPOCH_PARTITION),
            ),
            max_size=2,
        ),
    ),
)


@FUZZ
@given(request_pb=OFFSETS_FOR_LEADER_EPOCH)
def test_offsets_for_leader_epoch(fuzz, request_pb):
    exchange(fuzz, "OffsetsForLeaderEpoch", request_pb)


@FUZZ
@given(
    request_pb=st.builds(
        broker_pb2.MetadataRequest,
        topics=st.lists(st.one_of(st.just(BASE_TOPIC), hostile_topics()), max_size=4),
        all_topics=st.booleans(),
    )
)
def test_metadata(fuzz, request_pb):
    exchange(fuzz, "Metadata", request_pb)
