"""The error model's pure parts: the one ErrorCode table, the rich details both ways, and the
unknown-enum check every public request goes through."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from leasehold import error_model
from leasehold.admin.v1 import admin_pb2 as a
from leasehold.broker.v1 import broker_pb2 as b
from leasehold.client.errors import details_of, error_from_rpc
from leasehold.common.v1 import common_pb2 as c
from leasehold.enum_check import EnumChecker
from leasehold.error_model import FieldViolation
from leasehold.errors import InvalidRequestError, NotFoundError
from leasehold.grpc_errors import details_trailer


def test_every_error_code_has_a_status_and_a_reason_that_names_it():
    for name, value in c.ErrorCode.items():
        assert value in error_model.STATUS_BY_CODE, f"{name} has no row in STATUS_BY_CODE"
        assert error_model.STATUS_BY_CODE[value] in error_model.STATUS_NUMBERS
        reason = error_model.reason_of(value)
        assert reason == name.removeprefix("ERROR_CODE_")
        assert error_model.code_of_reason(reason) == value
    assert set(error_model.STATUS_BY_CODE) == set(c.ErrorCode.values())
    assert error_model.status_of(c.ERROR_CODE_NONE) == "OK"


def test_status_numbers_are_grpcs():
    for code in grpc.StatusCode:
        assert error_model.STATUS_NUMBERS[code.name] == code.value[0]


def test_a_number_outside_the_enum_is_an_unknown_server_error():
    assert error_model.reason_of(12345) == "UNKNOWN_SERVER_ERROR"
    assert error_model.status_of(12345) == "INTERNAL"
    assert error_model.code_of_reason("NO_SUCH_REASON") is None


def test_encoded_status_carries_error_info_and_bad_request():
    status = error_model.encode_status(
        "INVALID_ARGUMENT",
        "acks must be 0, 1 or -1, got 5",
        c.ERROR_CODE_INVALID_REQUIRED_ACKS,
        (FieldViolation("acks", "acks must be 0, 1 or -1, got 5"),),
    )
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, info.domain) == ("INVALID_REQUIRED_ACKS", "leasehold")
    assert info.metadata["error_code"] == str(c.ERROR_CODE_INVALID_REQUIRED_ACKS)
    bad = error_details_pb2.BadRequest()
    assert status.details[1].Unpack(bad)
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("acks", "acks must be 0, 1 or -1, got 5")
    ]
    decoded = error_model.decode_status(status, "INVALID_ARGUMENT")
    assert decoded.code == c.ERROR_CODE_INVALID_REQUIRED_ACKS
    assert decoded.violations == (FieldViolation("acks", "acks must be 0, 1 or -1, got 5"),)


def test_a_status_without_details_or_of_another_domain_gets_the_status_default():
    assert error_model.decode_status(None, "NOT_FOUND").code == (
        c.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
    )
    foreign = status_pb2.Status(code=5, message="x")
    foreign.details.add().Pack(error_details_pb2.ErrorInfo(reason="NOT_CONTROLLER", domain="x"))
    assert error_model.decode_status(foreign, "INTERNAL").code == (
        c.ERROR_CODE_UNKNOWN_SERVER_ERROR
    )


def rpc_error(code: grpc.StatusCode, message: str, trailer=()) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(
        code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailer), details=message
    )


def test_the_sdk_reads_the_trailer_the_server_writes():
    message = "The topic 'nope' does not exist."
    trailer = details_trailer(
        grpc.StatusCode.NOT_FOUND, message, c.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
    )
    error = error_from_rpc(rpc_error(grpc.StatusCode.NOT_FOUND, message, trailer))
    assert type(error) is NotFoundError
    assert error.code == c.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION and error.field == ""

    trailer = details_trailer(
        grpc.StatusCode.INVALID_ARGUMENT, "No topics to create.", c.ERROR_CODE_INVALID_REQUEST,
        "topics",
    )  # fmt: skip
    error = error_from_rpc(rpc_error(grpc.StatusCode.INVALID_ARGUMENT, "x", trailer))
    assert type(error) is InvalidRequestError
    assert (error.code, error.field) == (c.ERROR_CODE_INVALID_REQUEST, "topics")
    assert details_of(rpc_error(grpc.StatusCode.INVALID_ARGUMENT, "x", trailer)).violations[
        0
    ] == FieldViolation("topics", "No topics to create.")


def test_the_exact_code_survives_where_the_status_alone_would_guess():
    trailer = details_trailer(
        grpc.StatusCode.UNAVAILABLE, "not the controller", c.ERROR_CODE_NOT_CONTROLLER
    )
    error = error_from_rpc(rpc_error(grpc.StatusCode.UNAVAILABLE, "x", trailer))
    assert error.code == c.ERROR_CODE_NOT_CONTROLLER


def test_unknown_enum_values_are_found_by_path():
    checker = EnumChecker()
    good = a.AlterConfigsRequest(
        resources=[
            a.AlterConfigsResource(
                resource=a.ConfigResource(type=a.RESOURCE_TYPE_TOPIC, name="t"),
                configs=[a.AlterableConfig(name="k", operation=a.CONFIG_OPERATION_SET)],
            )
        ]
    )
    assert list(checker.unknown(good)) == []
    bad = a.AlterConfigsRequest()
    bad.CopyFrom(good)
    bad.resources.add(resource=a.ConfigResource(type=7, name="x"))
    bad.resources[0].configs.add(name="j", operation=42)
    assert list(checker.unknown(bad)) == [
        ("resources[0].configs[1].operation", 42),
        ("resources[1].resource.type", 7),
    ]
    assert list(checker.unknown(b.FetchRequest(record_format=99))) == [("record_format", 99)]
    assert list(checker.unknown(b.FetchRequest(record_format=b.RECORD_FORMAT_RECORDS))) == []
    elect = a.ElectLeadersRequest(election_type=c.ELECTION_TYPE_PREFERRED)
    assert list(checker.unknown(elect)) == []


def test_types_without_enums_are_not_walked():
    checker = EnumChecker()
    produce = b.ProduceRequest(
        topics=[b.TopicProduceData(topic="t", partitions=[b.PartitionProduceData(partition=0)])]
    )
    assert list(checker.unknown(produce)) == []
    assert checker._fields(b.ProduceRequest.DESCRIPTOR) == ()


@pytest.mark.parametrize("status", ["INVALID_ARGUMENT", "INTERNAL", "UNAVAILABLE"])
def test_details_trailer_is_a_valid_grpc_status(status):
    code = getattr(grpc.StatusCode, status)
    ((key, value),) = details_trailer(code, "m", c.ERROR_CODE_INVALID_REQUEST)
    assert key == error_model.DETAILS_TRAILER
    decoded = status_pb2.Status.FromString(value)
    assert (decoded.code, decoded.message) == (code.value[0], "m")
