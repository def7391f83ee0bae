"""Shared fixtures: a real etcd server for the session, and a fresh cluster prefix per test."""

from __future__ import annotations

import os
import uuid

import pytest

from leasehold.etcd import EtcdClient, Keyspace
from leasehold.testing.etcd_server import EtcdServer


@pytest.fixture(scope="session")
def etcd_server():
    """One real etcd for the whole run; tests isolate themselves by cluster id."""
    server = EtcdServer()
    server.start()
    os.environ.setdefault("LEASEHOLD_TEST_ETCD", server.endpoint)
    yield server
    server.stop()


@pytest.fixture
def etcd_endpoint(etcd_server) -> str:
    return etcd_server.endpoint


@pytest.fixture
def keyspace() -> Keyspace:
    return Keyspace(cluster_id=f"test-{uuid.uuid4().hex[:10]}")


@pytest.fixture
async def etcd(etcd_endpoint):
    client = EtcdClient([etcd_endpoint])
    await client.connect()
    yield client
    await client.close()
