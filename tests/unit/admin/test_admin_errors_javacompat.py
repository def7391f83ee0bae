"""The shared error hierarchy, and the Java behaviours Kafka's output depends on."""

from __future__ import annotations

import pickle

import pytest

from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import (
    GRPC_STATUS_NAMES,
    AdminError,
    AlreadyExistsError,
    InvalidRequestError,
    LeaseholdError,
    NotControllerError,
    NotFoundError,
    PreconditionError,
    StaleEpochError,
    UnavailableError,
)
from leasehold.javacompat import (
    java_hash_set_order,
    java_int_hash,
    java_length,
    java_list_str,
    java_split,
    java_string_hash,
    java_string_key,
    java_topic_partition_hash,
    java_trim,
    parse_java_int,
)

# ---- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "status"),
    [
        (LeaseholdError, "INTERNAL"),
        (InvalidRequestError, "INVALID_ARGUMENT"),
        (NotFoundError, "NOT_FOUND"),
        (AlreadyExistsError, "ALREADY_EXISTS"),
        (PreconditionError, "FAILED_PRECONDITION"),
        (StaleEpochError, "FAILED_PRECONDITION"),
        (UnavailableError, "UNAVAILABLE"),
        (NotControllerError, "UNAVAILABLE"),
    ],
)
def test_each_kind_has_its_status(cls, status):
    assert cls.grpc_status == status
    error = cls(c.ERROR_CODE_INVALID_REQUEST, "why")
    assert (error.code, error.error_code, error.message, error.grpc_status) == (
        42,
        42,
        "why",
        status,
    )
    assert str(error) == "why"
    assert isinstance(error, AdminError)


def test_admin_error_is_the_base_and_status_can_be_overridden():
    assert AdminError is LeaseholdError
    error = AdminError(c.ERROR_CODE_TOPIC_ALREADY_EXISTS, "exists", "ALREADY_EXISTS")
    assert error.grpc_status == "ALREADY_EXISTS"
    assert LeaseholdError.grpc_status == "INTERNAL"  # the class default is untouched
    assert error.code_name == "ERROR_CODE_TOPIC_ALREADY_EXISTS"
    assert repr(error) == (
        "LeaseholdError(code=ERROR_CODE_TOPIC_ALREADY_EXISTS, message='exists', "
        "grpc_status='ALREADY_EXISTS')"
    )
    assert LeaseholdError(12345, "odd").code_name == "12345"


def test_unknown_status_name_is_refused():
    with pytest.raises(ValueError, match="INVALID_ARG"):
        LeaseholdError(1, "x", "INVALID_ARG")


def test_status_names_are_grpc_status_codes():
    import grpc

    assert {code.name for code in grpc.StatusCode} == GRPC_STATUS_NAMES


@pytest.mark.parametrize(
    "error",
    [
        InvalidRequestError(c.ERROR_CODE_INVALID_CONFIG, "bad"),
        NotControllerError(c.ERROR_CODE_NOT_CONTROLLER, "elsewhere"),
        PreconditionError(c.ERROR_CODE_INVALID_REQUEST, "state", "ABORTED"),
    ],
)
def test_errors_survive_pickling(error):
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (copy.code, copy.message, copy.grpc_status) == (
        error.code,
        error.message,
        error.grpc_status,
    )


# ---- Java behaviours ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 97), ("foo", 101574), ("hello", 99162322), ("polygenelubricants", -(2**31))],
)
def test_string_hash(text, expected):
    assert java_string_hash(text) == expected


def test_topic_partition_and_int_hash():
    assert java_topic_partition_hash("foo", 0) == 31 * 31 + 101574
    assert java_int_hash(-1) == -1
    assert java_int_hash(2**31) == -(2**31)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([16, 0, 1], [16, 0, 1]),  # 16 and 0 share bucket 0: insertion order
        ([0, 16, 1], [0, 16, 1]),
        ([5, 3, 1], [1, 3, 5]),
        ([-1, 1], [-1, 1]),  # -1 spreads to 0xFFFF0000: bucket 0
        ([*range(11), 16], [0, 16, *range(1, 11)]),  # 12 items still fit 16 slots
        ([*range(12), 16], [*range(12), 16]),  # the 13th item doubles the table: 16 moves
        ([65536, 0], [0, 65536]),  # 65536 spreads to 65537: bucket 1, not 0
    ],
)
def test_hash_set_order(items, expected):
    assert java_hash_set_order(items, java_int_hash) == expected


def test_string_order_and_length_count_utf16_units():
    assert sorted(["\uffff", "\U0001f600", "a"], key=java_string_key) == [
        "a",
        "\U0001f600",
        "\uffff",
    ]
    assert sorted(["ab", "a"], key=java_string_key) == ["a", "ab"]
    assert java_length("\U0001f600a") == 3


@pytest.mark.parametrize(
    ("text", "parts"),
    [("", [""]), (",", []), ("a,,b,,", ["a", "", "b"]), (",a", ["", "a"]), ("a", ["a"])],
)
def test_split(text, parts):
    assert java_split(text, ",") == parts


def test_trim_and_list_str():
    assert java_trim("\x00 a b\x1f\n") == "a b"
    assert java_trim("\u00a0a\u00a0") == "\u00a0a\u00a0"  # not whitespace to Java's trim
    assert java_list_str([1, "x", True]) == "[1, x, true]"
    assert java_list_str([]) == "[]"


@pytest.mark.parametrize(
    ("text", "bits", "value"),
    [
        ("0", 32, 0),
        ("+7", 32, 7),
        ("-2147483648", 32, -(2**31)),
        ("9223372036854775807", 64, 2**63 - 1),
    ],
)
def test_parse_int(text, bits, value):
    assert parse_java_int(text, bits=bits) == value


@pytest.mark.parametrize(
    ("text", "bits"),
    [
        ("", 32),
        (" 1", 32),
        ("1_0", 32),
        ("2147483648", 32),
        ("9223372036854775808", 64),
        ("١", 32),
        ("+", 32),
    ],
)
def test_parse_int_rejects(text, bits):
    with pytest.raises(ValueError, match="For input string"):
        parse_java_int(text, bits=bits)
