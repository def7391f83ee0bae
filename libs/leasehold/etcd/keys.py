"""The etcd keyspace of one Leasehold cluster (DESIGN section 2).

Every key lives under ``/leasehold/<cluster-id>``. Building keys in one place keeps the layout
greppable and lets tests run several clusters side by side in one etcd.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Keyspace:
    cluster_id: str = "leasehold"

    @property
    def root(self) -> bytes:
        return f"/leasehold/{self.cluster_id}".encode()

    def _k(self, path: str) -> bytes:
        return self.root + path.encode()

    # brokers
    @property
    def brokers_prefix(self) -> bytes:
        return self._k("/brokers/ids/")

    def broker(self, broker_id: int) -> bytes:
        return self._k(f"/brokers/ids/{broker_id}")

    def broker_id_of(self, key: bytes) -> int:
        return int(key[len(self.brokers_prefix) :])

    # controller election and epoch
    @property
    def controller_election_prefix(self) -> bytes:
        return self._k("/controller/")

    @property
    def controller_epoch(self) -> bytes:
        return self._k("/controller_epoch")

    # topics and partition state: /topics/<name> and /topics/<name>/partitions/<p>/state
    @property
    def topics_prefix(self) -> bytes:
        return self._k("/topics/")

    def topic(self, name: str) -> bytes:
        return self._k(f"/topics/{name}")

    def partition_state(self, topic: str, partition: int) -> bytes:
        return self._k(f"/topics/{topic}/partitions/{partition}/state")

    def partition_states_prefix(self, topic: str) -> bytes:
        return self._k(f"/topics/{topic}/partitions/")

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
    @property
    def delete_topics_prefix(self) -> bytes:
        return self._k("/admin/delete_topics/")

    def delete_topic(self, name: str) -> bytes:
        return self._k(f"/admin/delete_topics/{name}")

    @property
    def reassignments_prefix(self) -> bytes:
        return self._k("/admin/reassignments/")

    def reassignment(self, topic: str, partition: int) -> bytes:
        return self._k(f"/admin/reassignments/{topic}/{partition}")

    def parse_reassignment_key(self, key: bytes) -> tuple[str, int]:
        topic, _, p = key[len(self.reassignments_prefix) :].decode().rpartition("/")
        return topic, int(p)

    @property
    def elections_prefix(self) -> bytes:
        return self._k("/admin/elections/")

    def election(self, request_id: str) -> bytes:
        return self._k(f"/admin/elections/{request_id}")

    @property
    def results_prefix(self) -> bytes:
        return self._k("/admin/results/")

    def result(self, request_id: str) -> bytes:
        return self._k(f"/admin/results/{request_id}")

    # configs
    @property
    def topic_configs_prefix(self) -> bytes:
        return self._k("/config/topics/")

    def topic_config(self, name: str) -> bytes:
        return self._k(f"/config/topics/{name}")

    @property
    def broker_configs_prefix(self) -> bytes:
        return self._k("/config/brokers/")

    def broker_config(self, broker_id: int | None) -> bytes:
        """Per-broker dynamic config, or the cluster-wide default when ``broker_id`` is None."""
        return self._k(f"/config/brokers/{'<default>' if broker_id is None else broker_id}")
