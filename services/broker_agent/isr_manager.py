"""ISR changes through the controller (KIP-497's AlterPartition), and the periodic shrink check.

A leader never writes partition state itself: it proposes a new ISR, keeps treating the union of
old and proposed members as the ISR for the high watermark, and applies the change only when the
controller answers with the committed ISR and partition epoch. Proposals are queued here and
sent in batches by one task, so at most one AlterPartition per partition is in flight; transport
failures and NOT_CONTROLLER are retried with backoff against a re-discovered controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from leasehold import telemetry
from leasehold.controller.v1 import controller_pb2
from services.broker_agent.controller_client import (
    ControllerClient,
    ControllerUnavailableError,
)
from services.broker_agent.model import Code, TopicPartition
from services.broker_agent.partition import IsrProposal, Partition

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 15.0
IsrChangeHook = Callable[[tuple[int, ...], tuple[int, ...]], None]


def build_request(
    broker_id: int, broker_epoch: int, proposals: Iterable[IsrProposal]
) -> controller_pb2.AlterPartitionRequest:
    by_topic: dict[str, controller_pb2.AlterPartitionTopic] = {}
    for p in proposals:
        topic = by_topic.get(p.tp.topic)
        if topic is None:
            topic = by_topic[p.tp.topic] = controller_pb2.AlterPartitionTopic(
                topic=p.tp.topic, topic_id=p.topic_id
            )
        topic.partitions.append(
            controller_pb2.AlterPartitionPartition(
                partition=p.tp.partition,
                leader_epoch=p.leader_epoch,
                new_isr_with_epochs=[
                    controller_pb2.BrokerState(broker_id=b, broker_epoch=e)
                    for b, e in p.broker_epochs
                ],
                partition_epoch=p.partition_epoch,
                leader_recovery_state=p.leader_recovery_state,
            )
        )
    return controller_pb2.AlterPartitionRequest(
        broker_id=broker_id, broker_epoch=broker_epoch, topics=list(by_topic.values())
    )


class AlterPartitionManager:
    def __init__(
        self,
        controller: ControllerClient,
        broker_id: int,
        broker_epoch: Callable[[], int],
        lookup: Callable[[TopicPartition], Partition | None],
        backoff_ms: int = 500,
    ) -> None:
        self._controller = controller
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._lookup = lookup
        self._backoff = backoff_ms / 1000.0
        self._queue: dict[TopicPartition, IsrProposal] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        # Called with (old ISR, new ISR) for every change the controller committed (metrics).
        self.on_isr_change: IsrChangeHook = lambda _old, _new: None

    def submit(self, proposal: IsrProposal | None) -> None:
        if proposal is None:
            return
        log.info(
            "%s: proposing ISR %s (leader epoch %d, partition epoch %d)",
            proposal.tp,
            list(proposal.new_isr),
            proposal.leader_epoch,
            proposal.partition_epoch,
        )
        self._queue[proposal.tp] = proposal
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="alter-partition")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _still_pending(self, proposal: IsrProposal) -> bool:
        partition = self._lookup(proposal.tp)
        return partition is not None and partition.pending is proposal

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch = [p for p in self._queue.values() if self._still_pending(p)]
            self._queue.clear()
            if not batch:
                continue
            try:
                await self._send(batch)
            except asyncio.CancelledError:
                raise
            except Exception:  # keep the sender alive; the proposals are retried
                log.exception("AlterPartition failed")
                self._requeue(batch)
                await asyncio.sleep(self._backoff)

    def _requeue(self, batch: list[IsrProposal]) -> None:
        for p in batch:
            if self._still_pending(p) and p.tp not in self._queue:
                self._queue[p.tp] = p
        if self._queue:
            self._wake.set()

    async def _send(self, batch: list[IsrProposal]) -> None:
        request = build_request(self._broker_id, self._broker_epoch(), batch)
        with telemetry.span(
            "broker.alter_partition",
            broker_id=self._broker_id,
            broker_epoch=request.broker_epoch,
            topic=",".join(sorted({p.tp.topic for p in batch})),
            partition_count=len(batch),
        ) as span:
            outcome = await self._send_request(batch, request)
            span.set_attributes(telemetry.attrs(outcome=outcome))

    async def _send_request(
        self, batch: list[IsrProposal], request: controller_pb2.AlterPartitionRequest
    ) -> str:
        """Send, apply the answers; returns how it went (for the span)."""
        try:
            response = await self._controller.alter_partition(request, REQUEST_TIMEOUT_S)
        except ControllerUnavailableError as exc:
            log.warning("AlterPartition not sent: %s", exc)
            self._requeue(batch)
            await asyncio.sleep(self._backoff)
            return "controller_unavailable"
        by_tp = {p.tp: p for p in batch}
        if response.error_code != Code.NONE:
            code = _code(response.error_code)
            log.warning("AlterPartition rejected as a whole: %s", code.name)
            for p in batch:
                self._complete(p, code)
            if code != Code.STALE_BROKER_EPOCH:
                await asyncio.sleep(self._backoff)
            return code.name
        answered: set[TopicPartition] = set()
        for topic in response.topics:
            for part in topic.partitions:
                tp = TopicPartition(topic.topic, part.partition)
                proposal = by_tp.get(tp)
                if proposal is None:
                    continue
                answered.add(tp)
                self._complete(
                    proposal,
                    _code(part.error_code),
                    isr=tuple(part.isr),
                    leader_epoch=part.leader_epoch,
                    partition_epoch=part.partition_epoch,
                )
        missing = [p for p in batch if p.tp not in answered]
        if missing:
            self._requeue(missing)
        return "answered"

    def _complete(
        self,
        proposal: IsrProposal,
        code: Code,
        *,
        isr: tuple[int, ...] = (),
        leader_epoch: int = -1,
        partition_epoch: int = -1,
    ) -> None:
        partition = self._lookup(proposal.tp)
        if partition is None:
            return
        before = partition.isr
        changed = partition.complete_isr_change(
            proposal,
            error=code,
            isr=isr,
            leader_epoch=leader_epoch,
            partition_epoch=partition_epoch,
        )
        if changed:
            self.on_isr_change(tuple(before), tuple(partition.isr))
            log.info(
                "%s: ISR is now %s (partition epoch %d)",
                proposal.tp,
                list(partition.isr),
                partition.partition_epoch,
            )
        elif code != Code.NONE:
            log.info("%s: AlterPartition answered %s", proposal.tp, code.name)

    def check_shrinks(self, partitions: Iterable[Partition]) -> int:
        """Propose removing lagging followers from every led partition; returns how many."""
        count = 0
        for partition in partitions:
            proposal = partition.propose_shrink()
            if proposal is not None:
                self.submit(proposal)
                count += 1
        return count


def _code(value: int) -> Code:
    try:
        return Code(value)
    except ValueError:
        return Code.UNKNOWN_SERVER_ERROR
