"""The scenario benchmarks' pure pieces: partition layout, run sizing, teardown."""

from __future__ import annotations

import math
import shutil
import subprocess

import pytest

from bench.scenario import TMPFS, Layout, Scenario, Sizing
from leasehold.etcd.session import DEFAULT_TTL


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        (
            Layout(5, 2, brokers=(1, 2, 3)),
            {
                "bench-0": {0: [1, 2, 3], 1: [2, 3, 1]},
                "bench-1": {0: [3, 1, 2], 1: [1, 2, 3]},
                "bench-2": {0: [2, 3, 1]},
            },
        ),
        (
            Layout(4, 4, brokers=(1, 2, 3), leader=1),
            {"bench-0": {0: [1, 2, 3], 1: [1, 3, 2], 2: [1, 2, 3], 3: [1, 3, 2]}},
        ),
        (
            Layout(3, 10, brokers=(1, 2, 3, 4), replication=2, leader=4, prefix="t"),
            {"t-0": {0: [4, 1], 1: [4, 2], 2: [4, 3]}},
        ),
        (Layout(2, 5, brokers=(7,), replication=1), {"bench-0": {0: [7], 1: [7]}}),
    ],
)
def test_layout_topics(layout, expected):
    assert layout.topics() == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {"partitions": 0, "per_topic": 1, "brokers": (1,)},
        {"partitions": 1, "per_topic": 0, "brokers": (1,)},
        {"partitions": 1, "per_topic": 1, "brokers": (1, 2), "replication": 3},
        {"partitions": 1, "per_topic": 1, "brokers": (1, 2), "replication": 0},
        {"partitions": 1, "per_topic": 1, "brokers": (1, 2), "leader": 3},
    ],
)
def test_layout_rejects_impossible_shapes(kwargs):
    with pytest.raises(ValueError):
        Layout(**kwargs)


SMALL = {"settle_window": 1.0, "settle_passes": 2}
SMALL |= {"broker_tolerance": 0.1, "answer_within": 0.25, "busy_limit": 1.0}
LARGE = {"settle_window": 2.0, "settle_passes": 3}
LARGE |= {"broker_tolerance": math.inf, "answer_within": 3.0}


@pytest.mark.parametrize(
    ("partitions", "expected"),
    [
        (300, Sizing(broker_data_root="", **SMALL)),
        (4_999, Sizing(broker_data_root="", **SMALL)),
        (10_000, Sizing(broker_data_root="", busy_limit=0.4, **LARGE)),
        (49_999, Sizing(broker_data_root="", busy_limit=0.4, **LARGE)),
        (100_000, Sizing(broker_data_root=TMPFS, busy_limit=0.7, **LARGE)),
    ],
)
def test_sizing_by_partition_count(partitions, expected):
    assert Sizing.of(partitions) == expected
    assert Sizing.of(partitions).ttl == DEFAULT_TTL  # every size runs the services' default


def test_teardown_stops_the_cluster_when_a_broker_will_not_go():
    """A broker whose SIGKILL is not reaped in time (it happened under a tracer) must not leave
    etcd and the controllers running: the cluster is stopped and the error still raised."""

    class Stuck:
        name = "broker-1"

        def resume(self) -> None:
            pass

        def kill(self) -> None:
            raise subprocess.TimeoutExpired("broker-1", 10)

    sc = Scenario(controllers=0, brokers=0, profile=())
    stopped: list[bool] = []
    sc.cluster.brokers = {1: Stuck()}
    sc.cluster.stop = lambda: stopped.append(True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            sc._stop(keep=False)
        assert stopped == [True]
    finally:
        shutil.rmtree(sc.cluster.workdir, ignore_errors=True)
