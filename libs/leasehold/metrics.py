"""Prometheus metrics: one registry per service process, served on ``--metrics-port``.

Services create their metrics on a ``CollectorRegistry`` they own (no module globals) and pass it
here. Names follow Kafka's JMX names adapted to Prometheus conventions, e.g. Kafka's
``kafka.controller:type=KafkaController,name=OfflinePartitionsCount`` becomes
``leasehold_controller_offline_partitions_count``.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, start_http_server

log = logging.getLogger(__name__)


def serve(registry: CollectorRegistry, host: str, port: int) -> int:
    """Expose ``registry`` at ``http://host:port/metrics``; returns the port (0 disables)."""
    if port <= 0:
        return 0
    server, _thread = start_http_server(port, addr=host, registry=registry)
    bound = server.server_address[1]
    log.info("metrics endpoint", extra={"address": f"{host}:{bound}"})
    return bound
