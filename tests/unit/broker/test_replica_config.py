"""The broker agent's flags and environment variables (contract 1)."""

from __future__ import annotations

import pytest

from services.broker_agent.config import BrokerConfig, config_from_args


@pytest.fixture(autouse=True)
def _plaintext(monkeypatch):
    """These tests are about other flags: the services' TLS flags have their own tests."""
    monkeypatch.setenv("LEASEHOLD_INSECURE", "1")


def test_flags_become_a_frozen_config():
    config = config_from_args(
        ["--broker-id", "3", "--data-dir", "/d", "--rack", "r1", "--session-ttl", "7",
         "--port", "9101", "--replica-lag-time-max-ms", "2500", "--num-replica-fetchers", "2",
         "--controlled-shutdown-enable", "false"]
    )  # fmt: skip
    assert (config.broker_id, config.data_dir, config.rack, config.session_ttl) == (
        3,
        "/d",
        "r1",
        7,
    )
    assert config.common.port == 9101
    assert (config.replica_lag_time_max_ms, config.num_replica_fetchers) == (2500, 2)
    assert config.controlled_shutdown_enable is False
    with pytest.raises(AttributeError):
        config.broker_id = 4  # type: ignore[misc]


def test_environment_fills_in_and_flags_win(monkeypatch):
    monkeypatch.setenv("LEASEHOLD_BROKER_ID", "5")
    monkeypatch.setenv("LEASEHOLD_DATA_DIR", "/env")
    monkeypatch.setenv("LEASEHOLD_REPLICA_FETCH_WAIT_MAX_MS", "250")
    monkeypatch.setenv("LEASEHOLD_FLUSH_ON_REPLICATE", "no")
    config = config_from_args(["--data-dir", "/flag"])
    assert (config.broker_id, config.data_dir) == (5, "/flag")
    assert config.replica_fetch_wait_max_ms == 250
    assert config.flush_on_replicate is False
    assert config.common.port == 9092  # the broker's default port


@pytest.mark.parametrize(
    "argv",
    [
        ["--data-dir", "/d"],  # no broker id
        ["--broker-id", "1"],  # no data dir
        ["--broker-id", "1", "--data-dir", "/d", "--session-ttl", "0"],
        ["--broker-id", "1", "--data-dir", "/d", "--num-replica-fetchers", "0"],
        ["--broker-id", "1", "--data-dir", "/d", "--controlled-shutdown-enable", "maybe"],
    ],
)
def test_invalid_configs_exit_with_usage(argv, monkeypatch):
    monkeypatch.delenv("LEASEHOLD_BROKER_ID", raising=False)
    monkeypatch.delenv("LEASEHOLD_DATA_DIR", raising=False)
    with pytest.raises(SystemExit) as caught:
        config_from_args(argv)
    assert caught.value.code == 2


def test_defaults_follow_kafka():
    config = BrokerConfig(broker_id=0, data_dir="/d")
    assert config.replica_lag_time_max_ms == 30_000
    assert config.replica_fetch_max_bytes == 1024 * 1024
    assert config.replica_fetch_backoff_ms == 1_000
    assert config.min_insync_replicas == 1
    assert config.message_max_bytes == 1024 * 1024 + 12
