"""The partition state machine's decisions (seed 000 section 4, seed 004), KRaft style.

``decide_partition_changes`` reads the context, changes nothing, and returns a
``StateChangePlan``:

* NonExistent -> New: the partition has an assignment; only its state changes.
* New -> Online: the first online assigned replica leads, the online assigned replicas form the
  ISR (leader epoch 0); the state key is *created*; LeaderAndIsr (is_new) goes to the ISR.
* Offline/Online -> Online: the given ``LeaderSelector`` elects; the state key is updated with
  compare-and-set on its partition epoch; LeaderAndIsr goes to the selector's recipients.
* -> Offline, Offline -> NonExistent: only the state changes.

Every illegal transition or failed election becomes a ``StateChangeFailure`` for that partition;
the other partitions of the batch are unaffected.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from services.controller.core.context import ControllerContext
from services.controller.core.model import INITIAL_LEADER_EPOCH, LeaderAndIsr, TopicPartition
from services.controller.core.plan import FailureCode, LeaderAndIsrIntent, StateChangePlan
from services.controller.core.plan_builder import PlanBuilder
from services.controller.core.selectors import (
    Election,
    ElectionFailure,
    elect_controlled_shutdown,
    elect_noop,
    elect_offline,
    elect_preferred,
    elect_reassigned,
)
from services.controller.core.states import PartitionState, is_valid_transition


class LeaderSelector(Enum):
    """Which selector elects on Offline/Online -> Online; the value is the log's ``reason``."""

    OFFLINE = "offline"
    # KIP-460 ElectLeaders(UNCLEAN): unclean election allowed whatever the topic config says.
    OFFLINE_UNCLEAN = "offline_unclean"
    REASSIGNED = "reassigned"
    PREFERRED = "preferred"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    NO_OP = "noop"


def select_leader(
    ctx: ControllerContext, tp: TopicPartition, current: LeaderAndIsr, selector: LeaderSelector
) -> Election:
    """Gather what ``selector`` needs from the context and run it."""
    assignment = ctx.assignment(tp)
    replicas = assignment.replicas if assignment is not None else ()
    # The offline selector first: a broker failure runs it for every partition the broker led.
    if selector is LeaderSelector.OFFLINE or selector is LeaderSelector.OFFLINE_UNCLEAN:
        allowed = (
            selector is LeaderSelector.OFFLINE_UNCLEAN
            or ctx.is_unclean_leader_election_enabled(tp.topic)
        )
        return elect_offline(current, replicas, ctx.replica_online_check(tp), allowed)
    if selector is LeaderSelector.CONTROLLED_SHUTDOWN:
        return elect_controlled_shutdown(
            current,
            replicas,
            ctx.replica_online_check(tp, include_shutting_down=True),
            ctx.shutting_down_broker_ids,
        )
    online = ctx.replica_online_check(tp)
    if selector is LeaderSelector.REASSIGNED:
        target = assignment.target_replicas if assignment is not None else ()
        return elect_reassigned(current, target, online)
    if selector is LeaderSelector.PREFERRED:
        return elect_preferred(current, replicas, online)
    return elect_noop(current, replicas)


def decide_partition_changes(
    ctx: ControllerContext,
    partitions: Iterable[TopicPartition],
    target: PartitionState,
    *,
    now_ms: int,
    selector: LeaderSelector | None = None,
    reason: str | None = None,
) -> StateChangePlan:
    """Decide moving ``partitions`` to ``target``; see the module docstring.

    ``selector`` is required when ``target`` is ONLINE (it elects for Offline/Online partitions)
    and a missing one is a programming error. ``reason`` overrides the state-change log reason of
    transitions that do not elect (e.g. "deletion" for a topic deletion's -> Offline).
    """
    if target is PartitionState.ONLINE and selector is None:
        raise ValueError("a leader selector is required when the target state is ONLINE")
    b = PlanBuilder(ctx, now_ms)
    # Looked up once per batch, not per partition (a broker failure decides 10,000 twice).
    allowed_from = target.valid_previous_states
    state_of = ctx.partition_state
    log_reason = None if selector is None else _log_reason(selector)
    for tp in sorted(dict.fromkeys(partitions)):  # input order kept: often sorted already
        current = state_of(tp)
        if current not in allowed_from:
            is_valid_transition(current, target)  # raises for a state of the other machine
            allowed = sorted(s.value for s in allowed_from)
            b.fail(
                tp,
                -1,
                current,
                target,
                FailureCode.INVALID_TRANSITION,
                f"partition {tp} is {current.value}, must be one of {allowed} "
                f"to move to {target.value}",
            )
        elif target is PartitionState.NEW:
            if ctx.assignment(tp) is None:
                b.fail(tp, -1, current, target, FailureCode.NO_ASSIGNMENT, f"{tp} has no replicas")
            else:
                b.partition_transition(tp, current, target, reason or "new")
        elif target is PartitionState.ONLINE and current is PartitionState.NEW:
            _initialize_leader_and_isr(b, tp)
        elif target is PartitionState.ONLINE:
            assert selector is not None and log_reason is not None
            _elect_leader(b, tp, current, selector, log_reason)
        else:
            default = "deletion" if target is PartitionState.NON_EXISTENT else "offline"
            b.partition_transition(tp, current, target, reason or default)
    return b.build()


def _log_reason(selector: LeaderSelector) -> str:
    """The record's reason for a clean election (an unclean one says "unclean")."""
    if selector is LeaderSelector.OFFLINE_UNCLEAN:
        return LeaderSelector.OFFLINE.value
    return selector.value


def partitions_to_trigger_online(ctx: ControllerContext) -> tuple[TopicPartition, ...]:
    """New or Offline partitions of topics not queued for deletion, as Kafka's
    ``triggerOnlinePartitionStateChange`` picks them."""
    return tuple(
        tp
        for tp in ctx.partitions_in_state(PartitionState.NEW, PartitionState.OFFLINE)
        if not ctx.is_topic_queued_for_deletion(tp.topic)
    )


def decide_trigger_online(ctx: ControllerContext, *, now_ms: int) -> StateChangePlan:
    """Bring every New or Offline partition online with the offline selector (failover, broker
    change)."""
    return decide_partition_changes(
        ctx,
        partitions_to_trigger_online(ctx),
        PartitionState.ONLINE,
        now_ms=now_ms,
        selector=LeaderSelector.OFFLINE,
    )


def _initialize_leader_and_isr(b: PlanBuilder, tp: TopicPartition) -> None:
    new, online = PartitionState.NEW, PartitionState.ONLINE
    assignment = b.ctx.assignment(tp)
    if assignment is None or not assignment.replicas:
        b.fail(tp, -1, new, online, FailureCode.NO_ASSIGNMENT, f"{tp} has no replicas assigned")
        return
    if b.ctx.leader_and_isr(tp) is not None:
        b.fail(
            tp, -1, new, online, FailureCode.STATE_ALREADY_EXISTS, f"{tp} already has a state key"
        )
        return
    live = tuple(r for r in assignment.replicas if b.ctx.is_replica_online(r, tp))
    if not live:
        b.fail(
            tp,
            -1,
            new,
            online,
            FailureCode.NO_LIVE_REPLICA,
            f"no assigned replica of {list(assignment.replicas)} is online "
            f"(live brokers {sorted(b.ctx.live_broker_ids)})",
        )
        return
    lai = b.write(
        tp,
        LeaderAndIsr(live[0], INITIAL_LEADER_EPOCH, live, b.ctx.controller_epoch),
        create=True,
    )
    b.request(LeaderAndIsrIntent(lai.isr, tp, is_new=True))
    b.partition_transition(tp, new, online, "new")


def _elect_leader(
    b: PlanBuilder,
    tp: TopicPartition,
    current_state: PartitionState,
    selector: LeaderSelector,
    log_reason: str,
) -> None:
    target = PartitionState.ONLINE
    ctx = b.ctx
    epoch = ctx.controller_epoch
    current = ctx.leader_and_isr(tp)
    if current is None:
        b.fail(
            tp,
            -1,
            current_state,
            target,
            FailureCode.NO_LEADERSHIP_INFO,
            f"{tp} has no leader and ISR state to elect from",
        )
        return
    if current.controller_epoch > epoch:
        b.fail(
            tp,
            -1,
            current_state,
            target,
            FailureCode.STALE_CONTROLLER_EPOCH,
            f"{tp} state was written by controller epoch {current.controller_epoch}, "
            f"newer than ours ({epoch})",
        )
        return
    election = select_leader(ctx, tp, current, selector)
    if isinstance(election, ElectionFailure):
        b.fail(
            tp,
            -1,
            current_state,
            target,
            FailureCode.ELECTION_FAILED,
            f"failed to elect a leader for {tp} with the {selector.value} selector: "
            f"{election.reason}",
            election.error,
        )
        return
    stamped = election.leader_and_isr.with_epochs(controller_epoch=epoch)
    if not stamped.same_decision_as(current):
        b.write(tp, stamped, create=False)
    b.request(LeaderAndIsrIntent(election.recipients, tp, is_new=False))
    b.partition_transition(tp, current_state, target, "unclean" if election.unclean else log_reason)
