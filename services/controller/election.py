"""Campaigning for the controller role, forever: session, campaign, lead, resign, again.

The task never touches controller state. When it wins, it puts ``Elected`` on the event loop (the
handler bumps the epoch and runs failover). While etcd does not confirm the lease it puts
``Suspend`` (the office stops acting), and ``Resume`` once etcd confirms the same lease and our
election key still leads (``role``). When the lease is lost, or the controller reports it
was deposed (a fenced write failed, a newer epoch appeared), or the process stops, it puts
``Resign``, waits for the loop to undo the term, deletes its election key so the next candidate
takes over at once, and starts a new session to campaign again (a hot standby keeps watching the
whole time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from google.protobuf.message import DecodeError

from leasehold import telemetry
from leasehold.etcd.client import EtcdClient, EtcdError
from leasehold.etcd.election import Election, ElectionLost
from leasehold.etcd.keys import Keyspace
from leasehold.etcd.lease import LeaseState
from leasehold.etcd.session import LeaseRenewer, Session
from leasehold.metadata.v1 import metadata_pb2
from services.controller.controller import Controller
from services.controller.event_loop import EventLoop
from services.controller.events import Elected, EtcdReachability, Resign, Resume, Suspend

log = logging.getLogger(__name__)

UNCONFIRMED = "the controller lease is not confirmed"
CONFIRMED = "the controller lease is confirmed again"


async def _first(events: dict[asyncio.Event, str]) -> str:
    """The label of the first of ``events`` to be set."""
    waits = {asyncio.create_task(e.wait()): label for e, label in events.items()}
    try:
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in waits:
            t.cancel()
    return waits[next(iter(done))]


class ElectionRunner:
    def __init__(
        self,
        client: EtcdClient,
        keyspace: Keyspace,
        ttl: int,
        registration: bytes,
        controller: Controller,
        events: EventLoop,
        *,
        renewer: LeaseRenewer | None = None,
    ) -> None:
        self.client = client
        self.renewer = renewer  # None: each session renews its lease from a thread of its own
        self.keyspace = keyspace
        self.ttl = ttl
        self.registration = registration
        self.controller = controller
        self.events = events
        self._deposed = asyncio.Event()
        self._stopping = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.session: Session | None = None
        self.terms = 0

    def start(self) -> None:
        self.controller.on_deposed = self._deposed.set
        self._task = asyncio.create_task(self._run(), name="controller-election")

    async def stop(self) -> None:
        """Resign if leading (the standby takes over at once), stop campaigning."""
        self._stopping.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout=10)
            except TimeoutError:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._task

    async def _run(self) -> None:
        while not self._stopping.is_set():
            session = Session(self.client, self.ttl, renewer=self.renewer)
            try:
                await session.start()
            except EtcdError as e:
                log.warning("cannot start an etcd session: %s", e)
                await self._pause(1.0)
                continue
            self.session = session
            self._watch_reachability(session)
            election = Election(session, self.keyspace.controller_election_prefix)
            won = await self._campaign(election)
            if won:
                await self._lead(session, election)
                with contextlib.suppress(EtcdError):
                    await election.resign()
            await session.close()
            await self._pause(0.2)

    async def _campaign(self, election: Election) -> bool:
        """Campaign until won, lost or stopped. Waiting is not a span (a standby waits for
        hours); a won campaign starts the failover's trace (``_lead``)."""
        outcome = await self._campaign_once(election)
        if outcome != "won":
            log.info("campaign ended: %s", outcome)
        return outcome == "won"

    async def _campaign_once(self, election: Election) -> str:
        campaign = asyncio.create_task(election.campaign(self.registration))
        stop = asyncio.create_task(self._stopping.wait())
        try:
            await asyncio.wait({campaign, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not campaign.done():
            campaign.cancel()  # withdraws our candidate key
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await campaign
            return "stopped"
        try:
            campaign.result()
        except (ElectionLost, EtcdError) as e:
            log.warning("campaign ended without leadership: %s", e)
            return "lost"
        return "won"

    async def _lead(self, session: Session, election: Election) -> None:
        self.terms += 1
        generation = self.controller.role.new_campaign()
        self._deposed.clear()
        # One trace for the whole failover: this short span is its root, and the Elected
        # event's handling (epoch bump, failover, UpdateMetadata to each broker) its children.
        with telemetry.span(
            "controller.elected",
            controller_id=self.controller.id,
            outcome="won",
            terms=self.terms,
        ):
            won = Elected(
                election.key,
                election.revision,
                generation,
                won_ms=int(time.time() * 1000),
                predecessor_ttl_ms=self._predecessor_ttl_ms(election),
                trace_context=telemetry.current_context(),
            )
        self.events.put(won)
        reason = await self._hold_office(session, election, generation)
        self.controller.role.new_campaign()  # an Elected still queued is now stale
        finished = asyncio.get_running_loop().create_future()
        self.events.put(Resign(reason, finished, stopping=self._stopping.is_set()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(finished, timeout=10)

    async def _hold_office(self, session: Session, election: Election, generation: int) -> str:
        """Until the term ends; returns why. While etcd does not confirm the lease the office
        is suspended; it resumes when etcd confirms the same lease and our key still leads."""
        ends = {
            session.done: "the controller lease was lost",
            self._deposed: "deposed by a newer controller",
            self._stopping: "the controller is stopping",
        }
        while True:
            fired = await _first({**ends, session.unconfirmed: UNCONFIRMED})
            if fired != UNCONFIRMED:
                return fired
            self.events.put(Suspend(generation))
            fired = await _first({**ends, session.confirmed: CONFIRMED})
            if fired != CONFIRMED:
                return fired
            try:
                leads = await election.still_leader()
            except EtcdError as e:
                log.warning("cannot check the election after etcd came back: %s", e)
                return "the election could not be checked after an etcd outage"
            if not leads:
                return "another candidate holds the election after an etcd outage"
            self.events.put(Resume(generation))

    def _watch_reachability(self, session: Session) -> None:
        """Tell the controller when our session stops reaching etcd and when etcd answers
        again (a lost lease is an answer too): the brokers' grace follows it (``role``)."""
        unreachable = False

        def changed(state: LeaseState) -> None:
            nonlocal unreachable
            if state is LeaseState.UNCONFIRMED:
                unreachable = True
                self.events.put(EtcdReachability(False))
            elif unreachable:
                unreachable = False
                self.events.put(EtcdReachability(True))

        session.on_change = changed

    def _predecessor_ttl_ms(self, election: Election) -> int:
        """The lease TTL of the controller whose key had to vanish before we won (0 if none):
        the state-change log dates that controller's last keep-alive with it."""
        pred = election.predecessor
        if pred is None:
            return 0
        try:
            stated = metadata_pb2.ControllerRegistration.FromString(pred.value).session_ttl_ms
        except DecodeError:
            stated = 0
        return stated or self.ttl * 1000

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
