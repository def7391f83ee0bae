"""Entry point: ``python -m services.broker_agent`` / ``leasehold-broker-agent``.

Parses flags and environment into a BrokerConfig, serves BrokerService and BrokerControlService
until SIGTERM, then shuts down in a controlled way (see ``app``). Tracing is set up from the
``OTEL_*`` environment before anything else and flushed at exit.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Sequence

from leasehold import telemetry
from leasehold.logs import configure
from leasehold.metrics import RequestMetrics
from leasehold.request_bounds import RequestBoundsInterceptor
from leasehold.server import Service, ServiceRunner, run_until_signalled
from services.broker_agent.app import SERVICE_NAMES, BrokerAgent
from services.broker_agent.bounds import counters
from services.broker_agent.config import BrokerConfig, config_from_args
from services.broker_agent.registration import BrokerIdInUseError

log = logging.getLogger("services.broker_agent")


async def serve(config: BrokerConfig) -> None:
    agent = BrokerAgent(config)
    agent.heap.enabled = True  # a process-wide collector setting: only in the process's main
    agent.renew_in_child = True  # the session's renewals in a process of its own
    agent.request_metrics = RequestMetrics(agent.metrics.registry, "broker")
    runner: ServiceRunner

    async def on_start() -> None:
        await agent.start(runner.port)

    runner = ServiceRunner(
        config.common,
        Service(
            names=SERVICE_NAMES,
            register=agent.register,
            on_start=on_start,
            on_stop=agent.stop,
            interceptors=[
                agent.request_metrics,
                RequestBoundsInterceptor(
                    counters(
                        config.max_partitions_per_request,
                        config.max_control_partitions_per_request,
                    )
                ),
            ],
        ),
    )
    try:
        await run_until_signalled(runner)
    finally:
        if runner.server is not None:  # start failed before serving: release the port
            await runner.server.stop(0)


def main(argv: Sequence[str] | None = None) -> int:
    config = config_from_args(argv)
    configure("broker-agent", config.common.log_level)
    telemetry.setup_tracing("leasehold-broker-agent")
    try:
        asyncio.run(serve(config))
    except BrokerIdInUseError as exc:
        log.error(str(exc))
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        telemetry.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
