"""Topic creation at scale: a creation step waits until the brokers answered the step before
the one just sent (one step in flight, whether the steps came in one event or many;
``CREATION_WAIT_S`` at most, once per broker until it catches up), and every broker's queued
UpdateMetadata shares the step's encoded partition states instead of holding a copy."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from bench.controller_micro import RecordingChannels, active
from leasehold.broker.v1 import control_pb2
from leasehold.metadata.v1 import metadata_pb2
from services.controller import events as ev
from services.controller.core import BrokerInfo, BrokerRequests, TopicPartition
from services.controller.core.request_batch import UpdateMetadataPartitionState
from services.controller.delivery import wire
from services.controller.delivery.channels import (
    UPDATE_METADATA,
    ChannelSettings,
    ControllerChannelManager,
    _Broker,
)
from services.controller.flows import topics as topics_flow
from services.controller.flows.context import FlowContext
from services.controller.statelog import StateChangeLog


class _Silent(RecordingChannels):
    """Brokers in ``silent`` answer nothing."""

    silent: frozenset[int] = frozenset()

    def _method(self, broker: _Broker, kind: str):
        inner = super()._method(broker, kind)

        def call(request, timeout=None):
            async def invoke():
                if broker.info.id in self.silent:
                    broker.serialize(request)
                    await asyncio.Event().wait()
                return await inner(request, timeout=timeout)

            return asyncio.get_running_loop().create_task(invoke())

        return call


async def test_wait_answered_upto_a_mark_ignores_what_was_queued_after_it() -> None:
    ch = _Silent()
    ch.silent = frozenset({3})
    for b in (1, 2, 3):
        ch.add_broker(BrokerInfo(b, f"h{b}", 9000 + b))
    request = control_pb2.UpdateMetadataRequest()
    ch.send(1, UPDATE_METADATA, request)
    ch.send(2, UPDATE_METADATA, request)
    mark = ch.queued_marks()
    assert mark == {1: 1, 2: 1, 3: 0}
    ch.send(3, UPDATE_METADATA, request)  # after the mark, never answered
    assert await ch.wait_answered(1.0, upto=mark)
    assert ch.unanswered(mark) == frozenset()
    assert not await ch.wait_answered(0.05)  # everything queued: broker 3's is unanswered
    assert ch.unanswered(ch.queued_marks()) == frozenset({3})
    await ch.close()


def _new_topic(name: str, partitions: int, revision: int) -> ev.TopicChange:
    value = metadata_pb2.TopicAssignment(
        topic_id=f"{name:0>32}"[-32:],
        partitions={p: metadata_pb2.ReplicaList(replicas=[1, 2, 3]) for p in range(partitions)},
    )
    return ev.TopicChange((ev.TopicUpdate(name, value, revision),))


async def _create(
    silent: frozenset[int], monkeypatch, events: int = 1
) -> tuple[float, list[bool], int]:
    """Create 8 partitions in steps of 2, as one topic or as ``events`` topics each its own
    event, with brokers ``silent`` answering nothing: the time it took, each step's wait
    (answered in time or not), the partitions created."""
    monkeypatch.setattr(topics_flow, "CREATION_CHUNK", 2)
    monkeypatch.setattr(topics_flow, "CREATION_WAIT_S", 0.2)
    waits: list[bool] = []
    answered = FlowContext.requests_answered

    async def noted(self, timeout_s, upto=None):
        result = await answered(self, timeout_s, upto)
        waits.append(result)
        return result

    monkeypatch.setattr(FlowContext, "requests_answered", noted)
    each = 8 // events
    names = [f"fresh{i}" for i in range(events)]
    with tempfile.TemporaryDirectory() as tmp:
        log = StateChangeLog(str(Path(tmp) / "sc.log"), controller_id=1)
        c, channels = await active(3, log, _Silent)
        assert await channels.wait_answered(5.0)  # the failover's requests
        channels.silent = silent
        loop = asyncio.get_running_loop()
        started = loop.time()
        for i, name in enumerate(names):
            await asyncio.wait_for(c.handle(_new_topic(name, each, 10**6 + i)), 10)
        took = loop.time() - started
        online = sum(
            c.ctx.leader_and_isr(TopicPartition(name, p)) is not None
            for name in names
            for p in range(each)
        )
        await c.deactivate("done")
        log.close()
    return took, waits, online


async def test_a_creation_step_waits_for_the_step_before_the_last_to_be_answered(
    monkeypatch,
) -> None:
    """Steps 3 and 4 each wait for the step two before; answered brokers keep them short."""
    took, waits, online = await _create(frozenset(), monkeypatch)
    assert (waits, online) == ([True, True], 8)


async def test_topics_created_one_event_each_are_paced_as_one_creation(monkeypatch) -> None:
    """Four topics of one step each, four events: the third and fourth wait as steps 3 and 4
    of one topic do (a thousand topics of a thousand partitions queued without bound when
    only the steps of one event were paced)."""
    took, waits, online = await _create(frozenset(), monkeypatch, events=4)
    assert (waits, online) == ([True, True], 8)


async def test_small_topics_created_one_by_one_keep_few_marks(monkeypatch) -> None:
    """Forty topics of one partition (steps of 8): consecutive small steps are noted as one
    (up to a quarter of a step), so the marks kept stay few, and the topics are created."""
    monkeypatch.setattr(topics_flow, "CREATION_CHUNK", 8)
    with tempfile.TemporaryDirectory() as tmp:
        log = StateChangeLog(str(Path(tmp) / "sc.log"), controller_id=1)
        c, channels = await active(3, log, _Silent)
        assert await channels.wait_answered(5.0)
        kept = 0
        for i in range(40):
            await c.handle(_new_topic(f"small{i}", 1, 10**6 + i))
            kept = max(kept, len(c.flows.topics._steps))
        assert all(n == 2 for _, n in c.flows.topics._steps)
        online = sum(
            c.ctx.leader_and_isr(TopicPartition(f"small{i}", 0)) is not None for i in range(40)
        )
        await c.deactivate("done")
        log.close()
    assert (kept, online) == (5, 40)  # one mark a topic: 9


async def test_a_broker_that_does_not_answer_holds_one_step_only(monkeypatch) -> None:
    """Broker 2 answers nothing: the wait before step 3 runs out (the bounded wait), and the
    wait before step 4 no longer counts broker 2; the creation completes."""
    took, waits, online = await _create(frozenset({2}), monkeypatch)
    assert (waits, online) == ([False, True], 8)
    assert took >= 0.2


async def test_a_broker_that_does_not_answer_holds_one_of_many_events_only(monkeypatch) -> None:
    took, waits, online = await _create(frozenset({2}), monkeypatch, events=4)
    assert (waits, online) == ([False, True], 8)


async def test_brokers_that_answer_nothing_hold_the_creation_once(monkeypatch) -> None:
    took, waits, online = await _create(frozenset({1, 2, 3}), monkeypatch)
    assert (waits, online) == ([False, True], 8)


async def test_a_slow_broker_is_waited_for_again_once_it_has_caught_up(monkeypatch) -> None:
    """Broker 2 lets a wait run out, then answers: later steps wait for it again."""
    monkeypatch.setattr(topics_flow, "CREATION_CHUNK", 2)
    monkeypatch.setattr(topics_flow, "CREATION_WAIT_S", 0.2)
    waited: list[frozenset[int]] = []
    answered = FlowContext.requests_answered

    async def noted(self, timeout_s, upto=None):
        waited.append(frozenset(upto))
        return await answered(self, timeout_s, upto)

    monkeypatch.setattr(FlowContext, "requests_answered", noted)
    gate = asyncio.Event()

    class _Held(RecordingChannels):
        def _method(self, broker: _Broker, kind: str):
            inner = super()._method(broker, kind)

            def call(request, timeout=None):
                async def invoke():
                    if broker.info.id == 2:
                        await gate.wait()
                    return await inner(request, timeout=timeout)

                return asyncio.get_running_loop().create_task(invoke())

            return call

    with tempfile.TemporaryDirectory() as tmp:
        log = StateChangeLog(str(Path(tmp) / "sc.log"), controller_id=1)
        gate.set()
        c, channels = await active(3, log, _Held)
        assert await channels.wait_answered(5.0)
        gate.clear()
        for i in range(3):  # the third step's wait runs out on broker 2
            await c.handle(_new_topic(f"a{i}", 2, 10**6 + i))
        assert c.flows.topics._slow.keys() == {2}
        await c.handle(_new_topic("a3", 2, 10**6 + 3))  # not waited for
        gate.set()
        assert await channels.wait_answered(5.0)
        await c.handle(_new_topic("a4", 2, 10**6 + 4))  # caught up: waited for again
        assert not c.flows.topics._slow
        await c.deactivate("done")
        assert not c.flows.topics._steps  # the finished term's marks are dropped
        log.close()
    assert [2 in w for w in waited] == [True, False, True]


async def test_a_broker_that_left_and_came_back_has_answered_the_marks_taken_before() -> None:
    """A broker's counts go on from where its last sender stopped: a mark taken before it left
    is not waited on by its new sender."""
    ch = _Silent()
    ch.silent = frozenset({2})
    for b in (1, 2):
        ch.add_broker(BrokerInfo(b, f"h{b}", 9000 + b))
    request = control_pb2.UpdateMetadataRequest()
    for b in (1, 2):
        ch.send(b, UPDATE_METADATA, request)
    mark = ch.queued_marks()
    assert mark == {1: 1, 2: 1}
    ch.remove_broker(2)
    ch.silent = frozenset()
    ch.add_broker(BrokerInfo(2, "h2", 9002))
    assert ch.queued_marks() == {1: 1, 2: 1}
    assert await ch.wait_answered(1.0, upto=mark)
    assert ch.unanswered(mark) == frozenset()
    ch.send(2, UPDATE_METADATA, request)
    assert await ch.wait_answered(1.0)
    assert ch.queued_marks() == {1: 1, 2: 2}
    await ch.close()


class _Kept(ControllerChannelManager):
    """The real encoding, with what it queues kept instead of sent."""

    def __init__(self) -> None:
        super().__init__(ChannelSettings("ctl", 9190), lambda *a: None)
        self.queued: dict[int, list[tuple[str, object]]] = {}

    def queue(self, broker_id: int, requests) -> bool:
        self.queued.setdefault(broker_id, []).extend((k, r) for k, r in requests if r)
        return True


def test_every_broker_s_update_metadata_shares_the_batch_s_encoded_states() -> None:
    """A broker's queued UpdateMetadata is its own header around the batch's one body of
    states, joined only when gRPC serialises it."""
    brokers = tuple(BrokerInfo(b, "h", 9000 + b, epoch=10 + b) for b in (1, 2, 3))
    states = tuple(
        UpdateMetadataPartitionState(
            TopicPartition("t", p), "id-t", 3, 1, 2, (1, 2, 3), 40 + p, (1, 2, 3), ()
        )
        for p in range(100)
    )
    ch = _Kept()
    ch.send_batch(
        {b.id: BrokerRequests(b.id, b.epoch, 9, 3, (), (), (), states, brokers) for b in brokers}
    )
    ums = [r for b in brokers for k, r in ch.queued[b.id] if k == UPDATE_METADATA]
    assert len(ums) == 3 and all(isinstance(r, wire.EncodedRequest) for r in ums)
    bodies = [max(r.parts, key=len) for r in ums]
    assert len(bodies[0]) > 100 * 10 and all(body is bodies[0] for body in bodies)
    for b, r in zip(brokers, ums, strict=True):
        decoded = control_pb2.UpdateMetadataRequest.FromString(r.payload)
        assert decoded.broker_epoch == b.epoch
        assert [s.partition for s in decoded.partition_states] == list(range(100))
