"""``observe.poll_topics`` against a scripted broker: a topic is done once an answer shows all its
partitions led as wanted, later calls name only the topics not yet done, and the time returned
is that of the answer completing the last one (its arrival, before the observer checks it)."""

from __future__ import annotations

import time

import grpc
import pytest

from bench.observe import poll_topics, warm_metadata
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.common.v1 import common_pb2


def _topic(name: str, leaders: list[int], error: int = 0) -> broker_pb2.MetadataTopic:
    return broker_pb2.MetadataTopic(
        name=name,
        partitions=[
            broker_pb2.MetadataPartition(partition=p, leader=leader, error_code=error)
            for p, leader in enumerate(leaders)
        ],
    )


class _Scripted(broker_pb2_grpc.BrokerServiceServicer):
    """Answers the n-th Metadata call with ``script[n]`` (the last one from then on), keeping
    only the topics the call asked for; records what each call asked for and when."""

    def __init__(self, script: list[list[broker_pb2.MetadataTopic]]) -> None:
        self.script = script
        self.asked: list[list[str]] = []
        self.answered: list[float] = []

    async def Metadata(self, request, context):
        step = self.script[min(len(self.asked), len(self.script) - 1)]
        self.asked.append(list(request.topics))
        wanted = set(request.topics)
        self.answered.append(time.time())
        return broker_pb2.MetadataResponse(topics=[t for t in step if t.name in wanted])


async def _serve(servicer: _Scripted) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server()
    broker_pb2_grpc.add_BrokerServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


NOT_LED = common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE


@pytest.mark.parametrize(
    "script, asked",
    [
        # a done at once, b after two more answers: only b is asked for after the first.
        (
            [
                [_topic("a", [2, 3]), _topic("b", [1, 2])],
                [_topic("a", [2, 3]), _topic("b", [1, 3])],
                [_topic("a", [2, 3]), _topic("b", [2, 3])],
            ],
            [["a", "b"], ["b"], ["b"]],
        ),
        # A partition with an error, or a topic listing too few partitions, is not done.
        (
            [
                [_topic("a", [2, 3], error=NOT_LED), _topic("b", [2])],
                [_topic("a", [2, 3]), _topic("b", [2])],
                [_topic("a", [2, 3]), _topic("b", [2, 3])],
            ],
            [["a", "b"], ["a", "b"], ["b"]],
        ),
        # A topic missing from an answer stays pending.
        (
            [[_topic("b", [2, 3])], [_topic("a", [3, 2])]],
            [["a", "b"], ["a"]],
        ),
    ],
)
async def test_poll_topics_asks_only_for_topics_not_done(script, asked) -> None:
    servicer = _Scripted(script)
    server, address = await _serve(servicer)
    try:
        done = await poll_topics(
            {2: address}, {"a": 2, "b": 2}, lambda p: p.leader != 1, interval=0.001, timeout=10
        )
    finally:
        await server.stop(None)
    assert servicer.asked == asked
    assert servicer.answered[-1] <= done[2]


async def test_poll_topics_times_out_naming_what_is_pending() -> None:
    servicer = _Scripted([[_topic("a", [2, 3]), _topic("b", [1, 1])]])
    server, address = await _serve(servicer)
    try:
        with pytest.raises(TimeoutError, match=r"\['b'\] not done"):
            await poll_topics(
                {2: address}, {"a": 2, "b": 2}, lambda p: p.leader != 1, interval=0.01, timeout=0.2
            )
    finally:
        await server.stop(None)


class _Counting(broker_pb2_grpc.BrokerServiceServicer):
    def __init__(self) -> None:
        self.calls: list[bool] = []  # all_topics of each Metadata call

    async def Metadata(self, request, context):
        self.calls.append(request.all_topics)
        return broker_pb2.MetadataResponse(topics=[_topic("a", [2])])


async def test_warm_metadata_asks_each_broker_once_for_every_topic() -> None:
    brokers = [_Counting(), _Counting()]
    served = [await _serve(b) for b in brokers]
    try:
        await warm_metadata({i: address for i, (_, address) in enumerate(served)})
    finally:
        for server, _ in served:
            await server.stop(0)
    assert [b.calls for b in brokers] == [[True], [True]]


async def test_the_time_is_the_answers_arrival_not_the_end_of_checking_it() -> None:
    """Checking every partition is the observer's own time: a slow check does not count."""
    servicer = _Scripted([[_topic("a", [2, 3])]])
    server, address = await _serve(servicer)
    checked: list[float] = []

    def slow_ok(p: broker_pb2.MetadataPartition) -> bool:
        time.sleep(0.05)
        checked.append(time.time())
        return True

    try:
        done = await poll_topics({2: address}, {"a": 2}, slow_ok, interval=0.001, timeout=10)
    finally:
        await server.stop(None)
    assert servicer.answered[-1] <= done[2] < checked[0]
