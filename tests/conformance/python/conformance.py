"""The conformance scenario (tests/conformance/README.md) through the Python SDK.

Reads go through ``leasehold.client.AdminClient``; the steps that expect per-item results or
a failed call use the generated stubs the SDK ships on an SDK channel (``AdminClient`` would
turn a failed call into an exception), as do broker steps, which aim at a chosen broker (the
leader, or a follower to be refused). Failed calls are read with the SDK's ``details_of``.

    python tests/conformance/python/conformance.py tests/conformance/scenario.json
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from leasehold.admin.v1 import admin_pb2, admin_pb2_grpc
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.channels import channel
from leasehold.client import AdminClient
from leasehold.client.errors import details_of
from leasehold.common.v1 import common_pb2
from leasehold.config import TlsConfig
from leasehold.errors import LeaseholdError
from leasehold.group.v1 import group_pb2, group_pb2_grpc

Outcome = dict[str, Any]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def error_name(code: int) -> str:
    return common_pb2.ErrorCode.Name(code).removeprefix("ERROR_CODE_")


def failed_call(error: grpc.aio.AioRpcError) -> Outcome:
    details = details_of(error)
    trailer = dict(error.trailing_metadata() or ())
    out: Outcome = {"status": error.code().name, "message": error.details()}
    if "grpc-status-details-bin" in trailer:
        out |= {"reason": details.reason, "domain": "leasehold", "error_code": details.code}
    if details.violations:
        out["field"] = details.violations[0].field
    return out


class Runner:
    def __init__(self, scenario: dict, topic: str, admin: str, tls: TlsConfig | None) -> None:
        self.scenario = scenario
        self.topic = topic
        self.admin_address = admin
        self.tls = tls
        self.brokers: dict[int, str] = {}
        self.leaders: dict[
            int, tuple[int, int, list[int]]
        ] = {}  # partition -> leader, epoch, replicas
        self.coordinator = ""
        self.member: tuple[str, int, list[group_pb2.TopicPartitions]] = ("", 0, [])
        self.admin = AdminClient(admin, tls=tls)
        self.admin_channel = channel(admin, tls)
        self.admin_stub = admin_pb2_grpc.AdminServiceStub(self.admin_channel)

    def subst(self, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("$topic", self.topic)
        if isinstance(value, list):
            return [self.subst(v) for v in value]
        if isinstance(value, dict):
            return {k: self.subst(v) for k, v in value.items()}
        return value

    def address(self, step: dict) -> str:
        if step["target"] == "admin":
            return self.admin_address
        leader, _epoch, replicas = self.leaders[step["partition"]]
        if step["target"] == "leader":
            return self.brokers[leader]
        follower = next(r for r in replicas if r != leader)
        return self.brokers[follower]

    # --- ops ------------------------------------------------------------------------------------

    async def health(self, step: dict) -> Outcome:
        async with channel(self.address(step), self.tls) as ch:
            reply = await health_pb2_grpc.HealthStub(ch).Check(
                health_pb2.HealthCheckRequest(service=step["service"]), timeout=10
            )
        return {"serving": health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}

    async def reflection_list(self, step: dict) -> Outcome:
        # v1 and v1alpha have the same messages; only the service name differs.
        method = f"/grpc.reflection.{step['version']}.ServerReflection/ServerReflectionInfo"
        async with channel(self.address(step), self.tls) as ch:
            call = ch.stream_stream(
                method,
                request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
            )(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
            reply = await call.read()
            call.cancel()
        return {"services": [s.name for s in reply.list_services_response.service]}

    async def describe_cluster(self, step: dict) -> Outcome:
        reply = await self.admin.describe_cluster()
        self.brokers = {b.broker_id: f"{b.host}:{b.port}" for b in reply.brokers}
        return {"brokers": len(reply.brokers), "controller": reply.HasField("active_controller")}

    async def create_topics(self, step: dict) -> Outcome:
        topics = []
        for t in step["topics"]:
            topic = admin_pb2.CreatableTopic(name=t["name"])
            if "partitions" in t:
                topic.num_partitions = t["partitions"]
            if "replication_factor" in t:
                topic.replication_factor = t["replication_factor"]
            topics.append(topic)
        reply = await self.admin_stub.CreateTopics(
            admin_pb2.CreateTopicsRequest(topics=topics, timeout_ms=step["timeout_ms"]), timeout=60
        )
        return {
            "results": [{"name": r.name, "error": error_name(r.error_code)} for r in reply.topics]
        }

    async def delete_topics(self, step: dict) -> Outcome:
        reply = await self.admin_stub.DeleteTopics(
            admin_pb2.DeleteTopicsRequest(
                topic_names=step["topics"], timeout_ms=step["timeout_ms"]
            ),
            timeout=60,
        )
        return {
            "results": [{"name": r.name, "error": error_name(r.error_code)} for r in reply.topics]
        }

    async def describe_topics(self, step: dict) -> Outcome:
        described = await self.admin.describe_topics(step["topics"])
        return {
            "topics": [
                {
                    "name": t.name,
                    "partitions": len(t.partitions),
                    "replication_factor": len(t.partitions[0].replicas) if t.partitions else 0,
                }
                for t in described
            ]
        }

    async def find_leaders(self, step: dict) -> Outcome:
        (described,) = await self.admin.describe_topics([step["topic"]])
        self.leaders = {
            p.partition: (p.leader, p.leader_epoch, list(p.replicas))
            for p in described.partitions
            if p.leader >= 0
        }
        return {"partitions": len(self.leaders)}

    async def produce(self, step: dict) -> Outcome:
        records = []
        for r in self.scenario["records"]:
            record = broker_pb2.Record()
            if "key" in r:
                record.key = base64.b64decode(r["key"])
            if "value" in r:
                record.value = base64.b64decode(r["value"])
            records.append(record)
        request = broker_pb2.ProduceRequest(
            acks=step["acks"],
            timeout_ms=10000,
            topics=[
                broker_pb2.TopicProduceData(
                    topic=step["topic"],
                    partitions=[
                        broker_pb2.PartitionProduceData(
                            partition=step["partition"], records=records
                        )
                    ],
                )
            ],
        )
        async with channel(self.address(step), self.tls) as ch:
            reply = await broker_pb2_grpc.BrokerServiceStub(ch).Produce(request, timeout=20)
        p = reply.topics[0].partitions[0]
        out: Outcome = {"error": error_name(p.error_code), "base_offset": p.base_offset}
        if p.HasField("current_leader"):
            out["current_leader"] = p.current_leader.leader_id
        return out

    async def fetch(self, step: dict) -> Outcome:
        fmt = step["record_format"]
        partition = broker_pb2.FetchPartition(
            partition=step["partition"], fetch_offset=step["offset"], partition_max_bytes=1 << 20
        )
        if step.get("current_leader_epoch") == "leader_epoch":
            partition.current_leader_epoch = self.leaders[step["partition"]][1]
        request = broker_pb2.FetchRequest(
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=1 << 20,
            record_format=fmt
            if isinstance(fmt, int)
            else broker_pb2.RecordFormat.Value(f"RECORD_FORMAT_{fmt}"),
            topics=[broker_pb2.FetchTopic(topic=step["topic"], partitions=[partition])],
        )
        async with channel(self.address(step), self.tls) as ch:
            reply = await broker_pb2_grpc.BrokerServiceStub(ch).Fetch(request, timeout=20)
        p = reply.topics[0].partitions[0]
        records = []
        for r in p.decoded_records:
            record = {}
            if r.HasField("key"):
                record["key"] = b64(r.key)
            if r.HasField("value"):
                record["value"] = b64(r.value)
            records.append(record)
        return {"error": error_name(p.error_code), "records": records}

    async def _group_call(self, address: str, method: str, request):
        async with channel(address, self.tls) as ch:
            return await getattr(group_pb2_grpc.GroupServiceStub(ch), method)(request, timeout=20)

    async def find_coordinator(self, step: dict) -> Outcome:
        request = group_pb2.FindCoordinatorRequest(group_ids=[step["group"]])
        reply = await self._group_call(self.brokers[min(self.brokers)], "FindCoordinator", request)
        (c,) = reply.coordinators
        if c.error_code == common_pb2.ERROR_CODE_NONE:
            self.coordinator = f"{c.host}:{c.port}"
        return {"error": error_name(c.error_code)}

    async def group_heartbeat(self, step: dict) -> Outcome:
        member_id, epoch, owned = self.member
        request = group_pb2.ConsumerGroupHeartbeatRequest(
            group_id=step["group"], member_id=member_id, member_epoch=epoch
        )
        if step.get("leave"):
            request.member_epoch = -1
        elif epoch == 0:
            request.subscription.topic_names.append(step["topic"])
            request.owned.SetInParent()
        else:
            request.owned.topic_partitions.extend(owned)
        reply = await self._group_call(self.coordinator, "ConsumerGroupHeartbeat", request)
        if reply.HasField("assignment"):
            owned = list(reply.assignment.topic_partitions)
        self.member = (reply.member_id, max(reply.member_epoch, 0), owned)
        assigned = sum(len(t.partitions) for t in owned)
        return {"assigned": assigned, "member_epoch": reply.member_epoch}

    async def offset_commit(self, step: dict) -> Outcome:
        member_id, epoch, _ = self.member
        if step["member_epoch"] != "current":
            epoch = step["member_epoch"]
        request = group_pb2.OffsetCommitRequest(
            group_id=step["group"],
            member_id=member_id,
            member_epoch=epoch,
            topics=[
                group_pb2.OffsetCommitTopic(
                    topic=step["topic"],
                    partitions=[
                        group_pb2.OffsetCommitPartition(
                            partition=step["partition"], committed_offset=step["offset"]
                        )
                    ],
                )
            ],
        )
        reply = await self._group_call(self.coordinator, "OffsetCommit", request)
        return {"error": error_name(reply.topics[0].partitions[0].error_code)}

    async def offset_fetch(self, step: dict) -> Outcome:
        request = group_pb2.OffsetFetchRequest(
            group_id=step["group"],
            topics=[
                group_pb2.OffsetFetchTopic(topic=step["topic"], partitions=[step["partition"]])
            ],
        )
        reply = await self._group_call(self.coordinator, "OffsetFetch", request)
        p = reply.topics[0].partitions[0]
        return {"error": error_name(p.error_code), "offset": p.committed_offset}

    # --- expectations ---------------------------------------------------------------------------

    def problem(self, step: dict, outcome: Outcome) -> str | None:
        expect = step["expect"]
        if "status" in expect and "status" not in outcome:
            return f"expected the call to fail with {expect['status']}, it succeeded: {outcome}"
        if "status" not in expect and "status" in outcome:
            return f"the call failed: {outcome['status']} {outcome.get('message')}"
        for key, want in expect.items():
            got = outcome.get(key)
            if key == "includes":
                missing = [s for s in want if s not in outcome["services"]]
                if missing:
                    return f"reflection lists {outcome['services']}, not {missing}"
            elif key == "records" and want == "records":
                if got != self.scenario["records"]:
                    return f"fetched {got}, produced {self.scenario['records']}"
            elif key == "current_leader" and want == "leader":
                if got != self.leaders[step["partition"]][0]:
                    return (
                        f"current_leader {got}, the leader is {self.leaders[step['partition']][0]}"
                    )
            elif got != want:
                return f"{key}: expected {want!r}, got {got!r}"
        return None

    async def run_step(self, step: dict) -> str | None:
        op = getattr(self, step["op"])
        deadline = time.monotonic() + step.get("wait_ms", 0) / 1000
        while True:
            try:
                outcome = await op(step)
            except grpc.aio.AioRpcError as e:
                outcome = failed_call(e)
            except LeaseholdError as e:
                outcome = {"status": e.grpc_status, "message": e.message}
            except Exception as e:  # a step that cannot even be tried (no leader known yet)
                outcome = {"status": "RUNNER", "message": repr(e)}
            problem = self.problem(step, outcome)
            if problem is None or time.monotonic() >= deadline:
                return problem
            await asyncio.sleep(0.2)

    async def run(self) -> int:
        passed = failed = 0
        try:
            for raw in self.scenario["steps"]:
                step = self.subst(raw)
                problem = await self.run_step(step)
                if problem is None:
                    passed += 1
                    print(f"ok {step['id']}")
                else:
                    failed += 1
                    print(f"FAIL {step['id']}: {problem}")
        finally:
            await self.admin.close()
            await self.admin_channel.close()
        print(f"{passed} passed, {failed} failed")
        return 0 if failed == 0 else 1


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        scenario = json.load(f)
    ca = os.environ.get("LEASEHOLD_TLS_CA", "")
    tls = (
        TlsConfig(
            cert=os.environ.get("LEASEHOLD_TLS_CERT", ""),
            key=os.environ.get("LEASEHOLD_TLS_KEY", ""),
            ca=ca,
        )
        if ca
        else None
    )
    topic = os.environ.get("LEASEHOLD_TOPIC") or f"conformance-python-{os.getpid()}"
    admin = os.environ.get("LEASEHOLD_ADMIN") or "127.0.0.1:9093"

    async def run() -> int:  # channels belong to the loop they are made in
        return await Runner(scenario, topic, admin, tls).run()

    return asyncio.run(run())


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
