"""The admin service's flags and environment into its frozen configuration."""

from __future__ import annotations

import pytest

from services.admin.config import DEFAULT_PORT, Limits, parse_args


@pytest.fixture(autouse=True)
def _plaintext(monkeypatch):
    """These tests are about other flags: the services' TLS flags have their own tests."""
    monkeypatch.setenv("LEASEHOLD_INSECURE", "1")


def test_defaults_and_flags():
    config = parse_args(["--etcd", "10.0.0.1:2379,10.0.0.2:2379", "--cluster-id", "c1"])
    assert config.common.etcd_endpoints == ("10.0.0.1:2379", "10.0.0.2:2379")
    assert (config.common.cluster_id, config.common.port) == ("c1", DEFAULT_PORT)
    assert config.limits == Limits()
    tuned = parse_args(["--max-partitions-per-topic", "10", "--max-wait-ms", "500"])
    assert tuned.limits == Limits(max_partitions_per_topic=10, max_wait_ms=500)


def test_environment_is_read_when_the_parser_is_built(monkeypatch):
    monkeypatch.setenv("LEASEHOLD_MAX_WAIT_MS", "1234")
    monkeypatch.setenv("LEASEHOLD_PORT", "9999")
    config = parse_args([])
    assert (config.limits.max_wait_ms, config.common.port) == (1234, 9999)
    assert parse_args(["--max-wait-ms", "7"]).limits.max_wait_ms == 7  # the flag wins


@pytest.mark.parametrize("argv", [["--max-partitions-per-topic", "0"], ["--max-wait-ms", "-1"]])
def test_nonsense_limits_are_refused(argv):
    with pytest.raises(SystemExit):
        parse_args(argv)
