"""Who may call what: peer roles from the client certificate of a mutual-TLS call.

Transport security (mutual TLS) says a caller holds a certificate our CA signed; it does not say
the caller is a controller. Two services must only be called by one kind of peer:
``BrokerControlService`` (LeaderAndIsr, StopReplica, UpdateMetadata) by a controller, and
``ControllerService`` (AlterPartition, ControlledShutdown) by a broker. Everything else
(BrokerService, AdminService, health, reflection) is open to any client the CA vouches for.

The role of a peer comes from its certificate, by this convention (deploy/README.md):

* a URI SAN ``spiffe://<trust-domain>/<role>[/<instance>]`` (SPIFFE style, e.g.
  ``spiffe://leasehold/controller/1``): the role is the first path segment; or
* the subject common name ``<role>``, ``<role>-<instance>`` or ``<role>.<anything>``
  (e.g. ``controller-1``, ``broker-agent-2``, ``controller.leasehold.svc``).

Roles are ``controller``, ``broker`` and ``admin``; ``broker-agent`` is the same as ``broker``.
A call without a client certificate is UNAUTHENTICATED, one with the wrong role
PERMISSION_DENIED. The check runs whenever the server uses TLS; a plaintext server (configured so,
with a warning) has no identities to check.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

import grpc

log = logging.getLogger(__name__)

CONTROLLER = "controller"
BROKER = "broker"
ADMIN = "admin"
_ALIASES = MappingProxyType(
    {CONTROLLER: CONTROLLER, BROKER: BROKER, "broker-agent": BROKER, ADMIN: ADMIN}
)

# Full gRPC service name -> the roles that may call it. Services not listed are open to any
# authenticated peer.
SERVICE_ROLES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "leasehold.broker.v1.BrokerControlService": frozenset({CONTROLLER}),
        "leasehold.controller.v1.ControllerService": frozenset({BROKER}),
    }
)

AuthContext = Mapping[str, Sequence[bytes]]


def _role_of_name(name: str) -> str | None:
    """``controller``, ``controller-1``, ``broker-agent-2``, ``admin.ns.svc`` -> the role."""
    name = name.strip().lower()
    for alias in sorted(_ALIASES, key=len, reverse=True):  # "broker-agent" before "broker"
        if name == alias or name.startswith((alias + "-", alias + ".")):
            return _ALIASES[alias]
    return None


def _role_of_uri(uri: str) -> str | None:
    """``spiffe://<trust-domain>/<role>[/...]`` -> the role; any other URI -> None."""
    if not uri.startswith("spiffe://"):
        return None
    _, _, path = uri[len("spiffe://") :].partition("/")
    first = path.split("/", 1)[0].lower()
    return _ALIASES.get(first)


def peer_roles(auth: AuthContext) -> frozenset[str]:
    """The roles a peer's certificate grants (empty for none or for an unknown identity)."""

    def values(key: str) -> list[str]:
        return [v.decode(errors="replace") for v in auth.get(key, ())]

    uris = values("peer_uri") + values("peer_spiffe_id")
    uris += [s for s in values("x509_subject_alternative_name") if s.startswith("spiffe://")]
    roles = {r for r in map(_role_of_uri, uris) if r is not None}
    roles |= {r for r in map(_role_of_name, values("x509_common_name")) if r is not None}
    return frozenset(roles)


def has_certificate(auth: AuthContext) -> bool:
    return bool(auth.get("x509_pem_cert") or auth.get("x509_common_name"))


def service_of(method: str) -> str:
    """``/pkg.Service/Method`` -> ``pkg.Service``."""
    return method.lstrip("/").split("/", 1)[0]


def decide(
    method: str, auth: AuthContext, rules: Mapping[str, frozenset[str]]
) -> grpc.StatusCode | None:
    """None if the call may go ahead, else the status to refuse it with."""
    allowed = rules.get(service_of(method))
    if allowed is None:
        return None
    if not has_certificate(auth):
        return grpc.StatusCode.UNAUTHENTICATED
    if peer_roles(auth) & allowed:
        return None
    return grpc.StatusCode.PERMISSION_DENIED


def _describe(auth: AuthContext) -> str:
    names = [v.decode(errors="replace") for v in auth.get("x509_common_name", ())]
    return ",".join(names) or "no certificate"


Behavior = Callable[..., Awaitable[object]]


class PeerRoleInterceptor(grpc.aio.ServerInterceptor):
    """Refuses calls to role-restricted services from peers without the role."""

    def __init__(self, rules: Mapping[str, frozenset[str]] = SERVICE_ROLES) -> None:
        self.rules = rules

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or service_of(method) not in self.rules:
            return handler
        allowed = sorted(self.rules[service_of(method)])

        async def check(context: grpc.aio.ServicerContext) -> None:
            auth = context.auth_context() or {}
            code = decide(method, auth, self.rules)
            if code is not None:
                log.warning(
                    "refused %s from %s (%s): needs role %s",
                    method,
                    context.peer(),
                    _describe(auth),
                    "/".join(allowed),
                )
                await context.abort(code, f"{method} may only be called by: {', '.join(allowed)}")

        return _guarded(handler, check)


def _guarded(
    handler: grpc.RpcMethodHandler, check: Callable[[grpc.aio.ServicerContext], Awaitable[None]]
) -> grpc.RpcMethodHandler:
    """The same handler, running ``check`` first (whatever its streaming kind)."""
    kw = dict(
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
    if handler.unary_unary is not None:
        inner_uu = handler.unary_unary

        async def unary_unary(request, context):
            await check(context)
            return await inner_uu(request, context)

        return grpc.unary_unary_rpc_method_handler(unary_unary, **kw)
    if handler.stream_unary is not None:
        inner_su = handler.stream_unary

        async def stream_unary(requests, context):
            await check(context)
            return await inner_su(requests, context)

        return grpc.stream_unary_rpc_method_handler(stream_unary, **kw)
    inner_stream = handler.unary_stream or handler.stream_stream
    factory = (
        grpc.unary_stream_rpc_method_handler
        if handler.unary_stream is not None
        else grpc.stream_stream_rpc_method_handler
    )

    async def streaming(request_or_iterator, context):
        await check(context)
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
