"""``--controller-id-from-hostname``: a stable non-negative int32 from ``$HOSTNAME``.

Expected ids are CRC-32 check values published with the algorithm ("123456789" -> 0xCBF43926,
"a" -> 0xE8B7BE43) with the top bit cleared.
"""

from __future__ import annotations

import pytest

from services.controller.config import controller_id_from_hostname, parse_args


@pytest.fixture(autouse=True)
def _plaintext(monkeypatch):
    """These tests are about the controller id: the services' TLS flags have their own tests."""
    monkeypatch.setenv("LEASEHOLD_INSECURE", "1")


@pytest.mark.parametrize(
    ("hostname", "expected"),
    [
        ("", 0),
        ("a", 0x68B7BE43),
        ("123456789", 0x4BF43926),
    ],
)
def test_the_id_is_crc32_without_the_sign_bit(hostname, expected):
    assert controller_id_from_hostname(hostname) == expected


def test_ids_of_two_pods_differ_and_are_int32():
    ids = {controller_id_from_hostname(f"controller-7d9f8b-{s}") for s in ("x2k4p", "q8z1m")}
    assert len(ids) == 2 and all(0 <= i < 2**31 for i in ids)


@pytest.mark.parametrize(
    ("argv", "env", "environ", "expected_id", "source"),
    [
        (["--controller-id", "3"], {}, {"HOSTNAME": "123456789"}, 3, "flag"),
        (["--controller-id-from-hostname"], {}, {"HOSTNAME": "123456789"}, 0x4BF43926,
         "hostname 123456789"),
        (["--controller-id", "3", "--controller-id-from-hostname"], {}, {"HOSTNAME": "a"},
         0x68B7BE43, "hostname a"),
        ([], {"LEASEHOLD_CONTROLLER_ID_FROM_HOSTNAME": "true"}, {"HOSTNAME": "a"}, 0x68B7BE43,
         "hostname a"),
        (["--no-controller-id-from-hostname"], {"LEASEHOLD_CONTROLLER_ID_FROM_HOSTNAME": "true"},
         {"HOSTNAME": "a"}, 1, "flag"),
    ],
)  # fmt: skip
def test_the_flag_and_its_environment_variable(
    monkeypatch, argv, env, environ, expected_id, source
):
    monkeypatch.delenv("LEASEHOLD_CONTROLLER_ID", raising=False)
    monkeypatch.delenv("LEASEHOLD_CONTROLLER_ID_FROM_HOSTNAME", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    config = parse_args(argv, environ=environ)
    assert (config.controller_id, config.controller_id_source) == (expected_id, source)
