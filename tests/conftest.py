"""Shared fixtures: a real etcd server for the session, and a fresh cluster prefix per test.

Clients in tests talk to plaintext test clusters (``LocalCluster`` starts its services with
``--insecure`` unless ``tls=True``) and say so: the CLI and SDK read a client config file that
says ``insecure``, never the developer's own (``leasehold.client_config``). Tests of TLS pass
their certificates explicitly, which wins over the file.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import settings

from leasehold.etcd import EtcdClient, Keyspace
from leasehold.testing.etcd_server import EtcdServer


def _plaintext_client_config() -> None:
    for name in ("LEASEHOLD_TLS_CA", "LEASEHOLD_TLS_CERT", "LEASEHOLD_TLS_KEY", "LEASEHOLD_ADMIN"):
        os.environ.pop(name, None)
    os.environ["LEASEHOLD_CLIENT_CONFIG"] = str(Path(__file__).with_name("client-insecure.json"))


_plaintext_client_config()

# Property tests check results, not speed: on a loaded 2-core machine one example can take
# longer than Hypothesis's default 200 ms deadline without anything being wrong.
settings.register_profile("leasehold", deadline=None)
settings.load_profile("leasehold")


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
