"""A coordinator's records through a real compacted log: after joins, rebalances, commits and a
member leaving, the log is cleaned (latest record per key, tombstones past delete.retention.ms
dropped) and a new coordinator loading it (``read_records``) rebuilds the same groups."""

from __future__ import annotations

import itertools
from pathlib import Path

from services.broker_agent.group import heartbeat as hb
from services.broker_agent.group import offsets
from services.broker_agent.group.group import ConsumerGroup
from services.broker_agent.group.model import GroupConfig
from services.broker_agent.group.records import encode
from services.broker_agent.group.shard import Shard, read_records
from services.broker_agent.log import Log, LogConfig, Record
from services.broker_agent.log.cleaner import CleanerSettings, LogCleaner

T0 = 1_700_000_000_000
COMPACT = LogConfig(
    cleanup_policy=("compact",), segment_bytes=600, min_cleanable_dirty_ratio=0.0,
    delete_retention_ms=0,
)  # fmt: skip


def state(group: ConsumerGroup) -> tuple:
    return (
        group.group_epoch, group.assignment_epoch, dict(group.members), dict(group.target),
        dict(group.offsets), dict(group.owners), group.subscription_metadata,
    )  # fmt: skip


def test_a_cleaned_log_rebuilds_the_same_groups(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "__consumer_offsets-0", COMPACT, clock=lambda: T0)
    ids = (f"m{i}" for i in itertools.count(1))
    ctx = hb.Context(GroupConfig(), {"t": 6}.get, lambda: next(ids))
    live = Shard(0, writer=None)

    def write(records) -> None:
        for r in records:
            key, value = encode(r)
            log.append_as_leader([Record(value, key, (), T0)], 1)
        log.update_high_watermark(log.log_end_offset)
        live.replay(records)

    def beat(group_id, member_id="", epoch=0, owned=None):
        topics = ("t",) if epoch == 0 else None
        owned = frozenset() if epoch == 0 else owned
        req = hb.HeartbeatRequest(group_id, member_id, epoch, subscribed_topics=topics, owned=owned)
        result = hb.heartbeat(live.group(group_id), req, ctx)
        write(result.records)
        return result

    for group_id in ("g1", "g2"):
        a = beat(group_id)
        b = beat(group_id)
        beat(group_id, a.member_id, a.member_epoch, a.assignment)  # revoke
        mine = live.group(group_id).members[a.member_id].assigned
        beat(group_id, a.member_id, a.member_epoch, mine)
        beat(group_id, b.member_id, b.member_epoch, frozenset())
        for n in range(5):  # commits overwrite each other
            member = live.group(group_id).members[a.member_id]
            records, _ = offsets.commit(
                live.group(group_id), group_id, a.member_id, member.member_epoch,
                [offsets.CommitItem(tp, 10 * n) for tp in sorted(mine)], GroupConfig(), T0,
            )  # fmt: skip
            write(records)
    leaver = sorted(live.group("g2").members)[1]
    beat("g2", leaver, -1)  # leaves: its records become tombstones
    before = log.log_end_offset

    cleaner = LogCleaner(
        lambda: {("__consumer_offsets", 0): log}, log._local._handles, CleanerSettings()
    )
    while cleaner.clean_once(now_ms=T0 + 1) is not None:
        pass
    kept = list(read_records(log, log.log_end_offset))
    assert len(kept) < before  # compaction removed superseded records and tombstones

    loaded = Shard(0, writer=None)
    loaded.replay(kept)
    assert sorted(loaded.groups) == sorted(live.groups) == ["g1", "g2"]
    for group_id in live.groups:
        assert state(loaded.groups[group_id]) == state(live.groups[group_id])
    assert len(loaded.groups["g2"].members) == 1
