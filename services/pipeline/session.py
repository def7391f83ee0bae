"""The one place a SparkSession is built for Leasehold's jobs.

Local runs (``local[*]``, tests on ``local[2]``) need a few things a Spark cluster does not: no UI
(it binds a port per session), few shuffle partitions (the default 200 makes small jobs crawl),
loopback-only networking when ``SPARK_LOCAL_IP`` says so, and executors that run the same Python
as the driver. Under ``spark-submit`` the master and resources come from Spark's own
configuration, which this builder leaves alone unless told otherwise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark import SparkConf
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


@dataclass(frozen=True)
class SparkSettings:
    """How to build the session; ``None`` leaves a value to Spark's configuration."""

    master: str | None = None
    app_name: str = "leasehold-pipeline"
    shuffle_partitions: int | None = None
    driver_memory: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)


def resolve_master(settings: SparkSettings, submitted: SparkConf) -> str:
    """The explicit setting, else what spark-submit configured, else ``local[*]``."""
    if settings.master:
        return settings.master
    return submitted.get("spark.master", DEFAULT_MASTER) or DEFAULT_MASTER


def session_conf(settings: SparkSettings, master: str, env: Mapping[str, str]) -> dict[str, str]:
    """The configuration entries this builder sets (pure, so it is unit-tested)."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.adaptive.enabled": "true",
    }
    local = master.startswith("local")
    if settings.shuffle_partitions is not None:
        conf["spark.sql.shuffle.partitions"] = str(settings.shuffle_partitions)
    elif local:
        cores = os.cpu_count() or 2
        conf["spark.sql.shuffle.partitions"] = str(max(2, 2 * cores))
    if local:
        host = env.get("SPARK_LOCAL_IP")
        if host:
            conf["spark.driver.host"] = host
            conf["spark.driver.bindAddress"] = host
    if settings.driver_memory:
        conf["spark.driver.memory"] = settings.driver_memory
    conf.update(settings.conf)
    return conf


def build_session(settings: SparkSettings | None = None) -> SparkSession:
    """Get or create the session and register the ``leasehold`` data source on it."""
    settings = settings or SparkSettings()
    master = resolve_master(settings, SparkConf())
    if master.startswith("local"):
        # Executors are forked from this interpreter's environment: make them use our venv.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(settings.app_name).master(master)
    for key, value in session_conf(settings, master, os.environ).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register_data_source(spark)
    return spark


def register_data_source(spark: SparkSession) -> None:
    """Make ``spark.read.format("leasehold")`` available in this session."""
    from services.pipeline.datasource import LeaseholdDataSource

    spark.dataSource.register(LeaseholdDataSource)
