"""The etcd keyspace of one Leasehold cluster (ARCHITECTURE §2).

Every key lives under ``/leasehold/<cluster-id>``. Building keys in one place keeps the layout
greppable and lets tests run several clusters side by side in one etcd. The root and the
prefixes are computed once per keyspace: a controller classifies every watched key by them
(tens of thousands per broker failure).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Keyspace:
    cluster_id: str = "leasehold"

    @cached_property
    def root(self) -> bytes:
        return f"/leasehold/{self.cluster_id}".encode()

    def _k(self, path: str) -> bytes:
        return self.root + path.encode()

    # brokers
    @cached_property
    def brokers_prefix(self) -> bytes:
        return self._k("/brokers/ids/")

    def broker(self, broker_id: int) -> bytes:
        return self._k(f"/brokers/ids/{broker_id}")

    def broker_id_of(self, key: bytes) -> int:
        return int(key[len(self.brokers_prefix) :])

    # idempotent producer ids: the block most recently handed to a broker
    @cached_property
    def producer_id_block(self) -> bytes:
        return self._k("/producer_id_block")

    # controller election and epoch
    @cached_property
    def controller_election_prefix(self) -> bytes:
        return self._k("/controller/")

    @cached_property
    def controller_epoch(self) -> bytes:
        return self._k("/controller_epoch")

    # topics and partition state: /topics/<name> and /topics/<name>/partitions/<p>/state
    @cached_property
    def topics_prefix(self) -> bytes:
        return self._k("/topics/")

    def topic(self, name: str) -> bytes:
        return self._k(f"/topics/{name}")

    def partition_state(self, topic: str, partition: int) -> bytes:
        return self._k(f"/topics/{topic}/partitions/{partition}/state")

    def partition_states_prefix(self, topic: str) -> bytes:
        return self._k(f"/topics/{topic}/partitions/")

    def is_partition_state_key(self, key: bytes) -> bool:
        """Whether ``key`` is a ``partition_state`` key (topic names never contain ``/``)."""
        return (
            key.endswith(b"/state")
            and key.startswith(self.topics_prefix)
            and b"/partitions/" in key
        )

    def parse_topic_key(self, key: bytes) -> tuple[str, int | None] | None:
        """``(topic, None)`` for an assignment key, ``(topic, p)`` for a state key, else None."""
        rest = key[len(self.topics_prefix) :].decode()
        if "/" not in rest:
            return rest, None
        topic, _, tail = rest.partition("/partitions/")
        if tail.endswith("/state"):
            return topic, int(tail[: -len("/state")])
        return None

    # admin intents and results
    @cached_property
    def delete_topics_prefix(self) -> bytes:
        return self._k("/admin/delete_topics/")

    def delete_topic(self, name: str) -> bytes:
        return self._k(f"/admin/delete_topics/{name}")

    @cached_property
    def reassignments_prefix(self) -> bytes:
        return self._k("/admin/reassignments/")

    def reassignment(self, topic: str, partition: int) -> bytes:
        return self._k(f"/admin/reassignments/{topic}/{partition}")

    def parse_reassignment_key(self, key: bytes) -> tuple[str, int]:
        topic, _, p = key[len(self.reassignments_prefix) :].decode().rpartition("/")
        return topic, int(p)

    @cached_property
    def elections_prefix(self) -> bytes:
        return self._k("/admin/elections/")

    def election(self, request_id: str) -> bytes:
        return self._k(f"/admin/elections/{request_id}")

    @cached_property
    def results_prefix(self) -> bytes:
        return self._k("/admin/results/")

    def result(self, request_id: str) -> bytes:
        return self._k(f"/admin/results/{request_id}")

    # configs
    @cached_property
    def topic_configs_prefix(self) -> bytes:
        return self._k("/config/topics/")

    def topic_config(self, name: str) -> bytes:
        return self._k(f"/config/topics/{name}")

    @cached_property
    def broker_configs_prefix(self) -> bytes:
        return self._k("/config/brokers/")

    def broker_config(self, broker_id: int | None) -> bytes:
        """Per-broker dynamic config, or the cluster-wide default when ``broker_id`` is None."""
        return self._k(f"/config/brokers/{'<default>' if broker_id is None else broker_id}")
