"""Consumer group metrics with the names Kafka users scrape (kafka_exporter's), per group this
broker coordinates:

- ``kafka_consumergroup_current_offset{consumergroup,topic,partition}``: the committed offset;
- ``kafka_consumergroup_lag{consumergroup,topic,partition}``: the partition's high watermark
  minus the committed offset (never negative), where this broker hosts a replica of the
  partition (a follower's high watermark may trail the leader's by a fetch);
- ``kafka_consumergroup_lag_sum{consumergroup,topic}``: their sum per topic;
- ``kafka_consumergroup_members{consumergroup}``: the members.

Recomputed with the broker's other gauges (once a second, on the event loop): a group that
moves to another coordinator disappears here and appears there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Gauge

from services.broker_agent.group.group import ConsumerGroup
from services.broker_agent.group.model import TP


class GroupMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        part = ("consumergroup", "topic", "partition")
        self.current_offset = Gauge(
            "kafka_consumergroup_current_offset", "Committed offset", part, registry=registry
        )
        self.lag = Gauge(
            "kafka_consumergroup_lag", "High watermark minus committed offset", part,
            registry=registry,
        )  # fmt: skip
        self.lag_sum = Gauge(
            "kafka_consumergroup_lag_sum", "Lag summed over a topic's partitions",
            ("consumergroup", "topic"), registry=registry,
        )  # fmt: skip
        self.members = Gauge(
            "kafka_consumergroup_members", "Members of the group", ("consumergroup",),
            registry=registry,
        )  # fmt: skip

    def observe(
        self, groups: Iterable[ConsumerGroup], high_watermark: Callable[[TP], int | None]
    ) -> None:
        for gauge in (self.current_offset, self.lag, self.lag_sum, self.members):
            gauge.clear()
        for group in groups:
            name = group.group_id
            self.members.labels(name).set(len(group.members))
            sums: dict[str, int] = {}
            for (topic, partition), committed in sorted(group.offsets.items()):
                labels = (name, topic, str(partition))
                self.current_offset.labels(*labels).set(committed.offset)
                end = high_watermark((topic, partition))
                if end is None:
                    continue
                lag = max(0, end - committed.offset)
                self.lag.labels(*labels).set(lag)
                sums[topic] = sums.get(topic, 0) + lag
            for topic, total in sums.items():
                self.lag_sum.labels(name, topic).set(total)
