"""What ``kafka-reassign-partitions`` works out and prints around a reassignment.

The CLI prints these texts and the admin service returns the same facts over gRPC, so both live
here as pure functions with Kafka's wording (``--generate``, ``--execute``, ``--verify``,
``--list``) and Kafka's replication-throttle arithmetic (KIP-73): which replicas a reassignment
moves from where to where, and the ``leader/follower.replication.throttled.replicas`` values that
throttle exactly that traffic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from leasehold.common.v1 import common_pb2
from leasehold.errors import NotFoundError
from leasehold.javacompat import java_string_key
from leasehold.reassign_json import TopicPartition, format_reassignment_json

EXISTING_REASSIGNMENT_MESSAGE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. The "
    "--additional flag can also be used to change the throttle by resubmitting the current "
    "reassignment."
)
VERIFY_PERIODICALLY_MESSAGE = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure "
    "the throttle is removed."
)


@dataclass(frozen=True)
class OngoingReassignment:
    """A reassignment in flight: all replicas now, those being added, those being removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclass(frozen=True)
class PartitionReassignmentState:
    """``--verify``'s view of one partition: its replicas now, the target, and whether done."""

    current_replicas: tuple[int, ...]
    target_replicas: tuple[int, ...]
    done: bool


@dataclass(frozen=True)
class PartitionMove:
    """Replicas a reassignment copies from (``sources``) and to (``destinations``)."""

    sources: frozenset[int]
    destinations: frozenset[int]


def _order(parts: Mapping[TopicPartition, object]) -> list[TopicPartition]:
    return sorted(parts, key=lambda tp: (java_string_key(tp[0]), tp[1]))


def _csv(values: Sequence[int]) -> str:
    return ",".join(str(v) for v in values)


def reassignment_states(
    targets: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
    ongoing: Mapping[TopicPartition, OngoingReassignment],
) -> dict[TopicPartition, PartitionReassignmentState]:
    """``--verify``: a partition is done unless it is still being reassigned.

    A done partition reports its replicas now (none if the topic or partition is gone), so the
    caller can tell "completed" from "finished elsewhere".
    """
    states: dict[TopicPartition, PartitionReassignmentState] = {}
    for tp, target in targets.items():
        if tp in ongoing:
            states[tp] = PartitionReassignmentState(ongoing[tp].replicas, tuple(target), False)
        else:
            states[tp] = PartitionReassignmentState(tuple(current.get(tp, ())), tuple(target), True)
    return states


def format_verify_status(states: Mapping[TopicPartition, PartitionReassignmentState]) -> str:
    lines = ["Status of partition reassignment:"]
    for tp in _order(states):
        state = states[tp]
        if not state.done:
            lines.append(f"Reassignment of partition {tp} is still in progress.")
        elif state.current_replicas == state.target_replicas:
            lines.append(f"Reassignment of partition {tp} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp}, but replica set is "
                f"{_csv(state.current_replicas)} rather than {_csv(state.target_replicas)}."
            )
    return "\n".join(lines)


def format_current_reassignments(ongoing: Mapping[TopicPartition, OngoingReassignment]) -> str:
    """``--list``."""
    if not ongoing:
        return "No partition reassignments found."
    lines = ["Current partition reassignments:"]
    for tp in _order(ongoing):
        r = ongoing[tp]
        adding = f" adding: {_csv(r.adding)}." if r.adding else ""
        removing = f" removing: {_csv(r.removing)}." if r.removing else ""
        lines.append(f"{tp}: replicas: {_csv(r.replicas)}.{adding}{removing}")
    return "\n".join(lines)


def format_generate_output(
    current: Mapping[TopicPartition, Sequence[int]],
    proposed: Mapping[TopicPartition, Sequence[int]],
) -> str:
    """``--generate``'s output: the current assignment, then the proposal, each as a file."""
    return (
        f"Current partition replica assignment\n{format_reassignment_json(current)}\n\n"
        f"Proposed partition reassignment configuration\n{format_reassignment_json(proposed)}\n"
    )


def format_rollback_output(
    proposed: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
) -> str:
    """What ``--execute`` prints first: the current replicas of the partitions it will move."""
    moving = {tp: replicas for tp, replicas in current.items() if tp in proposed}
    return (
        f"Current partition replica assignment\n\n{format_reassignment_json(moving)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )


def format_execute_started(targets: Mapping[TopicPartition, Sequence[int]]) -> str:
    plural = "" if len(targets) == 1 else "s"
    parts = ",".join(str(tp) for tp in _order(targets))
    return f"Successfully started partition reassignment{plural} for {parts}"


def format_execute_errors(errors: Mapping[TopicPartition, str]) -> str:
    lines = [f"{tp}: {errors[tp]}" for tp in _order(errors)]
    return "Error reassigning partition(s):\n" + "\n".join(lines)


def proposed_moves(
    ongoing: Mapping[TopicPartition, OngoingReassignment],
    proposed: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
) -> dict[str, dict[int, PartitionMove]]:
    """Per topic and partition, which replicas copy data and which receive it.

    Partitions already moving keep their original sources (a new target does not make a
    half-built replica a source); the others copy from their current replicas.
    """
    moves: dict[str, dict[int, PartitionMove]] = {}
    for tp, r in ongoing.items():
        sources = frozenset(r.replicas) - frozenset(r.adding)
        moves.setdefault(tp[0], {})[tp[1]] = PartitionMove(sources, frozenset(r.adding))
    for tp, replicas in proposed.items():
        topic_moves = moves.setdefault(tp[0], {})
        if tp[1] in topic_moves:
            sources = topic_moves[tp[1]].sources
        elif tp in current:
            sources = frozenset(current[tp])
        else:
            raise NotFoundError(
                common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                f"Trying to reassign a topic partition {TopicPartition(*tp)} with 0 replicas",
            )
        topic_moves[tp[1]] = PartitionMove(sources, frozenset(replicas) - sources)
    return moves


def leader_throttles(moves: Mapping[str, Mapping[int, PartitionMove]]) -> dict[str, str]:
    """``leader.replication.throttled.replicas`` per topic: every source replica.

    Items are sorted as strings ("10:1" before "2:1"), as Kafka's ``TreeSet<String>`` does.
    """
    return {
        topic: ",".join(sorted(f"{p}:{b}" for p, move in parts.items() for b in move.sources))
        for topic, parts in moves.items()
    }


def follower_throttles(moves: Mapping[str, Mapping[int, PartitionMove]]) -> dict[str, str]:
    """``follower.replication.throttled.replicas`` per topic: every destination replica."""
    return {
        topic: ",".join(
            sorted(
                f"{p}:{b}"
                for p, move in parts.items()
                for b in move.destinations
                if b not in move.sources
            )
        )
        for topic, parts in moves.items()
    }


def reassigning_brokers(moves: Mapping[str, Mapping[int, PartitionMove]]) -> list[int]:
    """Brokers that send or receive replication for the moves: they get the throttle rates."""
    return sorted(
        {b for parts in moves.values() for m in parts.values() for b in m.sources | m.destinations}
    )
