"""The controller's pure core: state machines, leader selectors, request batching, rebalance.

Nothing in this package imports grpc or etcd. Decisions take the read-only ``ControllerContext``
and return values (``StateChangePlan``, ``RebalanceDecision``); the etcd commit layer commits a
plan's writes, ``ControllerContext.apply_plan`` applies it, and ``RequestBatch.add_plan`` queues
its broker requests (ARCHITECTURE §5: decide, commit, apply).
"""

from services.controller.core.context import UNCLEAN_LEADER_ELECTION_ENABLE, ControllerContext
from services.controller.core.imbalance import (
    BrokerImbalance,
    RebalanceDecision,
    can_preferred_replica_lead,
    decide_auto_rebalance,
    leader_imbalance,
)
from services.controller.core.model import (
    EPOCH_DURING_DELETE,
    INITIAL_LEADER_EPOCH,
    LEADER_DURING_DELETE,
    NO_EPOCH,
    NO_LEADER,
    PARTITION_EPOCH_UNWRITTEN,
    BrokerInfo,
    LeaderAndIsr,
    PartitionReplica,
    ReplicaAssignment,
    TopicPartition,
)
from services.controller.core.partition_state_machine import (
    LeaderSelector,
    decide_partition_changes,
    decide_trigger_online,
    partitions_to_trigger_online,
    select_leader,
)
from services.controller.core.plan import (
    AssignmentChange,
    BrokerRequestIntent,
    FailureCode,
    LeaderAndIsrIntent,
    PartitionStateWrite,
    PartitionTransition,
    ReplicaTransition,
    StateChangeFailure,
    StateChangePlan,
    StopReplicaIntent,
    UpdateMetadataIntent,
)
from services.controller.core.replica_state_machine import decide_replica_changes
from services.controller.core.request_batch import (
    BrokerRequests,
    IllegalStateError,
    LeaderAndIsrPartitionState,
    RequestBatch,
    StopReplicaPartitionState,
    UpdateMetadataPartitionState,
    update_metadata_state,
)
from services.controller.core.selectors import (
    ElectionError,
    ElectionFailure,
    ElectionResult,
    elect_controlled_shutdown,
    elect_noop,
    elect_offline,
    elect_preferred,
    elect_reassigned,
)
from services.controller.core.states import PartitionState, ReplicaState, is_valid_transition

__all__ = [
    "EPOCH_DURING_DELETE",
    "INITIAL_LEADER_EPOCH",
    "LEADER_DURING_DELETE",
    "NO_EPOCH",
    "NO_LEADER",
    "PARTITION_EPOCH_UNWRITTEN",
    "UNCLEAN_LEADER_ELECTION_ENABLE",
    "AssignmentChange",
    "BrokerImbalance",
    "BrokerInfo",
    "BrokerRequestIntent",
    "BrokerRequests",
    "ControllerContext",
    "ElectionError",
    "ElectionFailure",
    "ElectionResult",
    "FailureCode",
    "IllegalStateError",
    "LeaderAndIsr",
    "LeaderAndIsrIntent",
    "LeaderAndIsrPartitionState",
    "LeaderSelector",
    "PartitionReplica",
    "PartitionState",
    "PartitionStateWrite",
    "PartitionTransition",
    "RebalanceDecision",
    "ReplicaAssignment",
    "ReplicaState",
    "ReplicaTransition",
    "RequestBatch",
    "StateChangeFailure",
    "StateChangePlan",
    "StopReplicaIntent",
    "StopReplicaPartitionState",
    "TopicPartition",
    "UpdateMetadataIntent",
    "UpdateMetadataPartitionState",
    "can_preferred_replica_lead",
    "decide_auto_rebalance",
    "decide_partition_changes",
    "decide_replica_changes",
    "decide_trigger_online",
    "elect_controlled_shutdown",
    "elect_noop",
    "elect_offline",
    "elect_preferred",
    "elect_reassigned",
    "is_valid_transition",
    "leader_imbalance",
    "partitions_to_trigger_online",
    "select_leader",
    "update_metadata_state",
]
