"""Peer roles from a client certificate, and who may call what (leasehold.peer_auth).

The auth contexts below have the shape gRPC gives a servicer for a mutual-TLS call
(``x509_common_name``, ``peer_uri``, ``x509_subject_alternative_name``, ...).
"""

from __future__ import annotations

import grpc
import pytest

from leasehold.broker.v1 import broker_pb2, control_pb2
from leasehold.controller.v1 import controller_pb2
from leasehold.peer_auth import (
    SERVICE_ROLES,
    Identity,
    decide,
    peer_identities,
    peer_roles,
    service_of,
)


def _auth(cn: str | None = None, *uris: str, dns: tuple[str, ...] = ()) -> dict:
    out: dict[str, list[bytes]] = {}
    if cn is not None:
        out["x509_common_name"] = [cn.encode()]
        out["x509_pem_cert"] = [b"-----BEGIN CERTIFICATE-----..."]
    if uris:
        out["peer_uri"] = [u.encode() for u in uris]
    sans = [*dns, *uris]
    if sans:
        out["x509_subject_alternative_name"] = [s.encode() for s in sans]
    return out


@pytest.mark.parametrize(
    ("auth", "roles"),
    [
        ({}, set()),
        (_auth("controller"), {"controller"}),
        (_auth("controller-1"), {"controller"}),
        (_auth("controller.leasehold.svc"), {"controller"}),
        (_auth("broker-3"), {"broker"}),
        (_auth("broker-agent-2"), {"broker"}),
        (_auth("Broker-Agent-2"), {"broker"}),
        (_auth("admin"), {"admin"}),
        (_auth("controllers"), set()),
        (_auth("brokerage-1"), set()),
        (_auth("client-1"), set()),
        (_auth("x", "spiffe://leasehold/controller/2"), {"controller"}),
        (_auth("x", "spiffe://cluster.local/broker/7"), {"broker"}),
        (_auth("x", "spiffe://leasehold/broker-agent"), {"broker"}),
        (_auth("x", "spiffe://leasehold/ns/default/sa/controller"), set()),
        (_auth("x", "https://leasehold/controller/1"), set()),
        (_auth("admin", "spiffe://leasehold/broker/1"), {"admin", "broker"}),
        (_auth("x", dns=("controller-1", "localhost")), set()),
    ],
)
def test_roles_come_from_the_common_name_or_a_spiffe_uri(auth, roles):
    assert peer_roles(auth) == roles


CONTROL = "/leasehold.broker.v1.BrokerControlService/LeaderAndIsr"
ALTER = "/leasehold.controller.v1.ControllerService/AlterPartition"
PRODUCE = "/leasehold.broker.v1.BrokerService/Produce"
HEALTH = "/grpc.health.v1.Health/Check"


@pytest.mark.parametrize(
    ("method", "auth", "refusal"),
    [
        (CONTROL, _auth("controller-1"), None),
        (CONTROL, _auth("broker-1"), grpc.StatusCode.PERMISSION_DENIED),
        (CONTROL, _auth("admin"), grpc.StatusCode.PERMISSION_DENIED),
        (CONTROL, _auth("client"), grpc.StatusCode.PERMISSION_DENIED),
        (CONTROL, {}, grpc.StatusCode.UNAUTHENTICATED),
        (ALTER, _auth("broker-2"), None),
        (ALTER, _auth("x", "spiffe://leasehold/broker/2"), None),
        (ALTER, _auth("controller-1"), grpc.StatusCode.PERMISSION_DENIED),
        (ALTER, {}, grpc.StatusCode.UNAUTHENTICATED),
        (PRODUCE, _auth("client"), None),
        (PRODUCE, {}, None),
        (HEALTH, {}, None),
    ],
)
def test_only_controllers_may_control_brokers_and_only_brokers_call_the_controller(
    method, auth, refusal
):
    outcome = decide(method, auth, SERVICE_ROLES)
    assert (outcome.code if outcome else None) == refusal


@pytest.mark.parametrize(
    ("auth", "identities"),
    [
        (_auth("controller-1"), {Identity("controller", 1)}),
        (_auth("broker-agent-2"), {Identity("broker", 2)}),
        (_auth("broker"), {Identity("broker")}),
        (_auth("broker-x"), {Identity("broker")}),
        (_auth("x", "spiffe://leasehold/broker/7"), {Identity("broker", 7)}),
        (_auth("x", "spiffe://leasehold/broker/broker-agent-7"), {Identity("broker", 7)}),
        (_auth("x", "spiffe://leasehold/broker/seven"), {Identity("broker")}),
        (_auth("x", "spiffe://other-cluster/broker/7"), set()),  # another trust domain
    ],
)
def test_identities_name_the_id_in_the_cluster_trust_domain(auth, identities):
    assert peer_identities(auth, trust_domain="leasehold") == identities


SHUTDOWN = "/leasehold.controller.v1.ControllerService/ControlledShutdown"
UPDATE = "/leasehold.broker.v1.BrokerControlService/UpdateMetadata"
FETCH = "/leasehold.broker.v1.BrokerService/Fetch"
B1 = _auth("x", "spiffe://leasehold/broker/1")


@pytest.mark.parametrize(
    ("method", "auth", "request_", "refusal"),
    [
        (SHUTDOWN, B1, controller_pb2.ControlledShutdownRequest(broker_id=1), None),
        # The issue's attack: broker 2's certificate shutting broker 1 down.
        (
            SHUTDOWN,
            _auth("x", "spiffe://leasehold/broker/2"),
            controller_pb2.ControlledShutdownRequest(broker_id=1),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (
            ALTER,
            _auth("broker-2"),
            controller_pb2.AlterPartitionRequest(broker_id=1),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (  # a broker certificate without an id speaks for no broker
            ALTER,
            _auth("broker"),
            controller_pb2.AlterPartitionRequest(broker_id=1),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (UPDATE, _auth("controller-1"), control_pb2.UpdateMetadataRequest(controller_id=1), None),
        (
            UPDATE,
            _auth("controller-2"),
            control_pb2.UpdateMetadataRequest(controller_id=1),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (FETCH, _auth("client"), broker_pb2.FetchRequest(replica_id=-1), None),
        (FETCH, _auth("client"), broker_pb2.FetchRequest(), None),  # a consumer: no replica id
        (FETCH, B1, broker_pb2.FetchRequest(replica_id=1), None),
        (
            FETCH,
            _auth("client"),
            broker_pb2.FetchRequest(replica_id=1),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (
            FETCH,
            _auth("x", "spiffe://leasehold/broker/2"),
            broker_pb2.FetchRequest(replica_id=1),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (FETCH, {}, broker_pb2.FetchRequest(replica_id=1), grpc.StatusCode.UNAUTHENTICATED),
    ],
)
def test_a_request_speaking_for_an_id_needs_a_certificate_naming_it(
    method, auth, request_, refusal
):
    outcome = decide(method, auth, request=request_, trust_domain="leasehold")
    assert (outcome.code if outcome else None) == refusal
    if outcome is not None and refusal == grpc.StatusCode.PERMISSION_DENIED:
        assert len(outcome.message) < 200


@pytest.mark.parametrize(
    ("method", "service"),
    [
        (CONTROL, "leasehold.broker.v1.BrokerControlService"),
        (HEALTH, "grpc.health.v1.Health"),
        ("leasehold.x.v1.S/M", "leasehold.x.v1.S"),
    ],
)
def test_service_of_a_method(method, service):
    assert service_of(method) == service
