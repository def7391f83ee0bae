"""The groups of one ``__consumer_offsets`` partition this broker leads (a coordinator shard).

A shard is loaded when leadership of its partition arrives: the partition's records, from the
log start to the log end, are replayed into fresh groups (compaction keeps the latest record of
each key, so the log is the state). Until loaded, calls are answered
COORDINATOR_LOAD_IN_PROGRESS. Afterwards every change is a write: decide, append, replay, and
answer once committed (``RecordWriter``). The shard also keeps each member's session deadline
and, while a member revokes partitions, its rebalance deadline (in memory: a new coordinator
starts every member's session afresh, as Kafka's does).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from services.broker_agent.group.group import ConsumerGroup
from services.broker_agent.group.model import Member, MemberState
from services.broker_agent.group.records import GroupRecord, decode
from services.broker_agent.group.writer import RecordWriter
from services.broker_agent.log import Log, decode_records

READ_CHUNK = 1024 * 1024

MemberKey = tuple[str, str]  # (group id, member id)


def read_records(log: Log, end_offset: int) -> Iterator[GroupRecord]:
    """Every group record of ``log`` from its start up to ``end_offset`` (blocking)."""
    offset = log.log_start_offset
    while offset < end_offset:
        data = log.read(offset, READ_CHUNK, max_offset=end_offset).records
        records = decode_records(data)
        if not records:
            return
        for r in records:
            if r.offset >= offset:
                found = decode(r.key, r.value)
                if found is not None:
                    yield found
        offset = records[-1].offset + 1


class Shard:
    def __init__(self, index: int, writer: RecordWriter) -> None:
        self.index = index
        self.writer = writer
        self.groups: dict[str, ConsumerGroup] = {}
        self.loaded = False
        self.sessions: dict[MemberKey, int] = {}  # member -> when its session ends (ms)
        self.revocations: dict[MemberKey, int] = {}  # member -> when it must have revoked

    @property
    def leader_epoch(self) -> int:
        return self.writer.leader_epoch

    def group(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def replay(self, records: Sequence[GroupRecord]) -> None:
        for record in records:
            group = self.groups.get(record.group_id)
            if group is None:
                group = self.groups[record.group_id] = ConsumerGroup(record.group_id)
            group.replay(record)
            if group.is_dead:
                del self.groups[record.group_id]

    async def write(self, records: Sequence[GroupRecord], now_ms: int) -> None:
        """Append, replay, and wait until committed; nothing happens when nothing is owed.

        The replay comes before the wait, so the next decision sees these records (decisions
        are taken one at a time on the event loop); if the wait fails the records may still
        commit — the shard goes on from the log's state either way, or is unloaded.
        """
        if not records:
            return
        required = self.writer.append(records, now_ms)
        self.replay(records)
        await self.writer.committed(required)

    async def settled(self) -> None:
        """Wait until everything appended so far is committed (reads see committed state)."""
        await self.writer.committed(self.writer.last_offset)

    # ------------------------------------------------------------------ timers

    def start_sessions(self, now_ms: int, session_timeout_ms: int) -> None:
        """After loading: every member's session starts now."""
        for group in self.groups.values():
            for member in group.members.values():
                self.track(group.group_id, member, now_ms, session_timeout_ms)

    def track(self, group_id: str, member: Member | None, now_ms: int, session_ms: int) -> None:
        """A heartbeat from ``member`` (None: it left): renew or drop its deadlines."""
        if member is None:
            return
        key = (group_id, member.member_id)
        self.sessions[key] = now_ms + session_ms
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            self.revocations.setdefault(key, now_ms + member.rebalance_timeout_ms)
        else:
            self.revocations.pop(key, None)

    def forget(self, group_id: str, member_id: str) -> None:
        self.sessions.pop((group_id, member_id), None)
        self.revocations.pop((group_id, member_id), None)

    def expired(self, now_ms: int) -> list[MemberKey]:
        """Members whose session or revocation time is up (and who are still members)."""
        due = {k for k, t in self.sessions.items() if t <= now_ms}
        due |= {k for k, t in self.revocations.items() if t <= now_ms}
        out = []
        for key in sorted(due):
            group = self.groups.get(key[0])
            if group is not None and key[1] in group.members:
                out.append(key)
            else:
                self.forget(*key)
        return out
