"""LocalCluster.stop stops every process even when one of them will not go; remove_workdir
deletes only a work directory the cluster made."""

from __future__ import annotations

import subprocess

import pytest

from leasehold.testing.cluster import ClusterSpec, LocalCluster


class FakeProc:
    def __init__(self, name: str, stopped: list[str], fails: bool = False) -> None:
        self.name = name
        self._stopped = stopped
        self._fails = fails

    def resume(self) -> None:
        pass

    def terminate(self, timeout: float = 30.0) -> int | None:
        if self._fails:
            raise subprocess.TimeoutExpired(self.name, timeout)
        self._stopped.append(self.name)
        return 0


class FakeEtcd:
    def __init__(self, stopped: list[str]) -> None:
        self._stopped = stopped

    def stop(self) -> None:
        self._stopped.append("etcd")


def cluster_of(stopped: list[str], failing: set[str], tmp_path) -> LocalCluster:
    def proc(name: str) -> FakeProc:
        return FakeProc(name, stopped, name in failing)

    cluster = LocalCluster(ClusterSpec(controllers=0, brokers=0), workdir=str(tmp_path))
    cluster.brokers = {b: proc(f"broker-{b}") for b in (1, 2)}
    cluster.admin = proc("admin")
    cluster.controllers = {1: proc("controller-1")}
    cluster.etcd = FakeEtcd(stopped)
    return cluster


def test_stop_order_brokers_admin_controllers_etcd(tmp_path):
    stopped: list[str] = []
    cluster_of(stopped, set(), tmp_path).stop()
    assert stopped == ["broker-1", "broker-2", "admin", "controller-1", "etcd"]


def test_a_process_that_will_not_stop_does_not_leave_the_rest_running(tmp_path):
    stopped: list[str] = []
    cluster = cluster_of(stopped, {"broker-1", "controller-1"}, tmp_path)
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        cluster.stop()
    assert raised.value.cmd == "broker-1"  # the first failure is the one reported
    assert stopped == ["broker-2", "admin", "etcd"]


def test_remove_workdir_deletes_only_a_temporary_one(tmp_path, monkeypatch):
    monkeypatch.delenv("LEASEHOLD_KEEP_TEST_DIRS", raising=False)
    made = LocalCluster(ClusterSpec(controllers=0, brokers=0))
    (made.workdir / "broker-1.log").write_text("x")
    given = LocalCluster(ClusterSpec(controllers=0, brokers=0), workdir=str(tmp_path / "mine"))
    made.remove_workdir()
    given.remove_workdir()
    assert not made.workdir.exists()
    assert given.workdir.exists()


def test_remove_workdir_keeps_it_when_asked(monkeypatch):
    monkeypatch.setenv("LEASEHOLD_KEEP_TEST_DIRS", "1")
    made = LocalCluster(ClusterSpec(controllers=0, brokers=0))
    try:
        made.remove_workdir()
        assert made.workdir.exists()
    finally:
        monkeypatch.delenv("LEASEHOLD_KEEP_TEST_DIRS")
        made.remove_workdir()
    assert not made.workdir.exists()
