"""The digest of a broker's metadata cache, shared by the controller and the broker agent.

A new controller must make every broker take its epoch before anything else (seed 003:
UpdateMetadata first). Kafka's controller sends every partition's state for that, and at
100,000 partitions each broker then spends most of a second decoding states it already holds:
the old controller told it the very same ones. So both sides keep a digest of the partition
states a broker caches, and the new controller first sends only its epoch, the live brokers
and the digest of what it would have sent (``UpdateMetadataRequest.metadata_digest``). A
broker whose cache has that digest takes the request as if it had carried every partition; any
other broker answers ``METADATA_DIGEST_MISMATCH``, changes nothing, and gets the full request.

The digest is a multiset hash: the sum, modulo 2**128, of BLAKE2b-128 of each cached partition
state's protobuf encoding (``UpdateMetadataPartitionState``, as the controller serialises it
and as protobuf re-serialises it after a parse: fields in number order, defaults omitted). A
sum can be updated one partition at a time, in any order, which is what both caches need.
Partitions the broker does not cache (a topic being deleted, leader -2) are not in it.
The live brokers have a digest of the same kind (``live_brokers_base``): the sum of BLAKE2b-128
of each live broker's ``BrokerEndpoint`` encoding. The controller names the set a broker should
hold and sends only what changed since it (brokers that joined, changed or left), so a failover
or a broker failure costs each broker the change, not the whole cluster's broker list.
Collisions are a 2**-128 chance per comparison; nothing here is adversarial, the controller
is trusted and the worst outcome of a mismatch is the full request.
"""

from __future__ import annotations

from hashlib import blake2b

DIGEST_SIZE = 16
_MODULUS = 1 << (8 * DIGEST_SIZE)


def state_hash(encoded_state: bytes) -> int:
    """One partition state's contribution, from its ``UpdateMetadataPartitionState`` bytes."""
    return int.from_bytes(blake2b(encoded_state, digest_size=DIGEST_SIZE).digest(), "little")


def endpoint_hash(encoded_endpoint: bytes) -> int:
    """One live broker's contribution, from its ``BrokerEndpoint`` bytes."""
    return int.from_bytes(blake2b(encoded_endpoint, digest_size=DIGEST_SIZE).digest(), "little")


def combine(total: int, added: int = 0, removed: int = 0) -> int:
    """``total`` with one state's hash added and/or another's taken away."""
    return (total + added - removed) % _MODULUS


def to_bytes(total: int) -> bytes:
    """The wire form of a digest (``metadata_digest``): 16 bytes, little-endian."""
    return (total % _MODULUS).to_bytes(DIGEST_SIZE, "little")


def from_bytes(data: bytes) -> int:
    """A digest read off the wire; ValueError unless it is exactly 16 bytes."""
    if len(data) != DIGEST_SIZE:
        raise ValueError(f"a metadata digest is {DIGEST_SIZE} bytes, not {len(data)}")
    return int.from_bytes(data, "little")
