"""One real cluster shared by every fuzz test of the session (starting one takes seconds)."""

from __future__ import annotations

import pytest
from fuzz_harness import FuzzCluster


@pytest.fixture(scope="session")
def fuzz():
    cluster = FuzzCluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()
