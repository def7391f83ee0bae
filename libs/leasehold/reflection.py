"""Server reflection under both names clients ask for: ``grpc.reflection.v1`` and ``v1alpha``.

grpcio-reflection serves only ``grpc.reflection.v1alpha.ServerReflection``; grpcurl, Postman and
current gRPC tools ask ``v1`` first. The two protocols have the same messages with the same field
numbers (v1 is v1alpha renamed), so one servicer answers both: v1 requests are read with the
v1alpha classes and the answers are the same bytes. The v1 file descriptor (generated from the
vendored ``third_party/protos/grpc/reflection/v1/reflection.proto``) is imported so that
reflection can describe the v1 service too.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from leasehold.vendor.grpc.reflection.v1 import reflection_pb2 as v1_pb2

V1_SERVICE_NAME = v1_pb2.DESCRIPTOR.services_by_name["ServerReflection"].full_name
V1ALPHA_SERVICE_NAME = reflection.SERVICE_NAME
SERVICE_NAMES = (V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME)


def enable(service_names: Sequence[str], server: grpc.aio.Server) -> None:
    """Serve reflection v1 and v1alpha for ``service_names`` (both reflection names added)."""
    names = [*service_names, *(n for n in SERVICE_NAMES if n not in service_names)]
    servicer = reflection.aio.ReflectionServicer(names)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1 = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(V1_SERVICE_NAME, {"ServerReflectionInfo": v1}),)
    )
