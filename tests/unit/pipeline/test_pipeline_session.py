"""Session configuration (pure): what local runs get and what spark-submit keeps."""

from __future__ import annotations

from pyspark import SparkConf

from services.pipeline.session import SparkSettings, resolve_master, session_conf


def test_master_resolution():
    assert resolve_master(SparkSettings(master="local[3]"), SparkConf()) == "local[3]"
    submitted = SparkConf(loadDefaults=False).set("spark.master", "spark://h:7077")
    assert resolve_master(SparkSettings(), submitted) == "spark://h:7077"
    assert resolve_master(SparkSettings(), SparkConf(loadDefaults=False)) == "local[*]"


def test_local_conf_is_quiet_small_and_loopback():
    conf = session_conf(
        SparkSettings(shuffle_partitions=2), "local[2]", {"SPARK_LOCAL_IP": "127.0.0.1"}
    )
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.sql.shuffle.partitions"] == "2"
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"


def test_cluster_conf_leaves_networking_and_partitions_to_spark():
    conf = session_conf(
        SparkSettings(conf={"spark.x": "1"}), "yarn", {"SPARK_LOCAL_IP": "10.0.0.1"}
    )
    assert "spark.sql.shuffle.partitions" not in conf
    assert "spark.driver.host" not in conf
    assert conf["spark.x"] == "1" and conf["spark.ui.enabled"] == "false"
    local = session_conf(SparkSettings(driver_memory="4g"), "local[*]", {})
    assert int(local["spark.sql.shuffle.partitions"]) >= 2
    assert local["spark.driver.memory"] == "4g" and "spark.driver.host" not in local
