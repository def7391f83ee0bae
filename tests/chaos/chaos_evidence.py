"""Evidence a chaos run collects for its checkers: log files, etcd history, replicas on disk.

Three independent witnesses of who led what:

* broker logs — each broker agent logs every become-leader / become-follower decision as
  ``<topic>-<p>: became leader (leader L, epoch E, isr [...])`` (logger
  ``services.broker_agent.state_change``), and every request it rejects as a whole for a stale
  controller or broker epoch;
* the controllers' state-change logs (``state-change-<id>.log``, JSON lines of
  :mod:`leasehold.statechange`), one line per partition transition with leader and leader epoch;
* etcd's own history of every partition-state value (the store of record), replayed with a watch
  from revision 1, which also yields each ``/controller_epoch`` bump and the controller epoch each
  controller-written value carries.

The parsers are pure (text in, values out); only the last two functions touch etcd and disk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from chaos_checks import ControllerWrite, EpochBump, LeaderClaim

from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.client import WatchEvent
from leasehold.metadata.v1 import metadata_pb2

BROKER_STATE_LOGGER = "services.broker_agent.state_change"
_BECAME = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+): became (?P<role>leader|follower) "
    r"\(leader (?P<leader>-?\d+), epoch (?P<epoch>-?\d+), isr \[[-\d, ]*\]\)$"
)
_REJECTED = re.compile(
    r"^(?P<request>LeaderAndIsr|StopReplica|UpdateMetadata) rejected: (?P<code>[A-Z_]+) "
    r"\(request controller epoch (?P<sent>-?\d+), known (?P<known>-?\d+);"
)


@dataclass(frozen=True)
class Rejection:
    """A control request a broker refused as a whole (seed 001's epoch fences)."""

    broker: int
    request: str
    code: str
    request_epoch: int
    known_epoch: int


@dataclass(frozen=True)
class BrokerLogEvidence:
    leader_claims: tuple[LeaderClaim, ...]  # "became leader": this broker led
    follower_claims: tuple[LeaderClaim, ...]  # "became follower of L": L led, as told
    rejections: tuple[Rejection, ...]


def _json_lines(text: str) -> Iterable[dict]:
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line of a SIGKILLed process


def parse_broker_log(text: str, broker: int) -> BrokerLogEvidence:
    leaders: list[LeaderClaim] = []
    followers: list[LeaderClaim] = []
    rejections: list[Rejection] = []
    source = f"broker-{broker}.log"
    for entry in _json_lines(text):
        msg = str(entry.get("msg", ""))
        if entry.get("logger") == BROKER_STATE_LOGGER and (m := _BECAME.match(msg)):
            topic, partition, epoch = m["topic"], int(m["partition"]), int(m["epoch"])
            if m["role"] == "leader":
                leaders.append(LeaderClaim(topic, partition, epoch, broker, source))
            elif int(m["leader"]) >= 0:
                followers.append(LeaderClaim(topic, partition, epoch, int(m["leader"]), source))
        elif m := _REJECTED.match(msg):
            rejections.append(
                Rejection(broker, m["request"], m["code"], int(m["sent"]), int(m["known"]))
            )
    return BrokerLogEvidence(tuple(leaders), tuple(followers), tuple(rejections))


@dataclass(frozen=True)
class StateChangeEvidence:
    leader_claims: tuple[LeaderClaim, ...]
    elected: tuple[tuple[int, int, int], ...]  # (ts_ms, controller id, epoch)


def parse_state_change_log(text: str, controller: int) -> StateChangeEvidence:
    claims: list[LeaderClaim] = []
    elected: list[tuple[int, int, int]] = []
    source = f"state-change-{controller}"
    for e in _json_lines(text):
        if e.get("kind") == "controller" and e.get("event") == "elected":
            elected.append((int(e["ts_ms"]), int(e["controller_id"]), int(e["controller_epoch"])))
        elif (
            e.get("kind") == "partition"
            and e.get("to_state") == "OnlinePartition"
            and int(e.get("leader", -1)) >= 0
        ):
            claims.append(
                LeaderClaim(
                    e["topic"], int(e["partition"]), int(e["leader_epoch"]), e["leader"], source
                )
            )
    return StateChangeEvidence(tuple(claims), tuple(elected))


@dataclass(frozen=True)
class EtcdHistory:
    bumps: tuple[EpochBump, ...]
    writes: tuple[ControllerWrite, ...]  # partition states and admin results
    leader_claims: tuple[LeaderClaim, ...]  # one per partition-state value with a leader
    revisions: int  # how many revisions were replayed


def history_from_events(keyspace: Keyspace, events: Iterable[WatchEvent]) -> EtcdHistory:
    """Decode the controller-relevant part of etcd's history (pure)."""
    bumps: list[EpochBump] = []
    writes: list[ControllerWrite] = []
    claims: list[LeaderClaim] = []
    last = 0
    for ev in events:
        kv = ev.kv
        last = max(last, kv.mod_revision)
        if ev.deleted or not kv.key.startswith(keyspace.root):
            continue
        key = kv.key.decode(errors="replace")
        if kv.key == keyspace.controller_epoch:
            pb = metadata_pb2.ControllerEpoch.FromString(kv.value)
            bumps.append(EpochBump(kv.mod_revision, pb.epoch, pb.controller_id))
        elif kv.key.startswith(keyspace.results_prefix):
            result = metadata_pb2.AdminResult.FromString(kv.value)
            writes.append(ControllerWrite(kv.mod_revision, key, result.controller_epoch))
        elif kv.key.startswith(keyspace.topics_prefix):
            parsed = keyspace.parse_topic_key(kv.key)
            if parsed is None or parsed[1] is None:
                continue  # a topic assignment: written by admin too, carries no epoch
            state = metadata_pb2.PartitionState.FromString(kv.value)
            writes.append(ControllerWrite(kv.mod_revision, key, state.controller_epoch))
            if state.leader >= 0:
                claims.append(
                    LeaderClaim(
                        parsed[0],
                        parsed[1],
                        state.leader_epoch,
                        state.leader,
                        f"etcd@{kv.mod_revision}",
                    )
                )
    return EtcdHistory(tuple(bumps), tuple(writes), tuple(claims), last)


async def replay_etcd(client: EtcdClient, keyspace: Keyspace) -> EtcdHistory:
    """Every event since revision 1, up to a marker key written now (outside the cluster root,
    so no service sees it), decoded."""
    marker = b"/chaos-history-marker"
    end = await client.put(marker, b"end")
    events: list[WatchEvent] = []
    async for batch in client.watch(b"/", prefix=True, start_revision=1):
        events.extend(batch.events)
        if any(ev.kv.mod_revision >= end for ev in batch.events):
            break
    return history_from_events(keyspace, events)


def read_replica(data_dir: Path, topic: str, partition: int) -> list[tuple[int, str, int]]:
    """(offset, record id, leader epoch of its batch) of every record of a stopped broker's
    replica, read from its segment files."""
    from services.broker_agent.log import Log, iter_batches

    directory = data_dir / f"{topic}-{partition}"
    if not directory.is_dir():
        return []
    log = Log.open(directory)
    try:
        out: list[tuple[int, str, int]] = []
        offset, end = log.log_start_offset, log.log_end_offset
        while offset < end:
            batches = list(iter_batches(log.read(offset, 1 << 20).records))
            for b in batches:
                for r in b.records():
                    rid = r.value.decode(errors="replace") if r.value is not None else ""
                    out.append((r.offset, rid, b.partition_leader_epoch))
            offset = batches[-1].last_offset + 1
        return out
    finally:
        log.close()
