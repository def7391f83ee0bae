"""Fixtures for controller tests; the harness itself is in ``ctlharness``."""

from __future__ import annotations

import contextlib

import pytest
from ctlharness import Cluster


@pytest.fixture
async def cluster(etcd, keyspace, etcd_endpoint):
    c = Cluster(etcd, keyspace, etcd_endpoint)
    try:
        yield c
    finally:
        for node in c.controllers:
            with contextlib.suppress(Exception):
                await node.stop()
        for b in c.brokers.values():
            with contextlib.suppress(Exception):
                await b.stop()
