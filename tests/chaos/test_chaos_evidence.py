"""Parsing the evidence of a chaos run: broker logs, state-change logs, etcd history."""

from __future__ import annotations

import json

from chaos_checks import ControllerWrite, EpochBump, LeaderClaim
from chaos_evidence import (
    Rejection,
    history_from_events,
    parse_broker_log,
    parse_state_change_log,
)

from leasehold.etcd import Keyspace
from leasehold.etcd.client import KV, WatchEvent
from leasehold.metadata.v1 import metadata_pb2
from leasehold.statechange import StateChangeRecord


def broker_line(msg: str, logger: str = "services.broker_agent.state_change") -> str:
    return json.dumps({"ts": "x", "level": "info", "logger": logger, "msg": msg})


BROKER_LOG = "\n".join(
    [
        broker_line("orders-1: became leader (leader 2, epoch 0, isr [2, 3, 1])"),
        broker_line("my-topic-10: became follower (leader 3, epoch 4, isr [3, 2])"),
        broker_line("orders-1: became follower (leader -1, epoch 5, isr [])"),
        broker_line("orders-1: LeaderAndIsr ignored: STALE_CONTROLLER_EPOCH"),
        broker_line(
            "LeaderAndIsr rejected: STALE_CONTROLLER_EPOCH (request controller epoch 1, known 2; "
            "request broker epoch -1, current 17)",
            logger="services.broker_agent.state_change",
        ),
        broker_line(
            "UpdateMetadata rejected: STALE_BROKER_EPOCH (request controller epoch 3, known 3; "
            "request broker epoch 5, current 17)"
        ),
        broker_line("orders-2: became leader (leader 2, epoch 1, isr [2])", logger="other"),
        "Traceback (most recent call last):",
        '{"ts": "x", "level": "info", "logger": "services.broker_agent.st',  # torn by SIGKILL
    ]
)


def test_parse_broker_log():
    ev = parse_broker_log(BROKER_LOG, broker=2)
    assert ev.leader_claims == (LeaderClaim("orders", 1, 0, 2, "broker-2.log"),)
    assert ev.follower_claims == (LeaderClaim("my-topic", 10, 4, 3, "broker-2.log"),)
    assert ev.rejections == (
        Rejection(2, "LeaderAndIsr", "STALE_CONTROLLER_EPOCH", 1, 2),
        Rejection(2, "UpdateMetadata", "STALE_BROKER_EPOCH", 3, 3),
    )


def test_parse_state_change_log():
    records = [
        StateChangeRecord(1000, "controller", 1, 1, event="elected"),
        StateChangeRecord(
            1001, "partition", 1, 1, topic="t", partition=0, from_state="NewPartition",
            to_state="OnlinePartition", leader=2, leader_epoch=0, isr=(2, 3),
        ),
        StateChangeRecord(
            1002, "partition", 1, 1, topic="t", partition=0, from_state="OnlinePartition",
            to_state="OfflinePartition", leader=-1, leader_epoch=1,
        ),
        StateChangeRecord(
            1003, "replica", 1, 1, topic="t", partition=0, replica=3,
            from_state="OnlineReplica", to_state="OfflineReplica",
        ),
        StateChangeRecord(2000, "controller", 2, 2, event="elected"),
    ]  # fmt: skip
    text = "\n".join(r.to_json() for r in records) + '\n{"torn'
    sc = parse_state_change_log(text, controller=1)
    assert sc.leader_claims == (LeaderClaim("t", 0, 0, 2, "state-change-1"),)
    assert sc.elected == ((1000, 1, 1), (2000, 2, 2))


def kv(key: bytes, value: bytes, revision: int) -> KV:
    return KV(key, value, revision, revision, 1, 0)


def test_history_from_events():
    ks = Keyspace("c1")
    epoch = metadata_pb2.ControllerEpoch(epoch=2, controller_id=1).SerializeToString()
    state = metadata_pb2.PartitionState(leader=3, leader_epoch=4, isr=[3], controller_epoch=2)
    offline = metadata_pb2.PartitionState(leader=-1, leader_epoch=5, controller_epoch=2)
    result = metadata_pb2.AdminResult(request_id="r1", controller_epoch=2)
    events = [
        WatchEvent(False, kv(ks.controller_epoch, epoch, 10)),
        WatchEvent(
            False, kv(ks.topic("t"), metadata_pb2.TopicAssignment().SerializeToString(), 11)
        ),
        WatchEvent(False, kv(ks.partition_state("t", 1), state.SerializeToString(), 12)),
        WatchEvent(False, kv(ks.partition_state("t", 1), offline.SerializeToString(), 13)),
        WatchEvent(False, kv(ks.result("r1"), result.SerializeToString(), 14)),
        WatchEvent(True, kv(ks.partition_state("t", 1), b"", 15)),
        WatchEvent(False, kv(b"/leasehold/other/controller_epoch", epoch, 16)),
        WatchEvent(False, kv(b"/chaos-history-marker", b"end", 17)),
    ]
    h = history_from_events(ks, events)
    assert h.bumps == (EpochBump(10, 2, 1),)
    assert h.writes == (
        ControllerWrite(12, "/leasehold/c1/topics/t/partitions/1/state", 2),
        ControllerWrite(13, "/leasehold/c1/topics/t/partitions/1/state", 2),
        ControllerWrite(14, "/leasehold/c1/admin/results/r1", 2),
    )
    assert h.leader_claims == (LeaderClaim("t", 1, 4, 3, "etcd@12"),)
    assert h.revisions == 17
