"""``LogManager.get_or_create`` on a log it already has: returned as is when nothing needs
checking or recording, and every check still applies otherwise."""

from __future__ import annotations

import pytest

from services.broker_agent.log import (
    InconsistentTopicIdError,
    KafkaStorageError,
    LogConfig,
    LogManager,
)
from services.broker_agent.log.manager import PARTITION_METADATA


@pytest.fixture
def manager(tmp_path):
    logs = LogManager(tmp_path)
    logs.get_or_create("known", 0, "id-1")  # topic id recorded (and written)
    logs.get_or_create("anonymous", 0)  # no topic id yet
    yield logs
    logs.close()


@pytest.mark.parametrize(
    ("topic", "topic_id", "defer", "error", "recorded", "file_written"),
    [
        ("known", "", False, None, "id-1", True),
        ("known", "id-1", True, None, "id-1", True),
        ("known", "id-2", True, InconsistentTopicIdError, "id-1", True),
        ("anonymous", "", True, None, None, False),
        ("anonymous", "id-9", True, None, "id-9", False),  # deferred: sync_pending writes it
        ("anonymous", "id-9", False, None, "id-9", True),
    ],
)
def test_an_existing_log(manager, topic, topic_id, defer, error, recorded, file_written):
    log = manager.get(topic, 0)
    if error is not None:
        with pytest.raises(error):
            manager.get_or_create(topic, 0, topic_id, defer_sync=defer)
    else:
        assert manager.get_or_create(topic, 0, topic_id, defer_sync=defer) is log
    assert manager.topic_id(topic, 0) == recorded
    assert (log.directory / PARTITION_METADATA).exists() is file_written


@pytest.mark.parametrize("how", ["log", "manager"])
def test_an_offline_log_is_refused(manager, how):
    if how == "log":
        manager.get("known", 0).mark_offline("disk gone")
    else:
        manager.offline[("known", 0)] = "disk gone"  # as a failed retention run records it
    with pytest.raises(KafkaStorageError):
        manager.get_or_create("known", 0, "id-1")


def test_a_given_config_is_applied_to_an_existing_log(manager):
    config = LogConfig(segment_bytes=4096)
    assert manager.get_or_create("known", 0, "id-1", config).config == config


@pytest.mark.parametrize("name", ["bad/name", "..", ""])
def test_an_illegal_new_name_is_refused(manager, name):
    with pytest.raises(ValueError):
        manager.get_or_create(name, 0)
