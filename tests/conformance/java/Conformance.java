// The conformance scenario (tests/conformance/README.md) with grpc-java and the Java code protoc
// and protoc-gen-grpc-java generated into libs/java (make clients). A single-file program:
//
//   java -cp 'libs/java/target/classes:libs/java/target/lib/*' \
//       tests/conformance/java/Conformance.java tests/conformance/scenario.json

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.protobuf.util.JsonFormat;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.StreamObserver;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import leasehold.admin.v1.AdminServiceGrpc;
import leasehold.admin.v1.CreatableTopic;
import leasehold.admin.v1.CreateTopicsRequest;
import leasehold.admin.v1.DeleteTopicsRequest;
import leasehold.admin.v1.DescribeClusterRequest;
import leasehold.admin.v1.DescribeTopicsRequest;
import leasehold.broker.v1.BrokerServiceGrpc;
import leasehold.broker.v1.FetchPartition;
import leasehold.broker.v1.FetchRequest;
import leasehold.broker.v1.FetchTopic;
import leasehold.broker.v1.PartitionProduceData;
import leasehold.broker.v1.ProduceRequest;
import leasehold.broker.v1.Record;
import leasehold.broker.v1.RecordFormat;
import leasehold.broker.v1.TopicProduceData;
import leasehold.common.v1.ErrorCode;
import leasehold.group.v1.Assignment;
import leasehold.group.v1.ConsumerGroupHeartbeatRequest;
import leasehold.group.v1.FindCoordinatorRequest;
import leasehold.group.v1.GroupServiceGrpc;
import leasehold.group.v1.OffsetCommitPartition;
import leasehold.group.v1.OffsetCommitRequest;
import leasehold.group.v1.OffsetCommitTopic;
import leasehold.group.v1.OffsetFetchRequest;
import leasehold.group.v1.OffsetFetchTopic;
import leasehold.group.v1.Subscription;
import leasehold.group.v1.TopicPartitions;

public final class Conformance {
  private static final long DEADLINE_S = 60;

  private record Leader(int id, int epoch, List<Integer> replicas) {}

  private final Map<String, Object> scenario;
  private final String topic;
  private final String admin;
  private final ChannelCredentials creds;
  private final Map<String, ManagedChannel> channels = new HashMap<>();
  private final Map<Integer, String> brokers = new HashMap<>();
  private final Map<Integer, Leader> leaders = new HashMap<>();
  // The consumer group steps: the group's coordinator and what the last heartbeat gave.
  private String coordinator = "";
  private String memberId = "";
  private int memberEpoch = 0;
  private List<TopicPartitions> owned = List.of();

  Conformance(Map<String, Object> scenario, String topic, String admin, ChannelCredentials creds) {
    this.scenario = scenario;
    this.topic = topic;
    this.admin = admin;
    this.creds = creds;
  }

  // --- plumbing ------------------------------------------------------------------------------

  static ChannelCredentials credentials() throws Exception {
    String ca = System.getenv("LEASEHOLD_TLS_CA");
    if (ca == null || ca.isEmpty()) {
      return InsecureChannelCredentials.create();
    }
    TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder().trustManager(new File(ca));
    String cert = System.getenv("LEASEHOLD_TLS_CERT");
    if (cert != null && !cert.isEmpty()) {
      tls.keyManager(new File(cert), new File(System.getenv("LEASEHOLD_TLS_KEY")));
    }
    return tls.build();
  }

  /** JSON values as plain Java: maps, lists, doubles, strings, booleans. */
  static Object plain(Value v) {
    return switch (v.getKindCase()) {
      case STRUCT_VALUE -> plainMap(v.getStructValue());
      case LIST_VALUE -> {
        List<Object> out = new ArrayList<>();
        v.getListValue().getValuesList().forEach(e -> out.add(plain(e)));
        yield out;
      }
      case NUMBER_VALUE -> v.getNumberValue();
      case STRING_VALUE -> v.getStringValue();
      case BOOL_VALUE -> v.getBoolValue();
      default -> null;
    };
  }

  static Map<String, Object> plainMap(Struct s) {
    Map<String, Object> out = new LinkedHashMap<>();
    s.getFieldsMap().forEach((k, v) -> out.put(k, plain(v)));
    return out;
  }

  @SuppressWarnings("unchecked")
  static Object subst(Object v, String topic) {
    if (v instanceof String s) {
      return s.replace("$topic", topic);
    }
    if (v instanceof List<?> l) {
      List<Object> out = new ArrayList<>();
      l.forEach(e -> out.add(subst(e, topic)));
      return out;
    }
    if (v instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      ((Map<String, Object>) m).forEach((k, e) -> out.put(k, subst(e, topic)));
      return out;
    }
    return v;
  }

  /** Numbers as doubles, as the scenario's JSON has them, so outcomes compare with equals. */
  static Object normal(Object v) {
    if (v instanceof Number n) {
      return n.doubleValue();
    }
    if (v instanceof List<?> l) {
      List<Object> out = new ArrayList<>();
      l.forEach(e -> out.add(normal(e)));
      return out;
    }
    if (v instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      m.forEach((k, e) -> out.put((String) k, normal(e)));
      return out;
    }
    return v;
  }

  static int num(Object v) {
    return ((Double) v).intValue();
  }

  static String errorName(ErrorCode code) {
    return code.name().replaceFirst("^ERROR_CODE_", "");
  }

  static String b64(ByteString data) {
    return Base64.getEncoder().encodeToString(data.toByteArray());
  }

  ManagedChannel channel(String address) {
    return channels.computeIfAbsent(address, a -> Grpc.newChannelBuilder(a, creds).build());
  }

  String address(Map<String, Object> step) {
    if ("admin".equals(step.get("target"))) {
      return admin;
    }
    Leader leader = leaders.get(num(step.get("partition")));
    if (leader == null) {
      throw new IllegalStateException("no leader known for that partition");
    }
    if ("leader".equals(step.get("target"))) {
      return brokers.get(leader.id());
    }
    for (int replica : leader.replicas()) {
      if (replica != leader.id()) {
        return brokers.get(replica);
      }
    }
    throw new IllegalStateException("the partition has no follower");
  }

  AdminServiceGrpc.AdminServiceBlockingStub adminStub() {
    return AdminServiceGrpc.newBlockingStub(channel(admin)).withDeadlineAfter(DEADLINE_S, TimeUnit.SECONDS);
  }

  BrokerServiceGrpc.BrokerServiceBlockingStub brokerStub(Map<String, Object> step) {
    return BrokerServiceGrpc.newBlockingStub(channel(address(step)))
        .withDeadlineAfter(DEADLINE_S, TimeUnit.SECONDS);
  }

  /** What a failed call carries: its status and the google.rpc.Status details of its trailer. */
  static Map<String, Object> failedCall(StatusRuntimeException e) throws InvalidProtocolBufferException {
    Map<String, Object> out = new HashMap<>();
    out.put("status", e.getStatus().getCode().name());
    out.put("message", e.getStatus().getDescription());
    com.google.rpc.Status rich = StatusProto.fromThrowable(e);
    if (rich != null) {
      for (com.google.protobuf.Any detail : rich.getDetailsList()) {
        if (detail.is(ErrorInfo.class)) {
          ErrorInfo info = detail.unpack(ErrorInfo.class);
          out.put("reason", info.getReason());
          out.put("domain", info.getDomain());
          out.put("error_code", Double.parseDouble(info.getMetadataOrDefault("error_code", "NaN")));
        } else if (detail.is(BadRequest.class)) {
          BadRequest bad = detail.unpack(BadRequest.class);
          if (bad.getFieldViolationsCount() > 0) {
            out.put("field", bad.getFieldViolations(0).getField());
          }
        }
      }
    }
    return out;
  }

  // --- ops -----------------------------------------------------------------------------------

  Map<String, Object> health(Map<String, Object> step) {
    var reply = HealthGrpc.newBlockingStub(channel(address(step)))
        .withDeadlineAfter(DEADLINE_S, TimeUnit.SECONDS)
        .check(HealthCheckRequest.newBuilder().setService((String) step.get("service")).build());
    return Map.of("serving", reply.getStatus().name());
  }

  Map<String, Object> reflectionList(Map<String, Object> step) throws Exception {
    ManagedChannel ch = channel(address(step));
    CompletableFuture<List<Object>> names = new CompletableFuture<>();
    if ("v1".equals(step.get("version"))) {
      var replies = new StreamObserver<io.grpc.reflection.v1.ServerReflectionResponse>() {
        public void onNext(io.grpc.reflection.v1.ServerReflectionResponse r) {
          List<Object> out = new ArrayList<>();
          r.getListServicesResponse().getServiceList().forEach(s -> out.add(s.getName()));
          names.complete(out);
        }
        public void onError(Throwable t) { names.completeExceptionally(t); }
        public void onCompleted() {}
      };
      var requests = io.grpc.reflection.v1.ServerReflectionGrpc.newStub(ch).serverReflectionInfo(replies);
      requests.onNext(io.grpc.reflection.v1.ServerReflectionRequest.newBuilder().setListServices("").build());
      List<Object> got = names.get(DEADLINE_S, TimeUnit.SECONDS);
      requests.onCompleted();
      return Map.of("services", got);
    }
    var replies = new StreamObserver<io.grpc.reflection.v1alpha.ServerReflectionResponse>() {
      public void onNext(io.grpc.reflection.v1alpha.ServerReflectionResponse r) {
        List<Object> out = new ArrayList<>();
        r.getListServicesResponse().getServiceList().forEach(s -> out.add(s.getName()));
        names.complete(out);
      }
      public void onError(Throwable t) { names.completeExceptionally(t); }
      public void onCompleted() {}
    };
    var requests = io.grpc.reflection.v1alpha.ServerReflectionGrpc.newStub(ch).serverReflectionInfo(replies);
    requests.onNext(io.grpc.reflection.v1alpha.ServerReflectionRequest.newBuilder().setListServices("").build());
    List<Object> got = names.get(DEADLINE_S, TimeUnit.SECONDS);
    requests.onCompleted();
    return Map.of("services", got);
  }

  Map<String, Object> describeCluster(Map<String, Object> step) {
    var reply = adminStub().describeCluster(DescribeClusterRequest.getDefaultInstance());
    reply.getBrokersList().forEach(b -> brokers.put(b.getBrokerId(), b.getHost() + ":" + b.getPort()));
    return Map.of("brokers", reply.getBrokersCount(), "controller", reply.hasActiveController());
  }

  @SuppressWarnings("unchecked")
  Map<String, Object> createTopics(Map<String, Object> step) {
    var request = CreateTopicsRequest.newBuilder().setTimeoutMs(num(step.get("timeout_ms")));
    for (Object raw : (List<Object>) step.get("topics")) {
      Map<String, Object> t = (Map<String, Object>) raw;
      var topic = CreatableTopic.newBuilder().setName((String) t.get("name"));
      if (t.containsKey("partitions")) { // absent: the cluster default
        topic.setNumPartitions(num(t.get("partitions")));
      }
      if (t.containsKey("replication_factor")) {
        topic.setReplicationFactor(num(t.get("replication_factor")));
      }
      request.addTopics(topic);
    }
    var reply = adminStub().createTopics(request.build());
    List<Object> results = new ArrayList<>();
    reply.getTopicsList().forEach(r -> results.add(Map.of("name", r.getName(), "error", errorName(r.getErrorCode()))));
    return Map.of("results", results);
  }

  @SuppressWarnings("unchecked")
  Map<String, Object> deleteTopics(Map<String, Object> step) {
    var reply = adminStub().deleteTopics(DeleteTopicsRequest.newBuilder()
        .addAllTopicNames((List<String>) (List<?>) step.get("topics"))
        .setTimeoutMs(num(step.get("timeout_ms")))
        .build());
    List<Object> results = new ArrayList<>();
    reply.getTopicsList().forEach(r -> results.add(Map.of("name", r.getName(), "error", errorName(r.getErrorCode()))));
    return Map.of("results", results);
  }

  @SuppressWarnings("unchecked")
  Map<String, Object> describeTopics(Map<String, Object> step) {
    var reply = adminStub().describeTopics(
        DescribeTopicsRequest.newBuilder().addAllTopics((List<String>) (List<?>) step.get("topics")).build());
    List<Object> topics = new ArrayList<>();
    reply.getTopicsList().forEach(t -> topics.add(Map.of(
        "name", t.getName(),
        "partitions", t.getPartitionsCount(),
        "replication_factor", t.getPartitionsCount() > 0 ? t.getPartitions(0).getReplicasCount() : 0)));
    return Map.of("topics", topics);
  }

  Map<String, Object> findLeaders(Map<String, Object> step) {
    var reply = adminStub().describeTopics(
        DescribeTopicsRequest.newBuilder().addTopics((String) step.get("topic")).build());
    leaders.clear();
    reply.getTopics(0).getPartitionsList().forEach(p -> {
      if (p.getLeader() >= 0) {
        leaders.put(p.getPartition(), new Leader(p.getLeader(), p.getLeaderEpoch(), p.getReplicasList()));
      }
    });
    return Map.of("partitions", leaders.size());
  }

  @SuppressWarnings("unchecked")
  Map<String, Object> produce(Map<String, Object> step) {
    var partition = PartitionProduceData.newBuilder().setPartition(num(step.get("partition")));
    for (Object raw : (List<Object>) scenario.get("records")) {
      Map<String, Object> r = (Map<String, Object>) raw;
      var record = Record.newBuilder();
      if (r.containsKey("key")) { // an absent key stays absent (a null key, as Kafka's)
        record.setKey(ByteString.copyFrom(Base64.getDecoder().decode((String) r.get("key"))));
      }
      if (r.containsKey("value")) {
        record.setValue(ByteString.copyFrom(Base64.getDecoder().decode((String) r.get("value"))));
      }
      partition.addRecords(record);
    }
    // No current_leader_epoch: absent is "not checked".
    var reply = brokerStub(step).produce(ProduceRequest.newBuilder()
        .setAcks(num(step.get("acks")))
        .setTimeoutMs(10000)
        .addTopics(TopicProduceData.newBuilder().setTopic((String) step.get("topic")).addPartitions(partition))
        .build());
    var p = reply.getTopics(0).getPartitions(0);
    Map<String, Object> out = new HashMap<>();
    out.put("error", errorName(p.getErrorCode()));
    out.put("base_offset", p.getBaseOffset());
    if (p.hasCurrentLeader()) {
      out.put("current_leader", p.getCurrentLeader().getLeaderId());
    }
    return out;
  }

  Map<String, Object> fetch(Map<String, Object> step) {
    var partition = FetchPartition.newBuilder()
        .setPartition(num(step.get("partition")))
        .setFetchOffset(num(step.get("offset")))
        .setPartitionMaxBytes(1 << 20);
    if ("leader_epoch".equals(step.get("current_leader_epoch"))) {
      partition.setCurrentLeaderEpoch(leaders.get(partition.getPartition()).epoch());
    }
    var request = FetchRequest.newBuilder() // no replica_id: absent is a consumer
        .setMaxWaitMs(500)
        .setMinBytes(1)
        .setMaxBytes(1 << 20)
        .addTopics(FetchTopic.newBuilder().setTopic((String) step.get("topic")).addPartitions(partition));
    Object format = step.get("record_format");
    if (format instanceof String name) {
      request.setRecordFormat(RecordFormat.valueOf("RECORD_FORMAT_" + name));
    } else {
      request.setRecordFormatValue(num(format));
    }
    var reply = brokerStub(step).fetch(request.build());
    var p = reply.getTopics(0).getPartitions(0);
    List<Object> records = new ArrayList<>();
    for (Record r : p.getDecodedRecordsList()) {
      Map<String, Object> got = new LinkedHashMap<>();
      if (r.hasKey()) {
        got.put("key", b64(r.getKey()));
      }
      if (r.hasValue()) {
        got.put("value", b64(r.getValue()));
      }
      records.add(got);
    }
    return Map.of("error", errorName(p.getErrorCode()), "records", records);
  }

  GroupServiceGrpc.GroupServiceBlockingStub groupStub(String address) {
    if (address.isEmpty()) {
      throw new IllegalStateException("no coordinator known");
    }
    return GroupServiceGrpc.newBlockingStub(channel(address)).withDeadlineAfter(DEADLINE_S, TimeUnit.SECONDS);
  }

  Map<String, Object> findCoordinator(Map<String, Object> step) {
    int first = brokers.keySet().stream().min(Integer::compare).orElseThrow();
    var reply = groupStub(brokers.get(first)).findCoordinator(
        FindCoordinatorRequest.newBuilder().addGroupIds((String) step.get("group")).build());
    var c = reply.getCoordinators(0);
    if (c.getErrorCode() == ErrorCode.ERROR_CODE_NONE) {
      coordinator = c.getHost() + ":" + c.getPort();
    }
    return Map.of("error", errorName(c.getErrorCode()));
  }

  Map<String, Object> groupHeartbeat(Map<String, Object> step) {
    var request = ConsumerGroupHeartbeatRequest.newBuilder()
        .setGroupId((String) step.get("group"))
        .setMemberId(memberId)
        .setMemberEpoch(memberEpoch);
    if (Boolean.TRUE.equals(step.get("leave"))) {
      request.setMemberEpoch(-1);
    } else if (memberEpoch == 0) {
      request.setSubscription(Subscription.newBuilder().addTopicNames((String) step.get("topic")));
      request.setOwned(Assignment.getDefaultInstance());
    } else {
      request.setOwned(Assignment.newBuilder().addAllTopicPartitions(owned));
    }
    var reply = groupStub(coordinator).consumerGroupHeartbeat(request.build());
    if (reply.hasAssignment()) {
      owned = reply.getAssignment().getTopicPartitionsList();
    }
    memberId = reply.getMemberId();
    memberEpoch = Math.max(reply.getMemberEpoch(), 0);
    int assigned = owned.stream().mapToInt(TopicPartitions::getPartitionsCount).sum();
    return Map.of("assigned", assigned, "member_epoch", reply.getMemberEpoch());
  }

  Map<String, Object> offsetCommit(Map<String, Object> step) {
    Object wanted = step.get("member_epoch");
    int epoch = "current".equals(wanted) ? memberEpoch : num(wanted);
    var partition = OffsetCommitPartition.newBuilder()
        .setPartition(num(step.get("partition")))
        .setCommittedOffset(num(step.get("offset")));
    var reply = groupStub(coordinator).offsetCommit(OffsetCommitRequest.newBuilder()
        .setGroupId((String) step.get("group"))
        .setMemberId(memberId)
        .setMemberEpoch(epoch)
        .addTopics(OffsetCommitTopic.newBuilder().setTopic((String) step.get("topic")).addPartitions(partition))
        .build());
    return Map.of("error", errorName(reply.getTopics(0).getPartitions(0).getErrorCode()));
  }

  Map<String, Object> offsetFetch(Map<String, Object> step) {
    var reply = groupStub(coordinator).offsetFetch(OffsetFetchRequest.newBuilder()
        .setGroupId((String) step.get("group"))
        .addTopics(OffsetFetchTopic.newBuilder()
            .setTopic((String) step.get("topic"))
            .addPartitions(num(step.get("partition"))))
        .build());
    var p = reply.getTopics(0).getPartitions(0);
    return Map.of("error", errorName(p.getErrorCode()), "offset", p.getCommittedOffset());
  }

  // --- expectations --------------------------------------------------------------------------

  @SuppressWarnings("unchecked")
  String problem(Map<String, Object> step, Map<String, Object> outcome) {
    Map<String, Object> expect = (Map<String, Object>) step.get("expect");
    if (expect.containsKey("status") && !outcome.containsKey("status")) {
      return "expected the call to fail with " + expect.get("status") + ", it succeeded: " + outcome;
    }
    if (!expect.containsKey("status") && outcome.containsKey("status")) {
      return "the call failed: " + outcome.get("status") + " " + outcome.get("message");
    }
    Map<String, Object> got = (Map<String, Object>) normal(outcome);
    for (var e : expect.entrySet()) {
      String key = e.getKey();
      Object want = e.getValue();
      if (key.equals("includes")) {
        for (Object name : (List<Object>) want) {
          if (!((List<Object>) got.get("services")).contains(name)) {
            return "reflection lists " + got.get("services") + ", not " + name;
          }
        }
      } else if (key.equals("records") && "records".equals(want)) {
        if (!Objects.equals(got.get("records"), scenario.get("records"))) {
          return "fetched " + got.get("records") + ", produced " + scenario.get("records");
        }
      } else if (key.equals("current_leader") && "leader".equals(want)) {
        double leader = leaders.get(num(step.get("partition"))).id();
        if (!Objects.equals(got.get("current_leader"), leader)) {
          return "current_leader " + got.get("current_leader") + ", the leader is " + leader;
        }
      } else if (!Objects.equals(got.get(key), want)) {
        return key + ": expected " + want + ", got " + got.get(key);
      }
    }
    return null;
  }

  Map<String, Object> call(Map<String, Object> step) throws Exception {
    return switch ((String) step.get("op")) {
      case "health" -> health(step);
      case "reflection_list" -> reflectionList(step);
      case "describe_cluster" -> describeCluster(step);
      case "create_topics" -> createTopics(step);
      case "delete_topics" -> deleteTopics(step);
      case "describe_topics" -> describeTopics(step);
      case "find_leaders" -> findLeaders(step);
      case "produce" -> produce(step);
      case "fetch" -> fetch(step);
      case "find_coordinator" -> findCoordinator(step);
      case "group_heartbeat" -> groupHeartbeat(step);
      case "offset_commit" -> offsetCommit(step);
      case "offset_fetch" -> offsetFetch(step);
      default -> throw new IllegalArgumentException("unknown op " + step.get("op"));
    };
  }

  String runStep(Map<String, Object> step) throws Exception {
    Object wait = step.get("wait_ms");
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(wait == null ? 0 : num(wait));
    for (;;) {
      Map<String, Object> outcome;
      try {
        outcome = call(step);
      } catch (StatusRuntimeException e) {
        outcome = failedCall(e);
      } catch (Exception e) {
        Throwable cause = e.getCause() instanceof StatusRuntimeException s ? s : e;
        outcome = cause instanceof StatusRuntimeException s
            ? failedCall(s)
            : new HashMap<>(Map.of("status", "RUNNER", "message", String.valueOf(e)));
      }
      String problem = problem(step, outcome);
      if (problem == null || System.nanoTime() >= deadline) {
        return problem;
      }
      Thread.sleep(200);
    }
  }

  @SuppressWarnings("unchecked")
  int run() throws Exception {
    int passed = 0;
    int failed = 0;
    for (Object raw : (List<Object>) scenario.get("steps")) {
      Map<String, Object> step = (Map<String, Object>) subst(raw, topic);
      String problem = runStep(step);
      if (problem == null) {
        passed++;
        System.out.println("ok " + step.get("id"));
      } else {
        failed++;
        System.out.println("FAIL " + step.get("id") + ": " + problem);
      }
    }
    for (ManagedChannel ch : channels.values()) {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    System.out.println(passed + " passed, " + failed + " failed");
    return failed == 0 ? 0 : 1;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: Conformance SCENARIO.json");
      System.exit(2);
    }
    Struct.Builder parsed = Struct.newBuilder();
    JsonFormat.parser().merge(Files.readString(Path.of(args[0])), parsed);
    String topic = System.getenv().getOrDefault("LEASEHOLD_TOPIC", "");
    if (topic.isEmpty()) {
      topic = "conformance-java-" + ProcessHandle.current().pid();
    }
    String admin = System.getenv().getOrDefault("LEASEHOLD_ADMIN", "");
    if (admin.isEmpty()) {
      admin = "127.0.0.1:9093";
    }
    System.exit(new Conformance(plainMap(parsed.build()), topic, admin, credentials()).run());
  }
}
