"""Controlled shutdown: ask the controller to move leadership away before this broker stops.

Kafka's broker sends ControlledShutdown and retries until the controller reports no partitions
left led by this broker; only then does it stop, so producers see a clean leader change instead
of timeouts. Here the retries back off for ``controlled_shutdown_retry_backoff_ms`` and give up
at ``controlled_shutdown_timeout_ms`` (the broker then stops anyway: the controller handles its
disappearance as a failure).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from leasehold.controller.v1 import controller_pb2
from services.broker_agent.controller_client import (
    ControllerClient,
    ControllerUnavailableError,
)
from services.broker_agent.model import Code

log = logging.getLogger(__name__)


async def controlled_shutdown(
    client: ControllerClient,
    broker_id: int,
    broker_epoch: Callable[[], int],
    *,
    timeout_s: float,
    backoff_s: float,
) -> bool:
    """True once the controller says nothing is left to move; False on timeout."""
    deadline = time.monotonic() + timeout_s
    attempt = 0
    while True:
        attempt += 1
        remaining = deadline - time.monotonic()
        request = controller_pb2.ControlledShutdownRequest(
            broker_id=broker_id, broker_epoch=broker_epoch()
        )
        try:
            response = await client.controlled_shutdown(request, timeout=max(remaining, 0.1))
        except ControllerUnavailableError as exc:
            log.warning("controlled shutdown attempt %d: %s", attempt, exc)
        else:
            code = response.error_code
            left = [f"{tp.topic}-{tp.partition}" for tp in response.remaining_partitions]
            if code == Code.NONE and not left:
                log.info("controlled shutdown succeeded after %d attempt(s)", attempt)
                return True
            log.info(
                "controlled shutdown attempt %d: error %s, %d partition(s) still led: %s",
                attempt,
                Code(code).name if code in Code._value2member_map_ else code,
                len(left),
                ", ".join(left[:10]),
            )
        if time.monotonic() + backoff_s >= deadline:
            log.warning("controlled shutdown did not complete in %.1fs; stopping anyway", timeout_s)
            return False
        await asyncio.sleep(backoff_s)
