"""The shared server bootstrap: health per service, reflection, error mapping, graceful stop."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from leasehold.client.errors import details_of
from leasehold.common.v1 import common_pb2
from leasehold.config import CommonConfig
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.errors import InvalidRequestError
from leasehold.server import Service, ServiceRunner
from leasehold.testing.ports import free_port

SERVICE = "leasehold.controller.v1.ControllerService"


class _Servicer(controller_pb2_grpc.ControllerServiceServicer):
    async def ControlledShutdown(self, request, context):
        if request.broker_id < 0:
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_INVALID_REQUEST, f"broker id {request.broker_id} is negative"
            )
        if request.broker_id == 99:
            raise RuntimeError("boom")
        return controller_pb2.ControlledShutdownResponse()


@pytest.fixture
async def runner():
    servicer = _Servicer()
    service = Service(
        names=[SERVICE],
        register=lambda s: controller_pb2_grpc.add_ControllerServiceServicer_to_server(servicer, s),
    )
    r = ServiceRunner(
        CommonConfig(host="127.0.0.1", port=0, health_port=free_port(), grace_seconds=0.5), service
    )
    await r.start()
    yield r
    await r.stop()


async def test_health_reflection_and_error_mapping(runner):
    async with grpc.aio.insecure_channel(f"127.0.0.1:{runner.port}") as ch:
        health = health_pb2_grpc.HealthStub(ch)
        resp = await health.Check(health_pb2.HealthCheckRequest(service=SERVICE))
        assert resp.status == health_pb2.HealthCheckResponse.SERVING

        refl = reflection_pb2_grpc.ServerReflectionStub(ch)
        call = refl.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
        names = set()
        async for r in call:
            names |= {s.name for s in r.list_services_response.service}
        assert SERVICE in names and "grpc.health.v1.Health" in names

        stub = controller_pb2_grpc.ControllerServiceStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.ControlledShutdown(controller_pb2.ControlledShutdownRequest(broker_id=-1))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "negative" in err.value.details()
        assert details_of(err.value).reason == "INVALID_REQUEST"
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.ControlledShutdown(controller_pb2.ControlledShutdownRequest(broker_id=99))
        assert err.value.code() == grpc.StatusCode.INTERNAL
        assert err.value.details() == "internal error: RuntimeError"  # no traceback, no text
        assert details_of(err.value).reason == "UNKNOWN_SERVER_ERROR"

        await runner.set_serving(False)
        resp = await health.Check(health_pb2.HealthCheckRequest(service=SERVICE))
        assert resp.status == health_pb2.HealthCheckResponse.NOT_SERVING


async def list_services(channel, version: str) -> set[str]:
    call = channel.stream_stream(
        f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    return {s.name for r in [await call.read()] for s in r.list_services_response.service}


async def test_reflection_answers_v1_and_v1alpha_and_describes_both(runner):
    async with grpc.aio.insecure_channel(f"127.0.0.1:{runner.port}") as ch:
        for version in ("v1", "v1alpha"):
            names = await list_services(ch, version)
            assert {SERVICE, "grpc.health.v1.Health"} <= names
            assert {"grpc.reflection.v1.ServerReflection",
                    "grpc.reflection.v1alpha.ServerReflection"} <= names  # fmt: skip
        # grpcurl's `describe` asks for the file holding a symbol, over v1 first.
        call = ch.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )(
            iter(
                [
                    reflection_pb2.ServerReflectionRequest(
                        file_containing_symbol="grpc.reflection.v1.ServerReflection"
                    )
                ]
            )
        )
        reply = await call.read()
        (raw,) = reply.file_descriptor_response.file_descriptor_proto
        assert descriptor_pb2.FileDescriptorProto.FromString(raw).package == "grpc.reflection.v1"


async def test_separate_health_port_serves_only_health(runner):
    async with grpc.aio.insecure_channel(f"127.0.0.1:{runner.health_port}") as ch:
        resp = await health_pb2_grpc.HealthStub(ch).Check(
            health_pb2.HealthCheckRequest(service=SERVICE)
        )
        assert resp.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await controller_pb2_grpc.ControllerServiceStub(ch).ControlledShutdown(
                controller_pb2.ControlledShutdownRequest(broker_id=1)
            )
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
