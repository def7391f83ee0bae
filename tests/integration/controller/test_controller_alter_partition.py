"""AlterPartition (KIP-497) validation, write, answer and propagation."""

from __future__ import annotations

import grpc
import pytest
from ctlharness import alter_partition, eventually

from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc

E = common_pb2


@pytest.fixture
async def setup(cluster):
    for b in (1, 2, 3):
        await cluster.add_broker(b)
    await cluster.add_broker(4)  # registered but not assigned
    node = await cluster.add_controller(1)
    assert await cluster.active() is node
    standby = await cluster.add_controller(2)
    await cluster.create_topic("a", {0: [1, 2, 3]})
    state = (await cluster.wait_states("a", 1, lambda s: True))[0]
    return node, standby, state.leader_and_isr


# (case, sender, isr, leader epoch delta, partition epoch delta, isr epochs, expected error)
CASES = [
    ("not the leader", 2, [1, 2], 0, 0, {}, E.ERROR_CODE_NOT_LEADER_OR_FOLLOWER),
    ("older leader epoch", 1, [1, 2], -1, 0, {}, E.ERROR_CODE_FENCED_LEADER_EPOCH),
    ("newer leader epoch", 1, [1, 2], 1, 0, {}, E.ERROR_CODE_UNKNOWN_LEADER_EPOCH),
    ("stale partition epoch", 1, [1, 2], 0, -1, {}, E.ERROR_CODE_INVALID_UPDATE_VERSION),
    ("future partition epoch", 1, [1, 2], 0, 5, {}, E.ERROR_CODE_INVALID_UPDATE_VERSION),
    ("leader not in isr", 1, [2, 3], 0, 0, {}, E.ERROR_CODE_INVALID_REQUEST),
    ("unassigned replica", 1, [1, 4], 0, 0, {}, E.ERROR_CODE_INVALID_REQUEST),
    ("stale replica epoch", 1, [1, 2], 0, 0, {2: 1}, E.ERROR_CODE_INELIGIBLE_REPLICA),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
async def test_invalid_alter_partition_changes_nothing(cluster, setup, case):
    node, _, lai = setup
    _, sender, isr, dle, dpe, epochs, expected = case
    resp = await alter_partition(
        node,
        cluster.brokers[sender],
        "a",
        0,
        isr,
        leader_epoch=lai.leader_epoch + dle,
        partition_epoch=lai.partition_epoch + dpe,
        isr_epochs=epochs,
    )
    assert resp.error_code == 0
    assert [p.error_code for p in resp.topics[0].partitions] == [expected]
    assert (await cluster.state("a", 0)).leader_and_isr == lai


async def test_alter_partition_writes_answers_and_propagates(cluster, setup):
    node, standby, lai = setup
    b1 = cluster.brokers[1]
    # A stale sender epoch rejects the whole request; a standby is not the controller.
    resp = await alter_partition(
        node, b1, "a", 0, [1, 2], leader_epoch=lai.leader_epoch,
        partition_epoch=lai.partition_epoch, broker_epoch=b1.epoch - 1,
    )  # fmt: skip
    assert resp.error_code == E.ERROR_CODE_STALE_BROKER_EPOCH
    resp = await alter_partition(
        standby, b1, "a", 0, [1, 2], leader_epoch=lai.leader_epoch,
        partition_epoch=lai.partition_epoch,
    )  # fmt: skip
    assert resp.error_code == E.ERROR_CODE_NOT_CONTROLLER
    mark = len(cluster.brokers[3].calls)
    resp = await alter_partition(
        node, b1, "a", 0, [1, 2], leader_epoch=lai.leader_epoch,
        partition_epoch=lai.partition_epoch,
        isr_epochs={1: b1.epoch, 2: cluster.brokers[2].epoch},
    )  # fmt: skip
    part = resp.topics[0].partitions[0]
    now = (await cluster.state("a", 0)).leader_and_isr
    assert (part.error_code, part.leader_id, part.leader_epoch, list(part.isr)) == (
        0, 1, lai.leader_epoch, [1, 2]
    )  # fmt: skip
    assert part.partition_epoch == now.partition_epoch > lai.partition_epoch
    assert (now.isr, now.leader_epoch) == ((1, 2), lai.leader_epoch)

    async def propagated() -> bool:
        um = [c for c in cluster.brokers[3].calls[mark:] if c.kind == "UpdateMetadata"]
        return any(
            list(s.isr) == [1, 2] and s.partition_epoch == now.partition_epoch
            for c in um
            for s in c.request.partition_states
        )

    await eventually(propagated, 10, "UpdateMetadata with the new ISR")
    # The same request again uses a now stale partition epoch.
    resp = await alter_partition(
        node, b1, "a", 0, [1, 2, 3], leader_epoch=lai.leader_epoch,
        partition_epoch=lai.partition_epoch,
    )  # fmt: skip
    assert resp.topics[0].partitions[0].error_code == E.ERROR_CODE_INVALID_UPDATE_VERSION
    # A dead replica may not join (KIP-841).
    await cluster.brokers[3].deregister()
    await eventually(lambda: 3 not in node.controller.ctx.brokers, 10, "broker 3 gone")
    resp = await alter_partition(
        node, b1, "a", 0, [1, 2, 3], leader_epoch=now.leader_epoch,
        partition_epoch=now.partition_epoch,
    )  # fmt: skip
    assert resp.topics[0].partitions[0].error_code == E.ERROR_CODE_INELIGIBLE_REPLICA
    resp = await alter_partition(node, b1, "nope", 0, [1], leader_epoch=0, partition_epoch=0)
    assert resp.topics[0].partitions[0].error_code == E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION


async def test_malformed_requests_are_invalid_argument(cluster, setup):
    node, _, _ = setup
    async with grpc.aio.insecure_channel(node.address) as ch:
        stub = controller_pb2_grpc.ControllerServiceStub(ch)
        bad = [
            controller_pb2.AlterPartitionRequest(broker_id=-1),
            controller_pb2.AlterPartitionRequest(broker_id=1),
            controller_pb2.AlterPartitionRequest(
                broker_id=1, topics=[controller_pb2.AlterPartitionTopic(topic="a")]
            ),
        ]
        for req in bad:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.AlterPartition(req)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.ControlledShutdown(controller_pb2.ControlledShutdownRequest(broker_id=-3))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
