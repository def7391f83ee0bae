"""``nothing_queued``: a control request is marked when, as gRPC serialises it, it is its batch's
last, its broker's queue is empty and nobody holds ``expect_more``; the mark is the generated
field's own encoding, so the broker reads it whatever the message."""

from __future__ import annotations

import pytest

from leasehold.broker.v1 import control_pb2
from services.controller.core import BrokerInfo
from services.controller.delivery import wire
from services.controller.delivery.channels import (
    NOTHING_QUEUED,
    ChannelSettings,
    ControllerChannelManager,
    _Batch,
    _Broker,
)

_MESSAGES = (
    control_pb2.LeaderAndIsrRequest,
    control_pb2.StopReplicaRequest,
    control_pb2.UpdateMetadataRequest,
)


@pytest.mark.parametrize("message", _MESSAGES)
def test_the_mark_is_the_fields_encoding_in_every_request(message) -> None:
    assert message(nothing_queued=True).SerializeToString() == NOTHING_QUEUED
    plain = message(controller_id=1, controller_epoch=7, broker_epoch=9).SerializeToString()
    marked = message.FromString(plain + NOTHING_QUEUED)
    assert marked.nothing_queued and marked.controller_epoch == 7
    assert not message.FromString(plain).nothing_queued


def _marked(broker: _Broker, request: object) -> bool:
    message = request.message if isinstance(request, wire.EncodedRequest) else type(request)
    return message.FromString(broker.serialize(request)).nothing_queued  # type: ignore[union-attr]


def test_marked_only_when_last_of_batch_queue_empty_and_nothing_expected() -> None:
    manager = ControllerChannelManager(ChannelSettings("127.0.0.1", 1), lambda *a: None)
    info = BrokerInfo(2, "127.0.0.1", 2)
    broker = _Broker(info, None, more_coming=manager.more_coming)  # type: ignore[arg-type]
    stop = control_pb2.StopReplicaRequest(controller_epoch=3)
    encoded = wire.EncodedRequest(
        (control_pb2.UpdateMetadataRequest(controller_epoch=3).SerializeToString(),), 1, 3, 4, 0
    )

    broker.last_of_batch = False  # a LeaderAndIsr with its UpdateMetadata behind it
    assert not _marked(broker, stop) and not _marked(broker, encoded)

    broker.last_of_batch = True
    assert _marked(broker, stop) and _marked(broker, encoded)

    broker.queue.put_nowait(_Batch((("StopReplica", stop),)))  # another batch behind it
    assert not _marked(broker, encoded)
    broker.queue.get_nowait()

    release = manager.expect_more()  # a flow about to queue more
    second = manager.expect_more()
    assert not _marked(broker, encoded)
    release()
    release()  # releasing twice counts once: the other holder still holds
    assert manager.more_coming() and not _marked(broker, encoded)
    second()
    assert not manager.more_coming() and _marked(broker, encoded)
