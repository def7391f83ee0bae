"""etcd building blocks: client, keyspace, sessions, elections, fenced writes, gap-free watches."""

from leasehold.etcd.client import (
    KV,
    CompactedError,
    EtcdClient,
    EtcdError,
    TxnResult,
    WatchEvent,
)
from leasehold.etcd.keys import Keyspace
from leasehold.etcd.session import Renewer, Session

__all__ = [
    "KV",
    "CompactedError",
    "EtcdClient",
    "EtcdError",
    "Keyspace",
    "Renewer",
    "Session",
    "TxnResult",
    "WatchEvent",
]
