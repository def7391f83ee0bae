"""A consumer group in a chaos run, and its two checks.

``GroupReaders`` runs ``members`` SDK ``GroupConsumer``s of one group (auto-commit every second)
over the chaos topic while the faults happen: coordinators die and move, partition leaders
change, members rebalance. Every record a member returns is recorded. After the producers stop,
the members catch up, then stop cleanly (a final commit and a leave); one new member then joins
and the positions it starts at are recorded. The checks (pure functions):

- **consumed at least once**: every acknowledged record was returned to some member;
- **resume at the commit**: after the clean stop the committed offset of every partition is its
  log end (everything was consumed and committed), and the new member starts exactly there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping

from chaos_checks import Ack, CheckResult, Seen, _result

from leasehold.client import GroupClient, GroupConsumer
from leasehold.client.metadata import ClusterMetadata
from leasehold.errors import LeaseholdError

log = logging.getLogger(__name__)

GROUP = "chaos-group"


class GroupReaders:
    def __init__(self, admin: str, topic: str, partitions: int, members: int, clock) -> None:
        self.admin = admin
        self.topic = topic
        self.partitions = partitions
        self.clock = clock
        self.seen: list[Seen] = []
        self.errors: list[str] = []
        self.committed: dict[int, int] = {}
        self.resumed_at: dict[int, int] = {}
        self._members = [self._member(f"group-{i}", True) for i in range(1, members + 1)]
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    def _member(self, name: str, auto_commit: bool) -> GroupConsumer:
        return GroupConsumer(
            GROUP, [self.topic], admin=self.admin, client_id=name, max_wait_ms=300,
            enable_auto_commit=auto_commit, auto_commit_interval_ms=1000,
            request_timeout_ms=5_000,
        )  # fmt: skip

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._read(m), name=m.client_id) for m in self._members]

    async def _read(self, member: GroupConsumer) -> None:
        joined = False
        while not self._stop.is_set():
            try:
                if not joined:
                    await member.start()
                    joined = True
                for r in await member.poll(timeout_ms=500):
                    rid = r.value.decode(errors="replace") if r.value is not None else ""
                    self.seen.append(Seen(member.client_id, r.partition, r.offset, rid))
            except LeaseholdError as e:
                self.errors.append(f"t={self.clock():.1f}s {member.client_id}: {e!r}")
                await asyncio.sleep(0.5)

    async def catch_up(self, acked: Iterable[str], timeout_s: float) -> bool:
        """Until every acknowledged record was returned to a member, or ``timeout_s``."""
        wanted = set(acked)
        deadline = time.monotonic() + timeout_s
        while not wanted <= {s.rid for s in self.seen}:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.5)
        return True

    async def stop_and_resume(self, timeout_s: float) -> None:
        """Stop every member cleanly; record the commits and where a new member starts."""
        self._stop.set()
        await asyncio.gather(*self._tasks)
        for m in self._members:
            await m.close()  # final auto-commit, then leave
        metadata = ClusterMetadata(self.admin)
        try:
            found = await GroupClient(metadata).committed(GROUP)
            self.committed = {p: c.offset for (_, p), c in found.items()}
        finally:
            await metadata.close()
        fresh = self._member("group-resumed", False)
        try:
            await fresh.start()
            deadline = time.monotonic() + timeout_s
            while len(fresh.assignment()) < self.partitions and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            # positions as assigned, before any poll moves them
            self.resumed_at = {p: fresh.position(t, p) for t, p in fresh.assignment()}
        finally:
            with contextlib.suppress(LeaseholdError):
                await fresh.close()


def check_group_consumed(acks: Iterable[Ack], seen: Iterable[Seen]) -> CheckResult:
    """Every acknowledged record was returned to a member of the group at least once."""
    got = {s.rid for s in seen}
    acked = list(acks)
    problems = [
        f"{a.rid} (p{a.partition}@{a.offset}) never consumed" for a in acked if a.rid not in got
    ]
    return _result(
        "group consumed every acknowledged record",
        f"{len(acked)} acknowledged records each returned to a group member at least once",
        problems,
    )


def check_group_resume(
    ends: Mapping[int, int], committed: Mapping[int, int], resumed_at: Mapping[int, int]
) -> CheckResult:
    """After a clean stop every partition's commit is its log end, and a new member starts
    exactly at the commit."""
    problems: list[str] = []
    for p, end in sorted(ends.items()):
        c = committed.get(p)
        if c != end:
            problems.append(f"p{p}: committed {c}, log end {end}")
        if resumed_at.get(p) != c:
            problems.append(f"p{p}: the new member started at {resumed_at.get(p)}, commit {c}")
    return _result(
        "group resumes at the last commit",
        f"{len(ends)} partitions: committed at the log end after a clean stop; a new member "
        "starts exactly there",
        problems,
    )


def group_summary(readers: GroupReaders, say: Callable[[str], None]) -> None:
    members = {s.reader for s in readers.seen}
    say(f"group: {len(readers.seen)} records returned to {len(members)} member(s), "
        f"{len(readers.errors)} error(s)")  # fmt: skip
    for line in readers.errors[:5]:
        say(f"    {line}")
