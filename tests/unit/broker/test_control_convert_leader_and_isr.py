"""Decoding a LeaderAndIsr builds each partition's value without the dataclass constructor: the
values must be exactly what the constructor makes, and the constructor is used again as soon
as the model's fields change."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from leasehold.broker.v1 import control_pb2
from services.broker_agent import control_convert
from services.broker_agent.model import LeaderAndIsrPartition, TopicPartition

STATES = [
    dict(topic="a", partition=0, leader=1, leader_epoch=3, isr=[1, 2], replicas=[1, 2, 3]),
    dict(
        topic="a.b-c_d",
        partition=7,
        controller_epoch=4,
        leader=2,
        leader_epoch=9,
        isr=[2],
        partition_epoch=11,
        replicas=[2, 3, 1],
        is_new=True,
        topic_id="id-x",
        adding_replicas=[4],
        removing_replicas=[1],
        leader_recovery_state=2,
    ),
    dict(topic="a", partition=1, leader=-1, leader_epoch=0, isr=[], replicas=[]),
    dict(topic="z", partition=2, leader=3, leader_epoch=1, isr=[1, 2], replicas=[1, 2, 3]),
]


def request() -> control_pb2.LeaderAndIsrRequest:
    return control_pb2.LeaderAndIsrRequest(
        controller_id=5,
        controller_epoch=4,
        broker_epoch=17,
        partition_states=[control_pb2.LeaderAndIsrPartitionState(**s) for s in STATES],
    )


def constructed(s: dict) -> LeaderAndIsrPartition:
    """What the dataclass's own constructor makes of one state."""
    lists = ("isr", "replicas", "adding_replicas", "removing_replicas")
    return LeaderAndIsrPartition(**{k: tuple(v) if k in lists else v for k, v in s.items()})


@pytest.mark.parametrize("index", range(len(STATES)))
def test_each_partition_is_what_the_constructor_makes(index):
    got = control_convert.leader_and_isr_from_pb(request()).partitions[index]
    expected = constructed(STATES[index])
    assert type(got) is LeaderAndIsrPartition
    assert vars(got) == vars(expected)
    assert (got, hash(got), repr(got)) == (expected, hash(expected), repr(expected))
    assert got.tp == TopicPartition(STATES[index]["topic"], STATES[index]["partition"])
    with pytest.raises(AttributeError):  # still frozen
        got.leader = 4  # type: ignore[misc]


def test_the_request_fields_and_shared_lists():
    domain = control_convert.leader_and_isr_from_pb(request())
    assert (domain.controller_id, domain.controller_epoch, domain.broker_epoch) == (5, 4, 17)
    first, _, _, last = domain.partitions
    # Equal lists are one object: they outlive the request as partition state.
    assert first.replicas is last.replicas and first.isr is last.isr


def test_a_changed_model_is_built_by_its_constructor(monkeypatch):
    @dataclass(frozen=True)
    class Extended(LeaderAndIsrPartition):
        note: str = "built by __init__"
        notes: list = field(default_factory=list, compare=False)

    monkeypatch.setattr(control_convert, "LeaderAndIsrPartition", Extended)
    got = control_convert.leader_and_isr_from_pb(request()).partitions
    assert [type(p) for p in got] == [Extended] * len(STATES)
    assert [p.note for p in got] == ["built by __init__"] * len(STATES)
    assert [vars(p) | {"note": None, "notes": None} for p in got] == [
        vars(constructed(s)) | {"note": None, "notes": None} for s in STATES
    ]


def test_the_current_model_is_built_without_its_constructor(monkeypatch):
    expected = [constructed(s) for s in STATES]

    def refuse(*_args, **_kwargs):
        raise AssertionError("the constructor ran: the fast path no longer matches the model")

    monkeypatch.setattr(LeaderAndIsrPartition, "__init__", refuse)
    assert list(control_convert.leader_and_isr_from_pb(request()).partitions) == expected
