"""The side-by-side scenarios: sizes, the order both systems run them in, and their figures.

Both systems run the same sequence on one cluster of 3 brokers (RF 3), one system after the
other in the same run (never both at once: the machine has 2 cores):

1. **topic creation**: one CreateTopics request of 1 x 1,000 partitions (that topic is then
   deleted), then one of 10 x 1,000 — the 10,000 partitions every later scenario runs on,
   placed by each system's default assignment (preferred leaders rotate: each broker leads a
   third);
2. **produce** to a 6-partition topic (min ISR 2), acks=all, 1 KiB records;
3. **active controller clean stop (SIGTERM), then SIGKILL** (the old one restarted between);
4. **controlled shutdown** of broker 1 (SIGTERM: both brokers ask their controller to move
   leadership away first), then broker 1 restarted, its ISRs refilled and preferred leaders
   elected again, so it leads its third once more;
5. **broker SIGKILL** of broker 1.

With ``LEASEHOLD_BENCH_LARGE=1`` a second cluster per system holds 100,000 partitions (100
topics of 1,000; logs on tmpfs for both) for the controller failover and the broker SIGKILL.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.framework import RunContext
from bench.peers.table import Figure
from bench.scenario import large_enabled, large_only

BROKER = 1
PRODUCE_TOPIC = "produce-bench"
PRODUCE_PARTITIONS = 6
MIN_ISR = "2"
RECORD = b"x" * 1024
LARGE_PARTITIONS = 100_000


@dataclass(frozen=True)
class Knobs:
    per_topic: int
    topics: int
    produce_s: float
    window: int
    large: bool
    small: bool

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        return cls(
            per_topic=ctx.pick(1_000, 100),
            topics=ctx.pick(10, 3),
            produce_s=ctx.pick(10.0, 1.0),
            window=ctx.pick(10_000, 1_000),
            large=large_enabled() and not ctx.quick,
            small=not (large_only() and not ctx.quick),
        )

    @property
    def partitions(self) -> int:
        return self.per_topic * self.topics

    def names(self, prefix: str, count: int) -> list[str]:
        return [f"{prefix}-{i}" for i in range(count)]


CREATION = (
    Figure("partitions_per_s", "rate: partitions / brokers time", "partitions/s", False),
    Figure("brokers_ms", "request -> every broker's Metadata shows all led", "ms"),
    Figure("answer_ms", "request -> CreateTopics answer", "ms"),
)

PRODUCE = (
    Figure("mb_per_s", "throughput, default batching", "MB/s", False, ",.2f"),
    Figure("records_per_s", "throughput, default batching", "records/s", False),
    Figure("p50_ms", "single-record send -> ack, p50", "ms", True, ",.2f"),
    Figure("p99_ms", "single-record send -> ack, p99", "ms", True, ",.2f"),
)
FAILOVER = (
    Figure("fault_ms", "from the fault: signal -> every broker knows the new controller", "ms"),
    Figure("detection_ms", "from detection -> every broker knows the new controller", "ms"),
    Figure("detected_after_ms", "detection after the signal", "ms"),
    Figure("first_broker_ms", "signal -> first broker knows", "ms"),
)
SHUTDOWN = (
    Figure("fault_ms", "SIGTERM -> other brokers' Metadata: it leads nothing", "ms"),
    Figure("exit_ms", "SIGTERM -> process exited", "ms"),
)
BROKER_KILL = (
    Figure("fault_ms", "from the fault: SIGKILL -> other brokers' Metadata all led", "ms"),
    Figure("detection_ms", "from detection -> other brokers' Metadata all led", "ms"),
    Figure("detected_after_ms", "detection after the SIGKILL", "ms"),
)
