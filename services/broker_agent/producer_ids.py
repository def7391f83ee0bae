"""Producer ids for idempotent producers, handed out in blocks taken from etcd.

Kafka's brokers answer InitProducerId from a block of ids they own; a block comes from one
counter shared by the cluster (ZooKeeper's ``/latest_producer_id_block`` before KRaft, the
controller's AllocateProducerIds after KIP-730). Here the counter is the etcd key
``/producer_id_block`` (a ``ProducerIdBlock``: the last block handed out and to whom), and a
broker takes the next block in one transaction that compares the key's mod revision with the
one it read. etcd serialises those transactions, so two brokers never hold overlapping blocks.

Why not through the controller, as KRaft does: uniqueness is the only invariant, and the
compare-and-set gives it without a leader. No epoch is needed: a deposed controller or a
paused broker cannot make a block overlap another (its stale compare fails and it re-reads),
and handing out ids of a block it already owns is harmless. Producers keep working through a
controller failover. A block that a crashed broker did not use up is simply skipped.

A producer id is never reused, so one entry in a partition's producer state belongs to one
producer session; the producer epoch (0 here) is bumped by the producer itself when it must
restart its sequence numbers (KIP-360).
"""

from __future__ import annotations

import asyncio
import logging

from leasehold.errors import UnavailableError
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.client import cmp_create_revision, cmp_mod_revision, op_put
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.model import Code

log = logging.getLogger(__name__)

BLOCK_SIZE = 1000  # Kafka's PRODUCER_ID_BLOCK_SIZE
ATTEMPTS = 10  # compare-and-set races before giving up (other brokers took blocks meanwhile)
MAX_PRODUCER_ID = 2**63 - 1


class ProducerIdManager:
    """This broker's current block; ``next`` hands out its ids in order."""

    def __init__(
        self, etcd: EtcdClient, keyspace: Keyspace, broker_id: int, block_size: int = BLOCK_SIZE
    ) -> None:
        self._etcd = etcd
        self._key = keyspace.producer_id_block
        self._broker_id = broker_id
        self._block_size = block_size
        self._next = 0
        self._end = 0  # exclusive: the block is used up when next reaches it
        self._lock = asyncio.Lock()

    async def next(self) -> tuple[int, int]:
        """A new producer id and its first epoch (0)."""
        async with self._lock:
            if self._next >= self._end:
                self._next, self._end = await self._take_block()
            producer_id = self._next
            self._next += 1
        return producer_id, 0

    async def _take_block(self) -> tuple[int, int]:
        for _ in range(ATTEMPTS):
            current = await self._etcd.get(self._key)
            if current is None:
                first = 0
                guard = cmp_create_revision(self._key, "=", 0)
            else:
                last = metadata_pb2.ProducerIdBlock.FromString(current.value)
                first = last.first_producer_id + last.size
                guard = cmp_mod_revision(self._key, "=", current.mod_revision)
            if first > MAX_PRODUCER_ID - self._block_size:
                raise UnavailableError(Code.UNKNOWN_SERVER_ERROR, "producer ids are exhausted")
            block = metadata_pb2.ProducerIdBlock(
                broker_id=self._broker_id, first_producer_id=first, size=self._block_size
            )
            answer = await self._etcd.txn([guard], [op_put(self._key, block.SerializeToString())])
            if answer.succeeded:
                log.info("took producer ids %d..%d", first, first + self._block_size - 1)
                return first, first + self._block_size
        raise UnavailableError(
            Code.UNKNOWN_SERVER_ERROR, "could not take a producer id block (contention)"
        )
