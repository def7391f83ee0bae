"""Per-request limits, checked on the decoded protobuf before a servicer builds anything from it.

gRPC itself refuses a message larger than the server's ``--max-receive-bytes`` with
RESOURCE_EXHAUSTED before decoding it. Inside that size a request can still name a million
partitions, and turning those into Python objects (dicts of tuples, domain records) is where
memory goes: a refused CreateTopics with 1,000,000 explicit assignments used to grow the admin
service by ~300 MB. So each bounded method has a *counter* that reads only lengths and small
fields of the message (never building anything proportional to it), and the interceptor refuses
the call with INVALID_ARGUMENT, naming the limit and its flag, when a count is over its limit.

Counters may stop early (``Counts.over``): a request is refused on the first count that is over,
so a hostile message is never walked further than the limit.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Bound:
    """One limit: what it counts, how many are allowed, and the flag that sets it."""

    what: str
    limit: int
    flag: str


class OverLimit(Exception):
    def __init__(self, bound: Bound, count: int, method: str) -> None:
        self.bound, self.count = bound, count
        name = method.rsplit("/", 1)[-1]
        super().__init__(
            f"{name} names more than {bound.limit} {bound.what}, the limit per request "
            f"(set by {bound.flag})"
        )


class Counts:
    """Running totals of one request, refusing as soon as one passes its bound."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.totals: dict[str, int] = {}

    def add(self, bound: Bound, n: int) -> None:
        total = self.totals.get(bound.what, 0) + n
        self.totals[bound.what] = total
        if total > bound.limit:
            raise OverLimit(bound, total, self.method)


Counter = Callable[[Any, Counts], None]


class RequestBoundsInterceptor(grpc.aio.ServerInterceptor):
    """Runs the method's counter on each request; INVALID_ARGUMENT when one is over."""

    def __init__(self, counters: Mapping[str, Counter]) -> None:
        self.counters = counters

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        counter = self.counters.get(method)
        if handler is None or counter is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary

        async def bounded(request, context: grpc.aio.ServicerContext):
            try:
                counter(request, Counts(method))
            except OverLimit as exc:
                refusal = str(exc)
            else:
                return await inner(request, context)
            # Refused by setting the status and returning, not by ``context.abort``: an abort's
            # exception and traceback form a reference cycle with the call's frames, which
            # keeps the (large) request alive until the cyclic collector runs; repeated
            # refusals then piled up tens of MB each.
            log.warning("refused %s from %s: %s", method, context.peer(), refusal)
            context.set_code(grpc.StatusCode.INVALID_ARGUMENT)
            context.set_details(refusal)
            return None

        serialize = handler.response_serializer

        def serializer(response):
            return b"" if response is None else serialize(response)

        return grpc.unary_unary_rpc_method_handler(
            bounded,
            request_deserializer=handler.request_deserializer,
            response_serializer=serializer,
        )
