"""Campaigning for the controller role, forever: session, campaign, lead, resign, again.

The task never touches controller state. When it wins, it puts ``Elected`` on the event loop (the
handler bumps the epoch and runs failover); when the lease is lost, or the controller reports it
was deposed (a fenced write failed, a newer epoch appeared), or the process stops, it puts
``Resign``, waits for the loop to undo the term, deletes its election key so the next candidate
takes over at once, and starts a new session to campaign again (a hot standby keeps watching the
whole time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from leasehold import telemetry
from leasehold.etcd.client import EtcdClient, EtcdError
from leasehold.etcd.election import Election, ElectionLost
from leasehold.etcd.keys import Keyspace
from leasehold.etcd.session import Session
from services.controller.controller import Controller
from services.controller.event_loop import EventLoop
from services.controller.events import Elected, Resign

log = logging.getLogger(__name__)


class ElectionRunner:
    def __init__(
        self,
        client: EtcdClient,
        keyspace: Keyspace,
        ttl: int,
        registration: bytes,
        controller: Controller,
        events: EventLoop,
    ) -> None:
        self.client = client
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
            session = Session(self.client, self.ttl)
            try:
                await session.start()
            except EtcdError as e:
                log.warning("cannot start an etcd session: %s", e)
                await self._pause(1.0)
                continue
            self.session = session
            election = Election(session, self.keyspace.controller_election_prefix)
            won = await self._campaign(election)
            if won:
                await self._lead(session, election)
                with contextlib.suppress(EtcdError):
                    await election.resign()
            await session.close()
            await self._pause(0.2)

    async def _campaign(self, election: Election) -> bool:
        """Campaign until won, lost or stopped; one ``controller.campaign`` span for it all."""
        with telemetry.span("controller.campaign", controller_id=self.controller.id) as span:
            outcome = await self._campaign_once(election)
            span.set_attributes(telemetry.attrs(outcome=outcome, terms=self.terms))
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
        self.controller.election_generation += 1
        self._deposed.clear()
        self.events.put(
            Elected(election.key, election.revision, self.controller.election_generation)
        )
        waits = {
            asyncio.create_task(session.done.wait()): "the controller lease was lost",
            asyncio.create_task(self._deposed.wait()): "deposed by a newer controller",
            asyncio.create_task(self._stopping.wait()): "the controller is stopping",
        }
        done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for t in pending:
            t.cancel()
        reason = waits[next(iter(done))]
        self.controller.election_generation += 1  # an Elected still queued is now stale
        finished = asyncio.get_running_loop().create_future()
        self.events.put(Resign(reason, finished, stopping=self._stopping.is_set()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(finished, timeout=10)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
