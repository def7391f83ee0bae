// The conformance scenario (tests/conformance/README.md) with @grpc/grpc-js and the TypeScript
// code ts-proto generated into libs/ts (make clients). Compiled by `make conformance-build`:
//
//   node libs/ts/dist/tests/conformance/ts/conformance.js tests/conformance/scenario.json
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import {
  admin,
  broker,
  common,
  errorDetails,
  group,
  health,
  reflectionV1,
  reflectionV1alpha,
  status,
} from "../../../libs/ts/src";

type Obj = { [key: string]: any };
type Leader = { id: number; epoch: number; replicas: number[] };

const DEADLINE_MS = 60_000;

function credentials(): grpc.ChannelCredentials {
  const ca = process.env.LEASEHOLD_TLS_CA;
  if (!ca) return grpc.credentials.createInsecure();
  const cert = process.env.LEASEHOLD_TLS_CERT;
  const key = process.env.LEASEHOLD_TLS_KEY;
  return grpc.credentials.createSsl(
    readFileSync(ca),
    key ? readFileSync(key) : null,
    cert ? readFileSync(cert) : null,
  );
}

// Calls a generated unary method as a promise.
function unary<Req, Res>(client: any, method: string, request: Req): Promise<Res> {
  const deadline = new Date(Date.now() + DEADLINE_MS);
  return new Promise((resolve, reject) => {
    client[method](request, new grpc.Metadata(), { deadline }, (err: grpc.ServiceError | null, res: Res) =>
      err ? reject(err) : resolve(res),
    );
  });
}

function errorName(code: common.ErrorCode): string {
  return common.errorCodeToJSON(code).replace(/^ERROR_CODE_/, "");
}

const b64 = (data: Buffer | Uint8Array) => Buffer.from(data).toString("base64");

// What a failed call carries: its status and the google.rpc.Status details of its trailer.
function failedCall(err: any): Obj {
  if (typeof err?.code !== "number" || !err.metadata) return { status: "RUNNER", message: String(err) };
  const out: Obj = { status: grpc.status[err.code], message: err.details };
  for (const raw of err.metadata.get("grpc-status-details-bin")) {
    for (const detail of status.Status.decode(raw as Buffer).details) {
      if (detail.typeUrl.endsWith("/google.rpc.ErrorInfo")) {
        const info = errorDetails.ErrorInfo.decode(detail.value);
        Object.assign(out, { reason: info.reason, domain: info.domain, error_code: Number(info.metadata.error_code) });
      } else if (detail.typeUrl.endsWith("/google.rpc.BadRequest")) {
        const bad = errorDetails.BadRequest.decode(detail.value);
        if (bad.fieldViolations.length) out.field = bad.fieldViolations[0].field;
      }
    }
  }
  return out;
}

class Runner {
  private creds = credentials();
  private clients = new Map<string, any>();
  private brokers = new Map<number, string>();
  private leaders = new Map<number, Leader>();
  // The consumer group steps: the group's coordinator and what the last heartbeat gave.
  private coordinator = "";
  private member = { id: "", epoch: 0, owned: [] as group.TopicPartitions[] };

  constructor(private scenario: Obj, private topic: string, private adminAddress: string) {}

  private client(kind: any, address: string): any {
    const key = `${kind.serviceName}@${address}`;
    if (!this.clients.has(key)) this.clients.set(key, new kind(address, this.creds));
    return this.clients.get(key);
  }

  private address(step: Obj): string {
    if (step.target === "admin") return this.adminAddress;
    const leader = this.leaders.get(step.partition);
    if (!leader) throw new Error("no leader known for that partition");
    if (step.target === "leader") return this.brokers.get(leader.id)!;
    const follower = leader.replicas.find((r) => r !== leader.id);
    if (follower === undefined) throw new Error("the partition has no follower");
    return this.brokers.get(follower)!;
  }

  private get admin(): admin.AdminServiceClient {
    return this.client(admin.AdminServiceClient, this.adminAddress);
  }

  // --- ops ------------------------------------------------------------------------------------

  async health(step: Obj): Promise<Obj> {
    const client = this.client(health.HealthClient, this.address(step));
    const reply = await unary<health.HealthCheckRequest, health.HealthCheckResponse>(client, "check", {
      service: step.service,
    });
    return { serving: health.healthCheckResponse_ServingStatusToJSON(reply.status) };
  }

  async reflection_list(step: Obj): Promise<Obj> {
    const kind = step.version === "v1" ? reflectionV1.ServerReflectionClient : reflectionV1alpha.ServerReflectionClient;
    const client = this.client(kind, this.address(step));
    const names: string[] = await new Promise((resolve, reject) => {
      const call = client.serverReflectionInfo({ deadline: new Date(Date.now() + DEADLINE_MS) });
      call.on("data", (reply: any) => {
        call.end();
        resolve(reply.listServicesResponse.service.map((s: any) => s.name));
      });
      call.on("error", reject);
      call.write({ host: "", listServices: "" });
    });
    return { services: names };
  }

  async describe_cluster(_step: Obj): Promise<Obj> {
    const reply = await unary<admin.DescribeClusterRequest, admin.DescribeClusterResponse>(
      this.admin,
      "describeCluster",
      {},
    );
    for (const b of reply.brokers) this.brokers.set(b.brokerId, `${b.host}:${b.port}`);
    return { brokers: reply.brokers.length, controller: reply.activeController !== undefined };
  }

  async create_topics(step: Obj): Promise<Obj> {
    const request = admin.CreateTopicsRequest.fromPartial({
      timeoutMs: step.timeout_ms,
      // numPartitions / replicationFactor left undefined are absent: the cluster defaults.
      topics: step.topics.map((t: Obj) => ({
        name: t.name,
        numPartitions: t.partitions,
        replicationFactor: t.replication_factor,
      })),
    });
    const reply = await unary<admin.CreateTopicsRequest, admin.CreateTopicsResponse>(this.admin, "createTopics", request);
    return { results: reply.topics.map((t) => ({ name: t.name, error: errorName(t.errorCode) })) };
  }

  async delete_topics(step: Obj): Promise<Obj> {
    const request = admin.DeleteTopicsRequest.fromPartial({ topicNames: step.topics, timeoutMs: step.timeout_ms });
    const reply = await unary<admin.DeleteTopicsRequest, admin.DeleteTopicsResponse>(this.admin, "deleteTopics", request);
    return { results: reply.topics.map((t) => ({ name: t.name, error: errorName(t.errorCode) })) };
  }

  async describe_topics(step: Obj): Promise<Obj> {
    const reply = await unary<admin.DescribeTopicsRequest, admin.DescribeTopicsResponse>(
      this.admin,
      "describeTopics",
      { topics: step.topics },
    );
    return {
      topics: reply.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.length,
        replication_factor: t.partitions.length ? t.partitions[0].replicas.length : 0,
      })),
    };
  }

  async find_leaders(step: Obj): Promise<Obj> {
    const reply = await unary<admin.DescribeTopicsRequest, admin.DescribeTopicsResponse>(
      this.admin,
      "describeTopics",
      { topics: [step.topic] },
    );
    this.leaders.clear();
    for (const p of reply.topics[0].partitions) {
      if (p.leader >= 0) this.leaders.set(p.partition, { id: p.leader, epoch: p.leaderEpoch, replicas: p.replicas });
    }
    return { partitions: this.leaders.size };
  }

  async produce(step: Obj): Promise<Obj> {
    const client = this.client(broker.BrokerServiceClient, this.address(step));
    const records = this.scenario.records.map((r: Obj) => ({
      key: r.key === undefined ? undefined : Buffer.from(r.key, "base64"), // absent stays absent
      value: r.value === undefined ? undefined : Buffer.from(r.value, "base64"),
    }));
    const request = broker.ProduceRequest.fromPartial({
      acks: step.acks,
      timeoutMs: 10000,
      // No currentLeaderEpoch: absent is "not checked".
      topics: [{ topic: step.topic, partitions: [{ partition: step.partition, records }] }],
    });
    const reply = await unary<broker.ProduceRequest, broker.ProduceResponse>(client, "produce", request);
    const p = reply.topics[0].partitions[0];
    const out: Obj = { error: errorName(p.errorCode), base_offset: p.baseOffset };
    if (p.currentLeader) out.current_leader = p.currentLeader.leaderId;
    return out;
  }

  async fetch(step: Obj): Promise<Obj> {
    const client = this.client(broker.BrokerServiceClient, this.address(step));
    const format =
      typeof step.record_format === "number"
        ? (step.record_format as broker.RecordFormat)
        : broker.recordFormatFromJSON(`RECORD_FORMAT_${step.record_format}`);
    const epoch = step.current_leader_epoch === "leader_epoch" ? this.leaders.get(step.partition)!.epoch : undefined;
    // No replicaId: absent is a consumer.
    const request = broker.FetchRequest.fromPartial({
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 1 << 20,
      recordFormat: format,
      topics: [
        {
          topic: step.topic,
          partitions: [
            { partition: step.partition, fetchOffset: step.offset, partitionMaxBytes: 1 << 20, currentLeaderEpoch: epoch },
          ],
        },
      ],
    });
    const reply = await unary<broker.FetchRequest, broker.FetchResponse>(client, "fetch", request);
    const p = reply.topics[0].partitions[0];
    const records = p.decodedRecords.map((r) => {
      const got: Obj = {};
      if (r.key !== undefined) got.key = b64(r.key);
      if (r.value !== undefined) got.value = b64(r.value);
      return got;
    });
    return { error: errorName(p.errorCode), records };
  }

  private groupClient(): group.GroupServiceClient {
    if (!this.coordinator) throw new Error("no coordinator known");
    return this.client(group.GroupServiceClient, this.coordinator);
  }

  async find_coordinator(step: Obj): Promise<Obj> {
    const first = Math.min(...this.brokers.keys());
    const client = this.client(group.GroupServiceClient, this.brokers.get(first)!);
    const reply = await unary<group.FindCoordinatorRequest, group.FindCoordinatorResponse>(client, "findCoordinator", {
      groupIds: [step.group],
    });
    const c = reply.coordinators[0];
    if (c.errorCode === common.ErrorCode.ERROR_CODE_NONE) this.coordinator = `${c.host}:${c.port}`;
    return { error: errorName(c.errorCode) };
  }

  async group_heartbeat(step: Obj): Promise<Obj> {
    const request = group.ConsumerGroupHeartbeatRequest.fromPartial({
      groupId: step.group,
      memberId: this.member.id,
      memberEpoch: this.member.epoch,
    });
    if (step.leave) {
      request.memberEpoch = -1;
    } else if (this.member.epoch === 0) {
      request.subscription = { topicNames: [step.topic] };
      request.owned = { topicPartitions: [] };
    } else {
      request.owned = { topicPartitions: this.member.owned };
    }
    const reply = await unary<group.ConsumerGroupHeartbeatRequest, group.ConsumerGroupHeartbeatResponse>(
      this.groupClient(),
      "consumerGroupHeartbeat",
      request,
    );
    if (reply.assignment) this.member.owned = reply.assignment.topicPartitions;
    this.member.id = reply.memberId;
    this.member.epoch = Math.max(reply.memberEpoch, 0);
    const assigned = this.member.owned.reduce((n, t) => n + t.partitions.length, 0);
    return { assigned, member_epoch: reply.memberEpoch };
  }

  async offset_commit(step: Obj): Promise<Obj> {
    const request = group.OffsetCommitRequest.fromPartial({
      groupId: step.group,
      memberId: this.member.id,
      memberEpoch: step.member_epoch === "current" ? this.member.epoch : step.member_epoch,
      topics: [{ topic: step.topic, partitions: [{ partition: step.partition, committedOffset: step.offset }] }],
    });
    const reply = await unary<group.OffsetCommitRequest, group.OffsetCommitResponse>(
      this.groupClient(),
      "offsetCommit",
      request,
    );
    return { error: errorName(reply.topics[0].partitions[0].errorCode) };
  }

  async offset_fetch(step: Obj): Promise<Obj> {
    const request = group.OffsetFetchRequest.fromPartial({
      groupId: step.group,
      topics: [{ topic: step.topic, partitions: [step.partition] }],
    });
    const reply = await unary<group.OffsetFetchRequest, group.OffsetFetchResponse>(
      this.groupClient(),
      "offsetFetch",
      request,
    );
    const p = reply.topics[0].partitions[0];
    return { error: errorName(p.errorCode), offset: p.committedOffset };
  }

  // --- expectations ---------------------------------------------------------------------------

  problem(step: Obj, outcome: Obj): string | null {
    const expect: Obj = step.expect;
    if ("status" in expect && !("status" in outcome)) {
      return `expected the call to fail with ${expect.status}, it succeeded: ${JSON.stringify(outcome)}`;
    }
    if (!("status" in expect) && "status" in outcome) return `the call failed: ${outcome.status} ${outcome.message}`;
    for (const [key, want] of Object.entries(expect)) {
      const got = outcome[key];
      if (key === "includes") {
        const missing = (want as string[]).filter((s) => !outcome.services.includes(s));
        if (missing.length) return `reflection lists ${outcome.services}, not ${missing}`;
      } else if (key === "records" && want === "records") {
        if (JSON.stringify(got) !== JSON.stringify(this.scenario.records)) {
          return `fetched ${JSON.stringify(got)}, produced ${JSON.stringify(this.scenario.records)}`;
        }
      } else if (key === "current_leader" && want === "leader") {
        const leader = this.leaders.get(step.partition)!.id;
        if (got !== leader) return `current_leader ${got}, the leader is ${leader}`;
      } else if (JSON.stringify(got) !== JSON.stringify(want)) {
        return `${key}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`;
      }
    }
    return null;
  }

  async runStep(step: Obj): Promise<string | null> {
    const op = (this as any)[step.op];
    if (typeof op !== "function") return `unknown op ${step.op}`;
    const deadline = Date.now() + (step.wait_ms ?? 0);
    for (;;) {
      let outcome: Obj;
      try {
        outcome = await op.call(this, step);
      } catch (err) {
        outcome = failedCall(err);
      }
      const problem = this.problem(step, outcome);
      if (problem === null || Date.now() >= deadline) return problem;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async run(): Promise<number> {
    let passed = 0;
    let failed = 0;
    for (const raw of this.scenario.steps) {
      const step = JSON.parse(JSON.stringify(raw).split("$topic").join(this.topic));
      const problem = await this.runStep(step);
      if (problem === null) {
        passed++;
        console.log(`ok ${step.id}`);
      } else {
        failed++;
        console.log(`FAIL ${step.id}: ${problem}`);
      }
    }
    for (const client of this.clients.values()) client.close();
    console.log(`${passed} passed, ${failed} failed`);
    return failed === 0 ? 0 : 1;
  }
}

async function main(): Promise<number> {
  if (process.argv.length !== 3) {
    console.error("usage: conformance.js SCENARIO.json");
    return 2;
  }
  const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
  const topic = process.env.LEASEHOLD_TOPIC || `conformance-ts-${process.pid}`;
  const adminAddress = process.env.LEASEHOLD_ADMIN || "127.0.0.1:9093";
  return new Runner(scenario, topic, adminAddress).run();
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(2);
  },
);
