"""``LeaderEndpoint.wait_ready`` (Kafka's ``awaitReady``) against a real gRPC channel: after a
failed call it waits for the leader's port to accept connections again, instead of the fetcher
building a request for every partition each backoff only to fail."""

from __future__ import annotations

import grpc
import pytest

from leasehold.broker.v1 import broker_pb2_grpc
from leasehold.testing.ports import free_port
from services.broker_agent.follower.leader_endpoint import LeaderEndpoint, LeaderUnreachableError
from services.broker_agent.model import Endpoint


async def test_wait_ready_after_a_failed_call_until_the_leader_listens_again() -> None:
    port = free_port()
    endpoint = LeaderEndpoint(Endpoint(1, "127.0.0.1", port), 2, lambda: 7, timeout_s=1.0)
    server = None
    try:
        assert await endpoint.wait_ready(0.01)  # nothing failed yet: no wait at all
        with pytest.raises(LeaderUnreachableError):
            await endpoint.fetch([], max_wait_ms=0, min_bytes=0, max_bytes=1 << 20)
        assert not await endpoint.wait_ready(0.2)  # nobody listens

        server = grpc.aio.server()
        broker_pb2_grpc.add_BrokerServiceServicer_to_server(
            broker_pb2_grpc.BrokerServiceServicer(), server
        )
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        # The channel reconnects within its backoff (at most 2 s: ``CHANNEL_OPTIONS``).
        assert await endpoint.wait_ready(5.0)
        # A call refused by a connected leader (UNIMPLEMENTED: the base servicer) fails too,
        # but the channel is up: no wait.
        with pytest.raises(LeaderUnreachableError):
            await endpoint.fetch([], max_wait_ms=0, min_bytes=0, max_bytes=1 << 20)
        assert await endpoint.wait_ready(0.01)
    finally:
        await endpoint.close()
        if server is not None:
            await server.stop(0)
