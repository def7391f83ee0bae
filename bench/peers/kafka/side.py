"""The Kafka side of each side-by-side scenario, on a :class:`KafkaCluster`.

Every function returns the scenario's figures in milliseconds (or rates) under the keys the
Leasehold side uses (``bench/peers/scenarios.py``). Witnesses:

- a broker's own Metadata answer through ``confluent-kafka`` (:class:`BrokerViews`): topics
  led, leaders moved off a broker;
- a node's own log record, stamped by Log4j in epoch milliseconds: a broker's Raft client
  following the new controller quorum leader (``Completed transition to FollowerState(...
  epoch=E, leader=L``: what a broker knows of the active controller; Kafka's Metadata answer
  names a random broker as "controller" in KRaft mode), a voter noticing the leader gone (its
  first state transition after the fault), the active controller fencing a broker
  (``Fencing broker N at epoch E because its session has timed out``).
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import ElectionType, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.error import KafkaException

from bench.framework import percentile
from bench.peers.kafka.cluster import KafkaCluster, KafkaNode, LogRecord
from bench.peers.kafka.views import QUIET, BrokerViews, all_partitions, client, wait_brokers

TRANSITION = "Completed transition to "
EPOCH = re.compile(r"epoch=(\d+)")
LEADER = re.compile(r"leader=(\d+)")
# A restarted node loads 10,000 logs before it listens: minutes on a loaded 2-core machine.
RESTART_TIMEOUT_S = 600.0
DETECTION_SETTINGS = (
    "broker.session.timeout.ms",
    "broker.heartbeat.interval.ms",
    "controller.quorum.fetch.timeout.ms",
    "controller.quorum.election.timeout.ms",
    "controller.quorum.election.backoff.max.ms",
)


class TooLarge(Exception):
    """Kafka refused a whole CreateTopics as an "excessively large batch operation"."""


def ms(later: float, earlier: float) -> float:
    return (later - earlier) * 1000


def config_values(node: KafkaNode, names: Iterable[str]) -> dict[str, str]:
    """Values the node logged at start (``KafkaConfig values:``): what it actually runs with."""
    text = node.log_path.read_text(errors="replace")
    out = {}
    for name in names:
        m = re.search(rf"^\s*{re.escape(name)} = (.*)$", text, re.MULTILINE)
        if m:
            out[name] = m[1].strip()
    return out


def wait_record(
    kc: KafkaCluster,
    nodes: Iterable[KafkaNode],
    since: Mapping[str, int],
    match: Callable[[LogRecord], bool],
    *,
    contains: str = TRANSITION,
    timeout: float = 120.0,
) -> dict[str, LogRecord]:
    """Per node, its first log record after ``since[node]`` containing ``contains`` (a Raft
    state transition unless told) for which ``match`` holds."""
    nodes = list(nodes)
    found: dict[str, LogRecord] = {}
    deadline = time.monotonic() + timeout
    while len(found) < len(nodes):
        for node in nodes:
            if node.name not in found:
                records = kc.log_records(node, since[node.name], contains)
                hit = next((r for r in records if match(r)), None)
                if hit is not None:
                    found[node.name] = hit
        if time.monotonic() > deadline:
            missing = sorted({n.name for n in nodes} - found.keys())
            raise TimeoutError(f"no matching log record from {missing} after {timeout:g}s")
        time.sleep(0.01)
    return found


def transition(record: LogRecord) -> str:
    """The new state of a Raft transition record ("FollowerState(...) from ..."), or ""."""
    _, found, rest = record.message.partition(TRANSITION)
    return rest if found else ""


def follows(record: LogRecord, min_epoch: int, not_leader: int) -> bool:
    """A Raft transition to following a leader other than ``not_leader`` at >= ``min_epoch``."""
    msg = transition(record)
    if not msg.startswith("FollowerState("):
        return False
    epoch, leader = EPOCH.search(msg), LEADER.search(msg)
    return bool(epoch and leader and int(epoch[1]) >= min_epoch and int(leader[1]) != not_leader)


def session_timed_out(record: LogRecord) -> bool:
    return "because its session has timed out" in record.message


def active_controller(kc: KafkaCluster) -> tuple[KafkaNode, int]:
    """The controller whose latest Raft transition is to Leader at the highest epoch."""
    best: tuple[int, KafkaNode] | None = None
    for node in kc.controllers.values():
        if not node.alive():
            continue
        last = None
        for record in kc.log_records(node, 0, TRANSITION):
            last = record
        if last is not None and transition(last).startswith("Leader("):
            epoch = int(EPOCH.search(last.message)[1])
            if best is None or epoch > best[0]:
                best = (epoch, node)
    if best is None:
        raise RuntimeError("no Kafka controller is the quorum leader")
    return best[1], best[0]


def wait_active_controller(kc: KafkaCluster, timeout: float = 60.0) -> tuple[KafkaNode, int]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return active_controller(kc)
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@dataclass
class KafkaSide:
    """A running Kafka cluster plus an admin client and the scenario's topics."""

    kc: KafkaCluster
    admin: AdminClient
    topics: dict[str, int]

    @classmethod
    def up(cls, kc: KafkaCluster) -> KafkaSide:
        wait_brokers(kc.bootstrap, len(kc.brokers))
        wait_active_controller(kc)
        return cls(kc, client(kc.bootstrap), {})

    def views(self, exclude: tuple[int, ...] = (), probe: str | None = None) -> BrokerViews:
        probe = probe or next(iter(self.topics), None)
        return BrokerViews(self.kc.broker_addresses(exclude), probe).open()

    def detection_settings(self) -> dict[str, str]:
        broker = next(iter(self.kc.brokers.values()))
        controller = next(iter(self.kc.controllers.values()))
        return {**config_values(controller, DETECTION_SETTINGS[2:]),
                **config_values(broker, DETECTION_SETTINGS[:2])}  # fmt: skip

    # --- topic creation -------------------------------------------------------------------------

    def create(
        self,
        names: list[str],
        per_topic: int,
        configs: Mapping[str, str] = (),
        replication: int = 3,
    ) -> dict:
        """One CreateTopics request; answer and every broker's Metadata showing all led.

        Kafka's controller refuses a request that would write more than 10,000 metadata
        records in one operation (``POLICY_VIOLATION``: 10 x 1,000 partitions is 10,010
        records; a constant of ``QuorumController``, not a setting) and creates nothing; the
        topics are then sent as one request each, all at once, and the figures time that
        (``split`` is 1 in the returned figures)."""
        views = BrokerViews(self.kc.broker_addresses(), next(iter(self.topics), None)).open()
        new = [NewTopic(n, per_topic, replication, config=dict(configs)) for n in names]
        started = time.time()
        split = 0.0
        try:
            self._create(new, one_request=True)
        except TooLarge:
            split = 1.0
            started = time.time()
            self._create(new, one_request=False)
        answered = time.time()
        told = views.first_done(
            all_partitions(dict.fromkeys(names, per_topic), lambda p: p.leader >= 0)
        )
        self.topics.update(dict.fromkeys(names, per_topic))
        count = len(names) * per_topic
        return {
            "answer_ms": ms(answered, started),
            "brokers_ms": ms(max(told.values()), started),
            "partitions_per_s": count / (max(told.values()) - started),
            "split": split,
            "observer_call_ms": views.median_call_ms(),
        }

    def _create(self, new: list[NewTopic], one_request: bool) -> None:
        timeouts = {"request_timeout": 300, "operation_timeout": 300}
        if one_request:
            futures = self.admin.create_topics(new, **timeouts)
        else:
            futures = {}
            for topic in new:
                futures.update(self.admin.create_topics([topic], **timeouts))
        refused = []
        for name, future in futures.items():
            try:
                future.result()
            except KafkaException as e:
                if e.args[0].code() == KafkaError.POLICY_VIOLATION and one_request:
                    refused.append(name)
                    continue
                raise RuntimeError(f"Kafka CreateTopics {name}: {e}") from None
        if refused:
            if len(refused) != len(new):
                raise RuntimeError(f"Kafka refused part of one CreateTopics: {refused}")
            raise TooLarge()

    def delete(self, names: list[str]) -> None:
        views = BrokerViews(self.kc.broker_addresses()).open()
        for future in self.admin.delete_topics(names, request_timeout=120).values():
            future.result()
        for name in names:
            self.topics.pop(name, None)
        views.first_done(lambda _b, md: not any(n in md.topics for n in names), timeout=120)

    def settled(self, isr: int = 3, timeout: float = 600.0) -> None:
        """Every scenario partition led and with a full ISR in every broker's answer."""
        self.views().first_done(
            all_partitions(self.topics, lambda p: p.leader >= 0 and len(p.isrs) >= isr),
            interval=0.5,
            timeout=timeout,
        )

    # --- produce --------------------------------------------------------------------------------

    def produce(self, topic: str, payload: bytes, window: int, duration: float) -> dict:
        """Records/s and MB/s with ``window`` records outstanding; then single-record sends."""
        p = Producer({"bootstrap.servers": self.kc.bootstrap, "acks": "all", **QUIET})
        failed: list[str] = []
        acked = [0]

        def delivered(err, _msg) -> None:
            acked[0] += 1
            if err is not None:
                failed.append(str(err))

        p.produce(topic, payload, on_delivery=delivered)
        p.flush(30)
        acked[0] = sent = 0
        started = time.perf_counter()
        while time.perf_counter() - started < duration:
            if sent - acked[0] >= window:
                p.poll(0.001)
                continue
            try:
                p.produce(topic, payload, on_delivery=delivered)
                sent += 1
            except BufferError:
                p.poll(0.001)
            p.poll(0)
        p.flush(60)
        elapsed = time.perf_counter() - started
        latencies = []
        begun = time.perf_counter()
        while time.perf_counter() - begun < duration:
            t0 = time.perf_counter()
            p.produce(topic, payload, on_delivery=delivered)
            p.flush(30)
            latencies.append((time.perf_counter() - t0) * 1000)
        if failed:
            raise RuntimeError(f"Kafka produce failed: {failed[:3]}")
        return {
            "records_per_s": sent / elapsed,
            "mb_per_s": sent * len(payload) / elapsed / 1e6,
            "p50_ms": percentile(latencies, 50),
            "p99_ms": percentile(latencies, 99),
        }

    # --- controller failover --------------------------------------------------------------------

    def controller_failover(self, sig: int) -> dict:
        """Signal the quorum leader; time until every broker follows the new one."""
        kc = self.kc
        old, epoch = active_controller(kc)
        since = {n.name: n.log_size() for n in kc.nodes()}
        signalled = time.time()
        old.kill() if sig == signal.SIGKILL else old.signal(sig)
        brokers = wait_record(
            kc, kc.brokers.values(), since, lambda r: follows(r, epoch + 1, old.node_id)
        )
        voters = [n for n in kc.controllers.values() if n is not old]
        noticed = wait_record(kc, voters, since, lambda r: True)
        detected = min(r.at for r in noticed.values())
        told = max(r.at for r in brokers.values())
        new, new_epoch = wait_active_controller(kc)
        old.wait_exit(60)
        self.restart_controller(old, new_epoch, new.node_id)
        return {
            "fault_ms": ms(told, signalled),
            "detection_ms": ms(told, detected),
            "detected_after_ms": ms(detected, signalled),
            "first_broker_ms": ms(min(r.at for r in brokers.values()), signalled),
        }

    def restart_controller(self, node: KafkaNode, epoch: int, leader: int) -> None:
        since = {node.name: node.log_size()}
        self.kc.start_node(node)
        self.kc.wait_listening(node, RESTART_TIMEOUT_S)
        wait_record(self.kc, [node], since, lambda r: follows(r, epoch, -1))
        time.sleep(2.0)

    # --- brokers --------------------------------------------------------------------------------

    def controlled_shutdown(self, broker: int) -> dict:
        """SIGTERM a broker (Kafka's controlled shutdown); until the others show it leads
        nothing, and until its process exits."""
        node = self.kc.brokers[broker]
        views = self.views(exclude=(broker,))
        exited: list[float] = []
        waiter = threading.Thread(
            target=lambda: (node.wait_exit(300), exited.append(time.time())), daemon=True
        )
        signalled = time.time()
        node.signal(signal.SIGTERM)
        waiter.start()
        told = views.first_done(all_partitions(self.topics, lambda p: p.leader not in (broker, -1)))
        waiter.join(310)
        return {
            "fault_ms": ms(max(told.values()), signalled),
            "exit_ms": ms(exited[0], signalled) if exited else float("nan"),
            "observer_call_ms": views.median_call_ms(),
        }

    def restore_broker(self, broker: int) -> None:
        """Start it again, wait for full ISRs, elect preferred leaders, wait until shown."""
        node = self.kc.brokers[broker]
        self.kc.start_node(node)
        self.kc.wait_listening(node, RESTART_TIMEOUT_S)
        wait_brokers(self.kc.bootstrap, len(self.kc.brokers), RESTART_TIMEOUT_S)
        self.settled()
        self.admin.elect_leaders(ElectionType.PREFERRED, None).result()
        self.views().first_done(
            all_partitions(self.topics, lambda p: p.leader == p.replicas[0]),
            interval=0.5,
            timeout=300,
        )

    def broker_kill(self, broker: int) -> dict:
        """SIGKILL a broker; until the others show every partition led by a live broker."""
        node = self.kc.brokers[broker]
        views = self.views(exclude=(broker,))
        controller, _ = active_controller(self.kc)
        since = {controller.name: controller.log_size()}
        needle = f"Fencing broker {broker} "  # "... at epoch E because its session has timed out."
        killed = time.time()
        node.kill()
        told = views.first_done(all_partitions(self.topics, lambda p: p.leader not in (broker, -1)))
        fenced = wait_record(self.kc, [controller], since, session_timed_out, contains=needle)
        fenced = fenced[controller.name]
        return {
            "fault_ms": ms(max(told.values()), killed),
            "detection_ms": ms(max(told.values()), fenced.at),
            "detected_after_ms": ms(fenced.at, killed),
            "observer_call_ms": views.median_call_ms(),
        }
