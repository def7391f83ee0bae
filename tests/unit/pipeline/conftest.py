"""One local[2] SparkSession for every Spark test of the pipeline (JVM start-up is ~10 s)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from services.pipeline.session import SparkSettings, build_session

    session = build_session(
        SparkSettings(master="local[2]", app_name="leasehold-tests", shuffle_partitions=2)
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
