"""One hosted partition replica: its role, its ISR view and its log (Kafka's ``Partition``).

As leader it appends producers' records under its leader epoch, tracks each follower's log end
offset from their fetches, advances the high watermark and proposes ISR changes (which take
effect only when the controller accepts them through AlterPartition, KIP-497). As follower it
exposes the few log operations the fetcher needs (truncate, append the leader's bytes verbatim,
adopt the leader's high watermark). Everything runs on the agent's event loop; no method awaits,
so each one is atomic with respect to requests and fetchers.

A role change may leave files owed to the disk (``defer_sync``: the replica manager makes a
whole LeaderAndIsr's files durable in one batch). Until they are, ``awaiting_sync`` is set and
the replica refuses appends, so no record is ever written under a leader epoch whose start is
not yet durable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.trace import SpanContext

from leasehold import rpc_tracing
from services.broker_agent.control import leader_epoch_check
from services.broker_agent.log import Log, LogAppendInfo, LogConfig, LogManager, Record
from services.broker_agent.model import NO_LEADER, Code, LeaderAndIsrPartition, TopicPartition
from services.broker_agent.replica_state import (
    FollowerState,
    SessionFetch,
    after_fetch,
    caught_up_in_session,
    expansion_candidates,
    new_high_watermark,
    out_of_sync_replicas,
    reset_for_leadership,
)
from services.broker_agent.signals import ChangeSignal

log = logging.getLogger(__name__)

NO_PRODUCER = (-1, -1, -1)  # records not from an idempotent producer: (id, epoch, sequence)

# KIP-704 leader recovery states (leasehold.common.v1.LeaderRecoveryState).
RECOVERED = 1
RECOVERING = 2


class PartitionError(Exception):
    """A request cannot be served by this replica; ``code`` is the answer."""

    def __init__(self, code: Code, message: str = "") -> None:
        super().__init__(message or code.name)
        self.code = code


@dataclass(frozen=True)
class IsrProposal:
    """An AlterPartition this leader wants the controller to commit."""

    tp: TopicPartition
    topic_id: str
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    broker_epochs: tuple[tuple[int, int], ...]  # (broker id, broker epoch) per ISR member
    leader_recovery_state: int = RECOVERED


class Partition:
    def __init__(
        self,
        tp: TopicPartition,
        local_broker_id: int,
        log_manager: LogManager,
        clock: Callable[[], int],
        replica_lag_time_max_ms: int,
    ) -> None:
        self.tp = tp
        self.local_broker_id = local_broker_id
        self._log_manager = log_manager
        self._clock = clock
        self._max_lag_ms = replica_lag_time_max_ms
        self.topic_id = ""
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.pending: IsrProposal | None = None
        self.recovering = False  # elected uncleanly and not yet marked recovered (KIP-704)
        self.leader_epoch_start_offset = -1
        self.followers: dict[int, FollowerState] = {}
        # Each follower's fetch session holding this partition (fetch_session's idle rule).
        self.session_fetches: dict[int, SessionFetch] = {}
        self.log: Log | None = None
        # Bumped whenever this replica takes or loses leadership (not on a new epoch while it
        # stays leader): an acks=all append waits for its records only while it is unchanged.
        self.leadership = 0
        self.awaiting_sync = False  # a role change's files are not durable yet: no appends
        self.signal = ChangeSignal()
        self.hw_moved_by: SpanContext | None = None  # the last follower fetch that moved it
        # Whether a broker may join the ISR (alive and not shutting down, KIP-841).
        self.isr_eligible: Callable[[int], bool] = lambda _broker_id: True
        # This broker's current epoch, sent with its own ISR entry (KIP-903).
        self.local_broker_epoch: Callable[[], int] = lambda: -1

    # ------------------------------------------------------------------ roles

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The committed ISR plus any replica an in-flight AlterPartition adds."""
        pending = self.pending.new_isr if self.pending is not None else ()
        return frozenset(self.isr) | frozenset(pending)

    def local_log(self) -> Log:
        if self.log is None:
            raise PartitionError(Code.NOT_LEADER_OR_FOLLOWER, f"{self.tp} has no local log")
        return self.log

    def _ensure_log(
        self, state: LeaderAndIsrPartition, config: LogConfig | None, defer_sync: bool
    ) -> Log:
        self.log = self._log_manager.get_or_create(
            state.topic, state.partition, state.topic_id, config, defer_sync=defer_sync
        )
        self.awaiting_sync = defer_sync
        return self.log

    def _apply_state(self, state: LeaderAndIsrPartition) -> None:
        self.topic_id = state.topic_id or self.topic_id
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.controller_epoch = state.controller_epoch
        self.replicas = tuple(state.replicas)
        self.isr = tuple(state.isr)
        self.recovering = state.leader_recovery_state == RECOVERING
        self.pending = None

    def make_leader(
        self,
        state: LeaderAndIsrPartition,
        config: LogConfig | None = None,
        *,
        defer_sync: bool = False,
    ) -> None:
        """Become leader for ``state.leader_epoch`` (Kafka's Partition.makeLeader).

        The new epoch starts at the log end offset and is recorded in the epoch cache before
        any append, so followers truncating against this leader find where it begins. Follower
        states are reset: ISR members count as caught up now, offsets are unknown until each
        fetches. With ``defer_sync`` the files are written by the caller's batch, and appends
        wait for ``sync_done``.
        """
        log_ = self._ensure_log(state, config, defer_sync)
        was_leader = self.is_leader
        if not was_leader:
            self.leadership += 1
        self._apply_state(state)
        now = self._clock()
        leo = log_.log_end_offset
        log_.assign_epoch_start_offset(state.leader_epoch, leo, defer_sync=defer_sync)
        self.leader_epoch_start_offset = leo
        before, isr, new_leader = self.followers, self.isr, not was_leader
        followers: dict[int, FollowerState] = {}
        for r in self.replicas:
            if r != self.local_broker_id:
                followers[r] = reset_for_leadership(
                    before.get(r), r, in_isr=r in isr, now_ms=now, new_leader=new_leader
                )
        self.followers = followers
        if self.session_fetches:  # a replica reassigned away leaves its session behind
            kept = self.session_fetches
            self.session_fetches = {r: f for r, f in kept.items() if r in followers}
        self.maybe_increment_high_watermark()
        self.signal.notify()

    def make_follower(
        self,
        state: LeaderAndIsrPartition,
        config: LogConfig | None = None,
        *,
        defer_sync: bool = False,
    ) -> None:
        """Follow ``state.leader`` under the new epoch; the fetcher truncates, then fetches."""
        if self.is_leader:
            self.leadership += 1
        self._ensure_log(state, config, defer_sync)
        self._apply_state(state)
        self.followers = {}
        self.session_fetches = {}
        self.leader_epoch_start_offset = -1
        self.signal.notify()

    def sync_done(self) -> None:
        """The role change's files are durable (or the log went offline): appends may go on."""
        self.awaiting_sync = False
        self.signal.notify()

    def stop(self) -> None:
        """StopReplica without delete: keep the log, forget the role, wake waiting requests."""
        if self.is_leader:
            self.leadership += 1
        self.leader_id = NO_LEADER
        self.followers = {}
        self.session_fetches = {}
        self.pending = None
        self.signal.notify()

    # ---------------------------------------------------------- leader: writes

    def check_leader(self, current_leader_epoch: int) -> Log:
        """The log, if this replica leads under the caller's epoch view (KIP-359/320)."""
        if not self.is_leader:
            raise PartitionError(Code.NOT_LEADER_OR_FOLLOWER, f"{self.tp}: not the leader")
        code = leader_epoch_check(current_leader_epoch, self.leader_epoch)
        if code != Code.NONE:
            raise PartitionError(code, f"{self.tp}: leader epoch is {self.leader_epoch}")
        return self.local_log()

    def append_as_leader(
        self,
        records: Sequence[Record] = (),
        *,
        batch: bytes = b"",
        producer: tuple[int, int, int] = NO_PRODUCER,
        current_leader_epoch: int,
        required_acks: int,
        min_insync_replicas: int,
    ) -> LogAppendInfo:
        """Append a producer's ``batch`` as sent, or one built from ``records`` (with the
        idempotent ``producer``'s id, epoch and base sequence, if any)."""
        log_ = self.check_leader(current_leader_epoch)
        if self.awaiting_sync:
            # Retriable: the client refreshes its metadata and retries in a few ms.
            raise PartitionError(
                Code.NOT_LEADER_OR_FOLLOWER, f"{self.tp}: leadership change in progress"
            )
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            raise PartitionError(
                Code.NOT_ENOUGH_REPLICAS,
                f"{self.tp}: ISR {list(self.isr)} is smaller than min.insync.replicas "
                f"{min_insync_replicas}",
            )
        if self.session_fetches:
            # Followers idle at the end so far were caught up until their sessions' last
            # requests; record it before the end moves past them.
            self.followers.update(
                caught_up_in_session(self.followers, self.session_fetches, log_.log_end_offset)
            )
        if batch:
            info = log_.append_batch_as_leader(batch, self.leader_epoch)
        else:
            info = log_.append_as_leader(records, self.leader_epoch, producer=producer)
        if not info.duplicate:
            self.maybe_increment_high_watermark()
            self.signal.notify()
        return info

    def acks_all_outcome(
        self, required_offset: int, leadership: int, min_insync_replicas: int
    ) -> Code | None:
        """How an acks=all append made in ``leadership`` stands: None while still waiting.

        Acknowledged once the high watermark reaches ``required_offset``; if the committed
        ISR has meanwhile shrunk below min.insync.replicas, NOT_ENOUGH_REPLICAS_AFTER_APPEND.
        A new leader epoch without a change of leader (an ISR change the controller made with
        a new epoch) keeps the records: only losing leadership (and maybe the records, to a
        truncation) answers NOT_LEADER_OR_FOLLOWER, and the producer retries elsewhere.
        """
        if not self.is_leader or self.leadership != leadership or self.log is None:
            return Code.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark < required_offset:
            return None
        if len(self.isr) < min_insync_replicas:
            return Code.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return Code.NONE

    # ------------------------------------------------ leader: follower tracking

    def record_follower_fetch(
        self, replica_id: int, fetch_offset: int, log_start_offset: int, broker_epoch: int
    ) -> None:
        """Note a follower's position from its fetch; may move the high watermark."""
        if replica_id not in self.followers:
            raise PartitionError(
                Code.NOT_LEADER_OR_FOLLOWER,
                f"{self.tp}: broker {replica_id} is not a replica ({list(self.replicas)})",
            )
        log_ = self.local_log()
        self.followers[replica_id] = after_fetch(
            self.followers[replica_id],
            fetch_offset=fetch_offset,
            log_start_offset=log_start_offset,
            fetch_ms=self._clock(),
            leader_leo=log_.log_end_offset,
            broker_epoch=broker_epoch,
        )
        if self.maybe_increment_high_watermark():
            # The follower fetch that moved the high watermark: acks=all produces it satisfies
            # link to its span (and it is exported even if its answer is empty).
            self.hw_moved_by = rpc_tracing.keep_current_call()
            self.signal.notify()

    def note_session_fetch(self, replica_id: int, fetch: SessionFetch) -> None:
        """The follower fetches this partition in a session (it may omit it while idle)."""
        self.session_fetches[replica_id] = fetch

    def note_high_watermark_sent(self, replica_id: int, high_watermark: int) -> None:
        state = self.followers.get(replica_id)
        if state is not None and state.last_sent_hw != high_watermark:
            self.followers[replica_id] = state._replace(last_sent_hw=high_watermark)

    def maybe_increment_high_watermark(self) -> bool:
        log_ = self.log
        if log_ is None or not self.is_leader:
            return False
        leader_leo, current_hw = log_.log_end_offset, log_.high_watermark
        if leader_leo <= current_hw:
            return False  # it never passes the leader's end (a new leader's usual case)
        new_hw = new_high_watermark(
            leader_leo=leader_leo,
            current_hw=current_hw,
            followers=self.followers,
            maximal_isr=self.maximal_isr,
            now_ms=self._clock(),
            max_lag_ms=self._max_lag_ms,
            isr_eligible=self.isr_eligible,
        )
        if new_hw is None:
            return False
        log_.update_high_watermark(new_hw)
        return True

    def _proposal(self, new_isr: Sequence[int]) -> IsrProposal:
        members = tuple(sorted(set(new_isr)))

        def epoch_of(broker_id: int) -> int:
            if broker_id == self.local_broker_id:
                return self.local_broker_epoch()
            state = self.followers.get(broker_id)
            return state.broker_epoch if state is not None else -1

        epochs = tuple((b, epoch_of(b)) for b in members)
        return IsrProposal(
            self.tp, self.topic_id, self.leader_epoch, self.partition_epoch, members, epochs
        )

    def propose_expansion(self) -> IsrProposal | None:
        """An AlterPartition adding caught-up followers, unless one is already in flight."""
        if not self.is_leader or self.pending is not None or self.log is None:
            return None
        if self.recovering:
            return None
        joining = expansion_candidates(
            followers=self.followers,
            replicas=self.replicas,
            isr=self.isr,
            high_watermark=self.log.high_watermark,
            leader_epoch_start_offset=self.leader_epoch_start_offset,
            isr_eligible=self.isr_eligible,
        )
        if not joining:
            return None
        self.pending = self._proposal([*self.isr, *joining])
        return self.pending

    def propose_recovered(self) -> IsrProposal | None:
        """KIP-704: a leader elected uncleanly marks the partition recovered (same ISR).

        Our log holds no transaction state to rebuild, so the leader may do so at once; until
        the controller commits it, the ISR cannot grow.
        """
        if not self.recovering or not self.is_leader or self.pending is not None:
            return None
        self.pending = self._proposal(self.isr)
        return self.pending

    def propose_shrink(self) -> IsrProposal | None:
        """An AlterPartition removing followers that lag past replica.lag.time.max.ms."""
        if not self.is_leader or self.pending is not None or self.log is None:
            return None
        lagging = out_of_sync_replicas(
            leader_id=self.local_broker_id,
            isr=self.isr,
            followers=self.followers,
            leader_leo=self.log.log_end_offset,
            now_ms=self._clock(),
            max_lag_ms=self._max_lag_ms,
        )
        if not lagging:
            return None
        self.pending = self._proposal([r for r in self.isr if r not in lagging])
        return self.pending

    def complete_isr_change(
        self,
        proposal: IsrProposal,
        *,
        error: Code,
        isr: Sequence[int] = (),
        leader_epoch: int = -1,
        partition_epoch: int = -1,
    ) -> bool:
        """Apply the controller's answer to ``proposal``; True if the ISR changed.

        Answers to a proposal that is no longer pending (leadership changed meanwhile) are
        ignored. Rejections that mean "try again" (INELIGIBLE_REPLICA and other transient
        errors) clear the pending state so a later fetch or check proposes afresh; rejections
        that mean our state is stale (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, unknown
        partition) keep it pending until the controller's LeaderAndIsr brings the new state.
        """
        if self.pending is not proposal:
            return False
        if error == Code.NONE:
            if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
                return False
            self.isr = tuple(isr)
            self.partition_epoch = partition_epoch
            self.recovering = False
            self.pending = None
            self.maybe_increment_high_watermark()
            self.signal.notify()
            return True
        if error in (
            Code.FENCED_LEADER_EPOCH,
            Code.INVALID_UPDATE_VERSION,
            Code.UNKNOWN_TOPIC_OR_PARTITION,
        ):
            log.info("%s: AlterPartition rejected (%s); awaiting LeaderAndIsr", self.tp, error.name)
            return False
        self.pending = None
        return False

    # ---------------------------------------------------------- follower side

    def follower_log(self, leader_epoch: int) -> Log:
        """The log a fetcher may change, if this replica still follows under that epoch."""
        if self.is_leader or self.leader_epoch != leader_epoch or self.log is None:
            raise PartitionError(Code.FENCED_LEADER_EPOCH, f"{self.tp}: no longer following")
        return self.log

    def append_fetched(
        self, leader_epoch: int, fetch_offset: int, data: bytes, leader_hw: int, leader_start: int
    ) -> LogAppendInfo:
        """Append the leader's batches verbatim and adopt its high watermark and log start."""
        log_ = self.follower_log(leader_epoch)
        if fetch_offset != log_.log_end_offset:
            raise PartitionError(
                Code.OFFSET_OUT_OF_RANGE,
                f"{self.tp}: fetched at {fetch_offset} but the log ends at {log_.log_end_offset}",
            )
        info = log_.append_as_follower(data)
        log_.update_high_watermark(min(leader_hw, log_.log_end_offset))
        if leader_start > log_.log_start_offset and leader_start <= log_.high_watermark:
            log_.maybe_increment_log_start_offset(leader_start)
        if info.valid_bytes:
            self.signal.notify()
        return info
