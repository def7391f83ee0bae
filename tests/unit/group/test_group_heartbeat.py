"""ConsumerGroupHeartbeat decisions on a group rebuilt from its records: joins and rebalances
(revoke before assign), zombie fencing, leaving, static membership, session expiry, and the
offset commit rules. Every record goes through its log encoding before it is replayed, as a
coordinator loading ``__consumer_offsets`` would see it."""

from __future__ import annotations

import itertools

import pytest

from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import LeaseholdError
from services.broker_agent.group import heartbeat as hb
from services.broker_agent.group import offsets
from services.broker_agent.group.group import ConsumerGroup
from services.broker_agent.group.model import GroupConfig, GroupState, MemberState
from services.broker_agent.group.records import decode, encode
from services.broker_agent.group.shard import Shard

TOPICS = {"t": 4}


def ps(*numbers: int) -> frozenset:
    return frozenset(("t", n) for n in numbers)


class Harness:
    """One group, a coordinator's decisions, and the records replayed after each."""

    def __init__(self, **config) -> None:
        ids = (f"m{i}" for i in itertools.count(1))
        self.ctx = hb.Context(GroupConfig(**config), TOPICS.get, lambda: next(ids))
        self.group: ConsumerGroup | None = None

    def apply(self, records) -> None:
        if self.group is None:
            self.group = ConsumerGroup("g")
        for r in records:
            self.group.replay(decode(*encode(r)))

    def beat(self, member_id="", epoch=0, owned=None, topics=None, **kw) -> hb.HeartbeatResult:
        if epoch == 0 and topics is None:
            topics = ("t",)
        if epoch == 0 and owned is None:
            owned = frozenset()
        req = hb.HeartbeatRequest(
            "g", member_id, epoch, subscribed_topics=topics, owned=owned, **kw
        )
        result = hb.heartbeat(self.group, req, self.ctx)
        self.apply(result.records)
        return result


def code_of(excinfo) -> int:
    return excinfo.value.code


def test_first_member_gets_everything_at_epoch_one():
    h = Harness()
    r = h.beat()
    assert (r.member_id, r.member_epoch, r.assignment) == ("m1", 1, ps(0, 1, 2, 3))
    assert h.group.state == GroupState.STABLE and h.group.group_epoch == 1


def test_a_joiner_waits_until_the_owner_revoked():
    h = Harness()
    a = h.beat()
    b = h.beat()
    assert h.group.group_epoch == 2
    target_b = h.group.target["m2"]
    assert len(target_b) == 2 and b.member_epoch == 2
    assert b.assignment == frozenset()  # still held by m1
    assert h.group.members["m2"].state == MemberState.UNRELEASED_PARTITIONS
    # m1 is told to give up m2's half, at its old epoch
    a2 = h.beat("m1", a.member_epoch, owned=a.assignment)
    assert a2.member_epoch == 1 and a2.assignment == a.assignment - target_b
    assert h.group.members["m1"].state == MemberState.UNREVOKED_PARTITIONS
    assert h.group.state == GroupState.RECONCILING
    # it has not revoked yet: no change
    again = h.beat("m1", 1, owned=a.assignment)
    assert again.member_epoch == 1 and h.group.members["m1"].pending_revocation == target_b
    # revoked: moves to epoch 2
    a3 = h.beat("m1", 1, owned=a2.assignment)
    assert a3.member_epoch == 2
    # now m2 gets its half
    b2 = h.beat("m2", 2, owned=frozenset())
    assert b2.assignment == target_b
    assert h.group.state == GroupState.STABLE
    owners = [tp for m in h.group.members.values() for tp in m.assigned]
    assert sorted(owners) == sorted(ps(0, 1, 2, 3))


@pytest.mark.parametrize(
    ("sent_epoch", "owned"),
    [
        (1, None),  # the previous epoch without saying what it owns
        (1, ps(0, 1, 2, 3)),  # the previous epoch, owning what it gave up since
        (3, ps()),  # an epoch the coordinator never gave
    ],
)
def test_zombies_are_fenced(sent_epoch, owned):
    h = Harness()
    h.beat()
    h.beat()  # m2 joins: group epoch 2
    h.beat("m1", 1, owned=ps(0, 1, 2, 3))
    h.beat("m1", 1, owned=h.group.members["m1"].assigned)  # m1 at epoch 2
    with pytest.raises(LeaseholdError) as e:
        h.beat("m1", sent_epoch, owned=owned)
    assert code_of(e) == c.ERROR_CODE_FENCED_MEMBER_EPOCH


def test_previous_epoch_with_a_subset_is_a_lost_answer_not_a_zombie():
    h = Harness()
    h.beat()
    h.beat()
    h.beat("m1", 1, owned=ps(0, 1, 2, 3))
    mine = h.group.members["m1"].assigned
    h.beat("m1", 1, owned=mine)  # epoch 2 given, answer "lost"
    r = h.beat("m1", 1, owned=mine)
    assert r.member_epoch == 2
    assert r.assignment == mine  # sent again: the member may not have it
    assert h.beat("m1", 2, owned=mine).assignment is None  # caught up: nothing to send


def test_unknown_member_and_bad_requests():
    h = Harness()
    h.beat()
    with pytest.raises(LeaseholdError) as e:
        h.beat("nobody", 1)
    assert code_of(e) == c.ERROR_CODE_UNKNOWN_MEMBER_ID
    with pytest.raises(LeaseholdError) as e:
        h.beat("", 0, topics=None, owned=ps(), rebalance_timeout_ms=1, server_assignor="sticky")
    assert code_of(e) == c.ERROR_CODE_UNSUPPORTED_ASSIGNOR
    with pytest.raises(LeaseholdError) as e:
        h.beat("", 0, owned=ps(1))
    assert code_of(e) == c.ERROR_CODE_INVALID_REQUEST
    with pytest.raises(LeaseholdError) as e:
        h.beat("m1", -3)
    assert code_of(e) == c.ERROR_CODE_INVALID_REQUEST


def test_leaving_bumps_the_epoch_and_frees_the_partitions():
    h = Harness()
    h.beat()
    h.beat()
    h.beat("m1", 1, owned=ps(0, 1, 2, 3))
    h.beat("m1", 1, owned=h.group.members["m1"].assigned)
    h.beat("m2", 2, owned=frozenset())
    left = h.beat("m2", -1)
    assert left.member_epoch == -1 and "m2" not in h.group.members
    assert h.group.group_epoch == 3
    r = h.beat("m1", 2, owned=h.group.members["m1"].assigned)
    assert r.member_epoch == 3 and r.assignment == ps(0, 1, 2, 3)


def test_a_static_member_comes_back_to_its_assignment():
    h = Harness()
    a = h.beat(instance_id="i-1")
    h.beat(instance_id="i-2")
    h.beat(a.member_id, 1, owned=ps(0, 1, 2, 3))
    h.beat(a.member_id, 1, owned=h.group.members[a.member_id].assigned)
    held = h.group.members[a.member_id].assigned
    epoch = h.group.group_epoch
    # the same instance id while the member is active: refused
    with pytest.raises(LeaseholdError) as e:
        h.beat(instance_id="i-1")
    assert code_of(e) == c.ERROR_CODE_UNRELEASED_INSTANCE_ID
    h.beat(a.member_id, -2, instance_id="i-1")  # leaves for now (a restart)
    assert h.group.group_epoch == epoch  # no rebalance
    back = h.beat(instance_id="i-1")
    assert back.member_id != a.member_id and a.member_id not in h.group.members
    assert back.assignment == held and h.group.group_epoch == epoch


def test_session_expiry_removes_the_member():
    h = Harness(session_timeout_ms=1000)
    h.beat()
    h.beat()
    shard = Shard(0, writer=None)  # timers only
    shard.groups["g"] = h.group
    for m in h.group.members.values():
        shard.track("g", m, 0, 1000)
    shard.track("g", h.group.members["m1"], 900, 1000)  # m1 heartbeats again
    assert shard.expired(999) == []
    assert shard.expired(1000) == [("g", "m2")]
    h.apply(hb.fence_member(h.group, "m2", h.ctx))
    assert set(h.group.members) == {"m1"} and h.group.group_epoch == 3
    assert shard.expired(1000) == []  # no longer a member: forgotten


def test_a_member_that_does_not_revoke_in_time_is_due():
    h = Harness()
    h.beat(rebalance_timeout_ms=500)
    h.beat()
    h.beat("m1", 1, owned=ps(0, 1, 2, 3))  # told to revoke
    shard = Shard(0, writer=None)
    shard.groups["g"] = h.group
    shard.track("g", h.group.members["m1"], 100, 10_000)
    assert shard.expired(599) == []
    assert shard.expired(600) == [("g", "m1")]


def test_commit_rules():
    h = Harness()
    cfg = GroupConfig(offset_metadata_max_bytes=8)
    item = offsets.CommitItem(("t", 0), 42, 3, "x")
    # from outside an empty (unknown) group: accepted
    records, out = offsets.commit(None, "g", "", -1, [item], cfg, 1)
    assert [o.error for o in out] == [c.ERROR_CODE_NONE]
    h.apply(records)
    assert h.group.offsets[("t", 0)].offset == 42 and h.group.offsets[("t", 0)].leader_epoch == 3
    r = h.beat()
    with pytest.raises(LeaseholdError) as e:  # from outside a group with members
        offsets.commit(h.group, "g", "", -1, [item], cfg, 1)
    assert code_of(e) == c.ERROR_CODE_UNKNOWN_MEMBER_ID
    with pytest.raises(LeaseholdError) as e:
        offsets.commit(h.group, "g", r.member_id, r.member_epoch + 1, [item], cfg, 1)
    assert code_of(e) == c.ERROR_CODE_STALE_MEMBER_EPOCH
    big = offsets.CommitItem(("t", 1), 1, -1, "y" * 9)
    neg = offsets.CommitItem(("t", 2), -5)
    records, out = offsets.commit(
        h.group, "g", r.member_id, r.member_epoch, [item, big, neg], cfg, 2
    )
    assert [o.error for o in out] == [
        c.ERROR_CODE_NONE,
        c.ERROR_CODE_OFFSET_METADATA_TOO_LARGE,
        c.ERROR_CODE_INVALID_REQUEST,
    ]
    assert len(records) == 1
    assert offsets.fetch(h.group, [("t", 0), ("t", 3)])[("t", 3)].offset == -1


def test_delete_only_an_empty_group_and_its_offsets_go():
    h = Harness()
    r = h.beat()
    records, _ = offsets.commit(
        h.group, "g", r.member_id, 1, [offsets.CommitItem(("t", 0), 7)], GroupConfig(), 1
    )
    h.apply(records)
    with pytest.raises(LeaseholdError) as e:
        hb.delete_group(h.group)
    assert code_of(e) == c.ERROR_CODE_NON_EMPTY_GROUP
    h.beat(r.member_id, -1)
    h.apply(hb.delete_group(h.group))
    assert h.group.is_dead


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"member_id": "m" * 256}, "member_id"),
        ({"instance_id": "i" * 256}, "instance_id"),
        ({"rack_id": "r" * 256}, "rack_id"),
        ({"topics": ("bad topic",)}, "subscription"),
        ({"topics": ("t" * 100_000,)}, "subscription"),
    ],
)
def test_unbounded_or_illegal_input_is_refused_and_changes_nothing(kw, field):
    h = Harness()
    h.beat()
    before = dict(h.group.members)
    with pytest.raises(LeaseholdError) as e:
        h.beat(**kw)
    assert code_of(e) == c.ERROR_CODE_INVALID_REQUEST and e.value.field == field
    assert len(e.value.message) < 400  # never an echo of unbounded input
    assert h.group.members == before


def test_commit_of_an_illegal_topic_fails_that_partition_only():
    records, out = offsets.commit(
        None, "g", "", -1,
        [offsets.CommitItem(("bad/topic", 0), 1), offsets.CommitItem(("t", 0), 1)],
        GroupConfig(), 1,
    )  # fmt: skip
    assert [o.error for o in out] == [c.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, c.ERROR_CODE_NONE]
    assert len(records) == 1
    with pytest.raises(LeaseholdError):
        offsets.commit(None, "g" * 256, "", -1, [], GroupConfig(), 1)
