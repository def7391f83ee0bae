"""Who may call what: a peer's role and id from its client certificate, checked on every call.

Transport security (mutual TLS) says a caller holds a certificate our CA signed; it does not say
the caller is a controller, nor which broker it is. Three rules follow from the certificate:

* **Role.** ``BrokerControlService`` (LeaderAndIsr, StopReplica, UpdateMetadata) may only be
  called by a controller, ``ControllerService`` (AlterPartition, ControlledShutdown) only by a
  broker. Everything else (BrokerService, AdminService, health, reflection) is open to any client
  the CA vouches for.
* **Id.** A request that names its sender is checked against the certificate's id:
  AlterPartition and ControlledShutdown name ``broker_id``; the control requests name
  ``controller_id``; a Fetch, ListOffsets or OffsetsForLeaderEpoch with ``replica_id >= 0`` speaks
  for that follower broker. A broker certificate for broker 2 cannot act as broker 1.
* **Trust domain.** SPIFFE ids of another trust domain (another cluster) grant nothing.

The identity of a peer comes from its certificate, by this convention (deploy/README.md):

* a URI SAN ``spiffe://<trust-domain>/<role>[/<id>]`` (e.g. ``spiffe://leasehold/broker/2``).
  Certificates issued per pod (cert-manager's CSI driver) name the pod instead: a broker's
  StatefulSet pod name ends in ``-<id>`` (``broker-agent-2``); a controller's Deployment pod
  name stands for the id the controller derives from it (``--controller-id-from-hostname``:
  ``hostname_id``); or
* the subject common name ``<role>``, ``<role>-<id>`` or ``<role>.<anything>``.

Roles are ``controller``, ``broker`` and ``admin``; ``broker-agent`` is the same as ``broker``.
A call without a client certificate is UNAUTHENTICATED; the wrong role, or an id that is not the
certificate's, PERMISSION_DENIED. The checks run whenever the server uses TLS; a plaintext
server (``--insecure``, with a warning) has no identities to check: there, a request's claims are
checked only against etcd (``services/broker_agent/control_fence.py``).
"""

from __future__ import annotations

import logging
import re
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import grpc

log = logging.getLogger(__name__)

CONTROLLER = "controller"
BROKER = "broker"
ADMIN = "admin"
_ALIASES = MappingProxyType(
    {CONTROLLER: CONTROLLER, BROKER: BROKER, "broker-agent": BROKER, ADMIN: ADMIN}
)
_TRAILING_ID = re.compile(r"(?:^|-)(\d{1,10})$")

# Full gRPC service name -> the roles that may call it. Services not listed are open to any
# authenticated peer.
SERVICE_ROLES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "leasehold.broker.v1.BrokerControlService": frozenset({CONTROLLER}),
        "leasehold.controller.v1.ControllerService": frozenset({BROKER}),
    }
)


def _claims_broker(request: Any) -> tuple[str, int] | None:
    return BROKER, request.broker_id


def _claims_controller(request: Any) -> tuple[str, int] | None:
    return CONTROLLER, request.controller_id


def _claims_replica(request: Any) -> tuple[str, int] | None:
    """A follower's request names its broker in ``replica_id``; a consumer's leaves it out (or,
    from clients older than its presence, sends -1)."""
    if not request.HasField("replica_id") or request.replica_id < 0:
        return None
    return BROKER, request.replica_id


# Full method name -> the (role, id) the request speaks for, if any; the certificate must have it.
Claim = Callable[[Any], "tuple[str, int] | None"]
METHOD_CLAIMS: Mapping[str, Claim] = MappingProxyType(
    {
        "/leasehold.controller.v1.ControllerService/AlterPartition": _claims_broker,
        "/leasehold.controller.v1.ControllerService/ControlledShutdown": _claims_broker,
        "/leasehold.controller.v1.ControllerService/CreateInternalTopic": _claims_broker,
        "/leasehold.broker.v1.BrokerControlService/LeaderAndIsr": _claims_controller,
        "/leasehold.broker.v1.BrokerControlService/StopReplica": _claims_controller,
        "/leasehold.broker.v1.BrokerControlService/UpdateMetadata": _claims_controller,
        "/leasehold.broker.v1.BrokerService/Fetch": _claims_replica,
        "/leasehold.broker.v1.BrokerService/ListOffsets": _claims_replica,
        "/leasehold.broker.v1.BrokerService/OffsetsForLeaderEpoch": _claims_replica,
    }
)

AuthContext = Mapping[str, Sequence[bytes]]


@dataclass(frozen=True)
class Identity:
    """One identity a certificate names: a role and, for brokers and controllers, an id."""

    role: str
    id: int | None = None

    def __str__(self) -> str:
        return self.role if self.id is None else f"{self.role}/{self.id}"


def hostname_id(hostname: str) -> int:
    """A controller's id from its pod name: CRC-32 of the UTF-8 bytes, top bit cleared."""
    return zlib.crc32(hostname.encode()) & 0x7FFFFFFF


def _id_of(role: str, text: str) -> int | None:
    """The id an identity's instance segment names (see the module doc), or None."""
    if text.isascii() and text.isdigit() and len(text) <= 10:
        return int(text)
    if role == CONTROLLER:
        return hostname_id(text)
    match = _TRAILING_ID.search(text)
    return int(match.group(1)) if match else None


def _identity_of_name(name: str) -> Identity | None:
    """``controller``, ``controller-1``, ``broker-agent-2``, ``admin.ns.svc`` -> the identity."""
    name = name.strip().lower()
    for alias in sorted(_ALIASES, key=len, reverse=True):  # "broker-agent" before "broker"
        if name == alias:
            return Identity(_ALIASES[alias])
        if name.startswith(alias + "."):
            return Identity(_ALIASES[alias])
        if name.startswith(alias + "-"):
            rest = name[len(alias) + 1 :]
            return Identity(_ALIASES[alias], int(rest) if rest.isdigit() else None)
    return None


def _identity_of_uri(uri: str, trust_domain: str | None) -> Identity | None:
    """``spiffe://<trust-domain>/<role>[/<id>]`` -> the identity; any other URI -> None."""
    if not uri.startswith("spiffe://"):
        return None
    domain, _, path = uri[len("spiffe://") :].partition("/")
    if trust_domain is not None and domain != trust_domain:
        return None
    segments = path.split("/")
    role = _ALIASES.get(segments[0].lower())
    if role is None:
        return None
    ident = _id_of(role, segments[1]) if len(segments) > 1 and segments[1] else None
    return Identity(role, ident)


def peer_identities(auth: AuthContext, trust_domain: str | None = None) -> frozenset[Identity]:
    """The identities a peer's certificate names (empty for none or for an unknown identity)."""

    def values(key: str) -> list[str]:
        return [v.decode(errors="replace") for v in auth.get(key, ())]

    uris = values("peer_uri") + values("peer_spiffe_id")
    uris += [s for s in values("x509_subject_alternative_name") if s.startswith("spiffe://")]
    found = {i for u in uris if (i := _identity_of_uri(u, trust_domain)) is not None}
    found |= {i for n in values("x509_common_name") if (i := _identity_of_name(n)) is not None}
    return frozenset(found)


def peer_roles(auth: AuthContext, trust_domain: str | None = None) -> frozenset[str]:
    """The roles a peer's certificate grants."""
    return frozenset(i.role for i in peer_identities(auth, trust_domain))


def has_certificate(auth: AuthContext) -> bool:
    return bool(auth.get("x509_pem_cert") or auth.get("x509_common_name"))


def service_of(method: str) -> str:
    """``/pkg.Service/Method`` -> ``pkg.Service``."""
    return method.lstrip("/").split("/", 1)[0]


@dataclass(frozen=True)
class Refusal:
    code: grpc.StatusCode
    message: str


def decide(
    method: str,
    auth: AuthContext,
    rules: Mapping[str, frozenset[str]] = SERVICE_ROLES,
    request: Any = None,
    claims: Mapping[str, Claim] = METHOD_CLAIMS,
    trust_domain: str | None = None,
) -> Refusal | None:
    """None if the call may go ahead, else why it is refused."""
    allowed = rules.get(service_of(method))
    claim = claims.get(method)
    claimed = claim(request) if claim is not None and request is not None else None
    if allowed is None and claimed is None:
        return None
    if not has_certificate(auth):
        return Refusal(grpc.StatusCode.UNAUTHENTICATED, f"{method} needs a client certificate")
    identities = peer_identities(auth, trust_domain)
    if allowed is not None and not any(i.role in allowed for i in identities):
        return Refusal(
            grpc.StatusCode.PERMISSION_DENIED,
            f"{method} may only be called by: {', '.join(sorted(allowed))}",
        )
    if claimed is not None and Identity(*claimed) not in identities:
        role, ident = claimed
        ids = sorted(str(i.id) for i in identities if i.role == role and i.id is not None)
        held = f"{role} {', '.join(ids)}" if ids else f"no {role} id"
        return Refusal(
            grpc.StatusCode.PERMISSION_DENIED,
            f"{method} speaks for {role} {ident}, but the certificate names {held}",
        )
    return None


def refusal_for(
    method: str, request: Any, context: grpc.aio.ServicerContext, trust_domain: str | None = None
) -> Refusal | None:
    """``decide`` for one request of a stream, which the interceptor checks only as the stream
    opens (the control stream's LeaderAndIsr speaks for a controller as its unary call does)."""
    auth = context.auth_context() or {}
    refusal = decide(method, auth, SERVICE_ROLES, request, METHOD_CLAIMS, trust_domain)
    if refusal is not None:
        log.warning(
            "refused %s from %s (%s): %s", method, context.peer(), _describe(auth), refusal.message
        )
    return refusal


def _describe(auth: AuthContext) -> str:
    names = [v.decode(errors="replace") for v in auth.get("x509_common_name", ())]
    return ",".join(names) or "no certificate"


class PeerRoleInterceptor(grpc.aio.ServerInterceptor):
    """Refuses calls from peers without the role, or speaking for an id not theirs."""

    def __init__(
        self,
        rules: Mapping[str, frozenset[str]] = SERVICE_ROLES,
        claims: Mapping[str, Claim] = METHOD_CLAIMS,
        trust_domain: str | None = None,
    ) -> None:
        self.rules = rules
        self.claims = claims
        self.trust_domain = trust_domain

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or (service_of(method) not in self.rules and method not in self.claims):
            return handler

        async def check(request: Any, context: grpc.aio.ServicerContext) -> None:
            auth = context.auth_context() or {}
            refusal = decide(method, auth, self.rules, request, self.claims, self.trust_domain)
            if refusal is not None:
                log.warning(
                    "refused %s from %s (%s): %s",
                    method,
                    context.peer(),
                    _describe(auth),
                    refusal.message,
                )
                await context.abort(refusal.code, refusal.message)

        return _guarded(handler, check)


def _guarded(
    handler: grpc.RpcMethodHandler,
    check: Callable[[Any, grpc.aio.ServicerContext], Awaitable[None]],
) -> grpc.RpcMethodHandler:
    """The same handler, running ``check`` first (with the request, for unary requests)."""
    kw = dict(
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
    if handler.unary_unary is not None:
        inner_uu = handler.unary_unary

        async def unary_unary(request, context):
            await check(request, context)
            return await inner_uu(request, context)

        return grpc.unary_unary_rpc_method_handler(unary_unary, **kw)
    if handler.stream_unary is not None:
        inner_su = handler.stream_unary

        async def stream_unary(requests, context):
            await check(None, context)
            return await inner_su(requests, context)

        return grpc.stream_unary_rpc_method_handler(stream_unary, **kw)
    inner_stream = handler.unary_stream or handler.stream_stream
    unary_request = handler.unary_stream is not None
    factory = (
        grpc.unary_stream_rpc_method_handler
        if unary_request
        else grpc.stream_stream_rpc_method_handler
    )

    async def streaming(request_or_iterator, context):
        await check(request_or_iterator if unary_request else None, context)
        result = inner_stream(request_or_iterator, context)
        if hasattr(result, "__aiter__"):  # an async generator servicer
            async for item in result:
                yield item
        else:  # a servicer writing with context.write()
            await result

    return factory(streaming, **kw)


def roles_summary(rules: Mapping[str, Iterable[str]] = SERVICE_ROLES) -> str:
    """One line for the start-up log: which services are restricted to which roles."""
    return "; ".join(f"{s}: {'/'.join(sorted(r))}" for s, r in sorted(rules.items()))
