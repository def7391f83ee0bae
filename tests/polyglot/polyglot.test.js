// A Node.js client of Leasehold, built only from protos/ with @grpc/grpc-js and
// @grpc/proto-loader: it proves the APIs are usable from another language. It creates a topic
// through the admin service, produces to the partition leader (decoded records), reads them back
// with Fetch (RECORD_FORMAT_RECORDS), checks the health service and lists services through
// reflection. Run by tests/e2e/test_polyglot.py against a LocalCluster; LEASEHOLD_ADMIN names
// the admin service (default 127.0.0.1:9093, where `make run` puts it).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const ROOT = path.resolve(__dirname, '..', '..');
const ADMIN = process.env.LEASEHOLD_ADMIN || '127.0.0.1:9093';
const DEADLINE_MS = 20000;

const definition = protoLoader.loadSync(
  [
    'leasehold/admin/v1/admin.proto',
    'leasehold/broker/v1/broker.proto',
    'grpc/health/v1/health.proto',
    'grpc/reflection/v1alpha/reflection.proto',
  ],
  {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [path.join(ROOT, 'protos'), path.join(__dirname, 'proto')],
  },
);
const api = grpc.loadPackageDefinition(definition);
const insecure = grpc.credentials.createInsecure();

function unary(client, method, request) {
  const deadline = new Date(Date.now() + DEADLINE_MS);
  return new Promise((resolve, reject) => {
    client[method](request, { deadline }, (err, response) => (err ? reject(err) : resolve(response)));
  });
}

async function until(what, probe, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function listServices(address) {
  const client = new api.grpc.reflection.v1alpha.ServerReflection(address, insecure);
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo();
    call.on('data', (resp) => {
      call.end();
      resolve(resp.list_services_response.service.map((s) => s.name));
    });
    call.on('error', reject);
    call.write({ list_services: '' });
  });
}

async function healthOf(address, service) {
  const client = new api.grpc.health.v1.Health(address, insecure);
  return (await unary(client, 'Check', { service })).status;
}

test('admin service is healthy and lists its services through reflection', async () => {
  assert.equal(await healthOf(ADMIN, 'leasehold.admin.v1.AdminService'), 'SERVING');
  assert.equal(await healthOf(ADMIN, ''), 'SERVING');
  const services = await listServices(ADMIN);
  assert.ok(services.includes('leasehold.admin.v1.AdminService'), services.join(','));
  assert.ok(services.includes('grpc.health.v1.Health'), services.join(','));
});

test('create a topic, produce to its leader, read the records back', async () => {
  const admin = new api.leasehold.admin.v1.AdminService(ADMIN, insecure);
  const cluster = await until('three brokers and a controller', async () => {
    const c = await unary(admin, 'DescribeCluster', {});
    return c.brokers.length === 3 && c.active_controller && c.active_controller.epoch > 0 ? c : null;
  });
  const topic = `polyglot-${process.pid}-${Date.now()}`;
  const created = await unary(admin, 'CreateTopics', {
    topics: [{ name: topic, num_partitions: 2, replication_factor: 3 }],
    timeout_ms: 20000,
  });
  assert.equal(created.topics[0].error_code, 'ERROR_CODE_NONE', created.topics[0].error_message);
  assert.equal(created.topics[0].assignments.length, 2);

  const endpoints = new Map(cluster.brokers.map((b) => [b.broker_id, `${b.host}:${b.port}`]));
  const partition = await until('partition 0 to have a leader', async () => {
    const { topics } = await unary(admin, 'DescribeTopics', { topics: [topic] });
    const p = topics[0].partitions.find((x) => x.partition === 0);
    return p.leader > 0 ? p : null;
  });
  const leaderAddress = endpoints.get(partition.leader);
  const broker = new api.leasehold.broker.v1.BrokerService(leaderAddress, insecure);

  const values = ['hello', 'from', 'node'];
  const produced = await until('the leader to accept the records', async () => {
    const resp = await unary(broker, 'Produce', {
      acks: -1,
      timeout_ms: 10000,
      topics: [{
        topic,
        partitions: [{
          partition: 0,
          current_leader_epoch: -1,
          records: values.map((v, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(v) })),
        }],
      }],
    });
    const p = resp.topics[0].partitions[0];
    return p.error_code === 'ERROR_CODE_NONE' ? p : null;
  });
  assert.equal(produced.base_offset, 0);

  const records = await until('the records to be readable', async () => {
    const resp = await unary(broker, 'Fetch', {
      replica_id: -1,
      replica_broker_epoch: -1,
      max_wait_ms: 500,
      min_bytes: 1,
      max_bytes: 1 << 20,
      record_format: 'RECORD_FORMAT_RECORDS',
      topics: [{
        topic,
        partitions: [{ partition: 0, current_leader_epoch: -1, fetch_offset: 0, partition_max_bytes: 1 << 20 }],
      }],
    });
    const p = resp.topics[0].partitions[0];
    assert.equal(p.error_code, 'ERROR_CODE_NONE', p.error_message);
    return p.decoded_records.length >= values.length ? p.decoded_records : null;
  });
  assert.deepEqual(records.map((r) => r.offset), [0, 1, 2]);
  assert.deepEqual(records.map((r) => r.value.toString()), values);
  assert.deepEqual(records.map((r) => r.key.toString()), ['k0', 'k1', 'k2']);

  assert.equal(await healthOf(leaderAddress, 'leasehold.broker.v1.BrokerService'), 'SERVING');
  const brokerServices = await listServices(leaderAddress);
  assert.ok(brokerServices.includes('leasehold.broker.v1.BrokerService'), brokerServices.join(','));
});
