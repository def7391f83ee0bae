"""ControllerService (broker -> controller): translates protobuf to events and back, nothing more.

Malformed requests fail with INVALID_ARGUMENT before anything is queued. A standby answers
NOT_CONTROLLER in the response's ``error_code`` (an in-band error: the broker re-discovers the
active controller and retries, contract 8). Otherwise the request becomes an event carrying a
future, handled on the controller's event loop in order with everything else (under the call's
trace context, so the handling joins the broker's trace).
"""

from __future__ import annotations

import asyncio

import grpc

from leasehold import telemetry
from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.errors import InvalidRequestError
from services.controller.controller import Controller
from services.controller.event_loop import EventLoop
from services.controller.events import AlterPartition, ControlledShutdown
from services.controller.internal_topics import InternalTopics

SERVICE_NAME = controller_pb2.DESCRIPTOR.services_by_name["ControllerService"].full_name
_INVALID = common_pb2.ERROR_CODE_INVALID_REQUEST
_NOT_CONTROLLER = common_pb2.ERROR_CODE_NOT_CONTROLLER
_NOT_CONTROLLER_MSG = "This controller is not the active controller."


def _check_alter_partition(req: controller_pb2.AlterPartitionRequest) -> None:
    if req.broker_id < 0:
        raise InvalidRequestError(_INVALID, f"broker_id {req.broker_id} is negative")
    if not req.topics:
        raise InvalidRequestError(_INVALID, "AlterPartition names no topic")
    for t in req.topics:
        if not t.topic:
            raise InvalidRequestError(_INVALID, "AlterPartition has a topic without a name")
        if not t.partitions:
            raise InvalidRequestError(_INVALID, f"AlterPartition names no partition of {t.topic}")
        for p in t.partitions:
            if p.partition < 0:
                raise InvalidRequestError(_INVALID, f"partition {p.partition} is negative")
            if any(s.broker_id < 0 for s in p.new_isr_with_epochs):
                raise InvalidRequestError(_INVALID, f"negative broker id in the ISR of {t.topic}")


class ControllerServicer(controller_pb2_grpc.ControllerServiceServicer):
    def __init__(
        self, controller: Controller, events: EventLoop, internal_topics: InternalTopics
    ) -> None:
        self.controller = controller
        self.events = events
        self.internal_topics = internal_topics

    async def CreateInternalTopic(
        self, request: controller_pb2.CreateInternalTopicRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.CreateInternalTopicResponse:
        if request.broker_id < 0:
            raise InvalidRequestError(_INVALID, f"broker_id {request.broker_id} is negative")
        if not self.controller.active:
            return controller_pb2.CreateInternalTopicResponse(
                error_code=_NOT_CONTROLLER, error_message=_NOT_CONTROLLER_MSG
            )
        code, message, created = await self.internal_topics.create(request.topic)
        return controller_pb2.CreateInternalTopicResponse(
            error_code=code, error_message=message, created=created
        )

    async def AlterPartition(
        self, request: controller_pb2.AlterPartitionRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.AlterPartitionResponse:
        _check_alter_partition(request)
        if not self.controller.active:
            return controller_pb2.AlterPartitionResponse(
                error_code=_NOT_CONTROLLER, error_message=_NOT_CONTROLLER_MSG
            )
        future = asyncio.get_running_loop().create_future()
        self.events.put(AlterPartition(request, future), telemetry.current_context())
        return await future

    async def ControlledShutdown(
        self, request: controller_pb2.ControlledShutdownRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.ControlledShutdownResponse:
        if request.broker_id < 0:
            raise InvalidRequestError(_INVALID, f"broker_id {request.broker_id} is negative")
        if not self.controller.active:
            return controller_pb2.ControlledShutdownResponse(
                error_code=_NOT_CONTROLLER, error_message=_NOT_CONTROLLER_MSG
            )
        future = asyncio.get_running_loop().create_future()
        self.events.put(ControlledShutdown(request, future), telemetry.current_context())
        return await future
