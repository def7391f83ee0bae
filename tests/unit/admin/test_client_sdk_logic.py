"""The SDK's pure parts: Kafka's partitioner, and gRPC failures back into domain errors."""

from __future__ import annotations

import grpc
import pytest

from leasehold.client.errors import error_from_code, error_from_rpc
from leasehold.client.partitioner import DefaultPartitioner, key_partition, murmur2
from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import (
    AlreadyExistsError,
    InvalidRequestError,
    LeaseholdError,
    NotFoundError,
    PreconditionError,
    UnavailableError,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Kafka's UtilsTest.testMurmur2 vectors.
        ("21", -973932308),
        ("foobar", -790332482),
        ("a-little-bit-long-string", -985981536),
        ("a-little-bit-longer-string", -1486304829),
        ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        ("abc", 479470107),
    ],
)
def test_murmur2_matches_kafka(text, expected):
    assert murmur2(text.encode()) == expected


@pytest.mark.parametrize(
    ("key", "partitions", "expected"),
    [(b"21", 7, (-973932308 & 0x7FFFFFFF) % 7), (b"abc", 3, 479470107 % 3), (b"", 5, None)],
)
def test_key_partition_is_positive_hash_mod_count(key, partitions, expected):
    expected = (murmur2(key) & 0x7FFFFFFF) % partitions if expected is None else expected
    assert key_partition(key, partitions) == expected
    assert 0 <= key_partition(key, partitions) < partitions


def test_unkeyed_records_round_robin_per_topic():
    p = DefaultPartitioner()
    assert [p("a", None, 3) for _ in range(5)] == [0, 1, 2, 0, 1]
    assert [p("b", None, 2) for _ in range(3)] == [0, 1, 0]
    assert p("a", b"abc", 3) == key_partition(b"abc", 3)


def rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=details)


@pytest.mark.parametrize(
    ("status", "cls", "message"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidRequestError, "bad"),
        (grpc.StatusCode.NOT_FOUND, NotFoundError, "bad"),
        (grpc.StatusCode.ALREADY_EXISTS, AlreadyExistsError, "bad"),
        (grpc.StatusCode.FAILED_PRECONDITION, PreconditionError, "bad"),
        (grpc.StatusCode.UNAVAILABLE, UnavailableError, "admin at x: bad"),
        (grpc.StatusCode.DEADLINE_EXCEEDED, UnavailableError, "admin at x: bad"),
        (grpc.StatusCode.INTERNAL, LeaseholdError, "bad"),
    ],
)
def test_status_maps_back_to_the_error_hierarchy(status, cls, message):
    error = error_from_rpc(rpc_error(status, "bad"), "admin at x")
    assert type(error) is cls
    assert error.grpc_status == status.name
    assert error.message == message


@pytest.mark.parametrize(
    ("code", "cls", "status"),
    [
        (c.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, NotFoundError, "NOT_FOUND"),
        (c.ERROR_CODE_TOPIC_ALREADY_EXISTS, AlreadyExistsError, "ALREADY_EXISTS"),
        (c.ERROR_CODE_NOT_LEADER_OR_FOLLOWER, UnavailableError, "UNAVAILABLE"),
        (c.ERROR_CODE_NOT_ENOUGH_REPLICAS, UnavailableError, "UNAVAILABLE"),
        (c.ERROR_CODE_MESSAGE_TOO_LARGE, LeaseholdError, "RESOURCE_EXHAUSTED"),
        (c.ERROR_CODE_INVALID_REPLICATION_FACTOR, InvalidRequestError, "INVALID_ARGUMENT"),
        (c.ERROR_CODE_FENCED_LEADER_EPOCH, PreconditionError, "FAILED_PRECONDITION"),
    ],
)
def test_per_item_codes_become_errors(code, cls, status):
    error = error_from_code(code, "")
    assert type(error) is cls and error.grpc_status == status and error.code == code
    assert error.message == c.ErrorCode.Name(code).removeprefix("ERROR_CODE_")
