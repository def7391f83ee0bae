package leasehold.group.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * GroupService is served by every broker agent. A consumer group has one coordinator: the
 * leader of partition abs(java_hash(group_id)) % n of the internal topic __consumer_offsets
 * (Kafka's rule), found with FindCoordinator on any broker. Every other call goes to the
 * coordinator; a call that reaches another broker fails with NOT_COORDINATOR (UNAVAILABLE):
 * find the coordinator again and retry. The group protocol is Kafka's KIP-848: members send
 * ConsumerGroupHeartbeat, the coordinator computes the assignment.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class GroupServiceGrpc {

  private GroupServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "leasehold.group.v1.GroupService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<leasehold.group.v1.FindCoordinatorRequest,
      leasehold.group.v1.FindCoordinatorResponse> getFindCoordinatorMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "FindCoordinator",
      requestType = leasehold.group.v1.FindCoordinatorRequest.class,
      responseType = leasehold.group.v1.FindCoordinatorResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.group.v1.FindCoordinatorRequest,
      leasehold.group.v1.FindCoordinatorResponse> getFindCoordinatorMethod() {
    io.grpc.MethodDescriptor<leasehold.group.v1.FindCoordinatorRequest, leasehold.group.v1.FindCoordinatorResponse> getFindCoordinatorMethod;
    if ((getFindCoordinatorMethod = GroupServiceGrpc.getFindCoordinatorMethod) == null) {
      synchronized (GroupServiceGrpc.class) {
        if ((getFindCoordinatorMethod = GroupServiceGrpc.getFindCoordinatorMethod) == null) {
          GroupServiceGrpc.getFindCoordinatorMethod = getFindCoordinatorMethod =
              io.grpc.MethodDescriptor.<leasehold.group.v1.FindCoordinatorRequest, leasehold.group.v1.FindCoordinatorResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "FindCoordinator"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.FindCoordinatorRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.FindCoordinatorResponse.getDefaultInstance()))
              .setSchemaDescriptor(new GroupServiceMethodDescriptorSupplier("FindCoordinator"))
              .build();
        }
      }
    }
    return getFindCoordinatorMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.group.v1.ConsumerGroupHeartbeatRequest,
      leasehold.group.v1.ConsumerGroupHeartbeatResponse> getConsumerGroupHeartbeatMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ConsumerGroupHeartbeat",
      requestType = leasehold.group.v1.ConsumerGroupHeartbeatRequest.class,
      responseType = leasehold.group.v1.ConsumerGroupHeartbeatResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.group.v1.ConsumerGroupHeartbeatRequest,
      leasehold.group.v1.ConsumerGroupHeartbeatResponse> getConsumerGroupHeartbeatMethod() {
    io.grpc.MethodDescriptor<leasehold.group.v1.ConsumerGroupHeartbeatRequest, leasehold.group.v1.ConsumerGroupHeartbeatResponse> getConsumerGroupHeartbeatMethod;
    if ((getConsumerGroupHeartbeatMethod = GroupServiceGrpc.getConsumerGroupHeartbeatMethod) == null) {
      synchronized (GroupServiceGrpc.class) {
        if ((getConsumerGroupHeartbeatMethod = GroupServiceGrpc.getConsumerGroupHeartbeatMethod) == null) {
          GroupServiceGrpc.getConsumerGroupHeartbeatMethod = getConsumerGroupHeartbeatMethod =
              io.grpc.MethodDescriptor.<leasehold.group.v1.ConsumerGroupHeartbeatRequest, leasehold.group.v1.ConsumerGroupHeartbeatResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ConsumerGroupHeartbeat"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.ConsumerGroupHeartbeatRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.ConsumerGroupHeartbeatResponse.getDefaultInstance()))
              .setSchemaDescriptor(new GroupServiceMethodDescriptorSupplier("ConsumerGroupHeartbeat"))
              .build();
        }
      }
    }
    return getConsumerGroupHeartbeatMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.group.v1.OffsetCommitRequest,
      leasehold.group.v1.OffsetCommitResponse> getOffsetCommitMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "OffsetCommit",
      requestType = leasehold.group.v1.OffsetCommitRequest.class,
      responseType = leasehold.group.v1.OffsetCommitResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.group.v1.OffsetCommitRequest,
      leasehold.group.v1.OffsetCommitResponse> getOffsetCommitMethod() {
    io.grpc.MethodDescriptor<leasehold.group.v1.OffsetCommitRequest, leasehold.group.v1.OffsetCommitResponse> getOffsetCommitMethod;
    if ((getOffsetCommitMethod = GroupServiceGrpc.getOffsetCommitMethod) == null) {
      synchronized (GroupServiceGrpc.class) {
        if ((getOffsetCommitMethod = GroupServiceGrpc.getOffsetCommitMethod) == null) {
          GroupServiceGrpc.getOffsetCommitMethod = getOffsetCommitMethod =
              io.grpc.MethodDescriptor.<leasehold.group.v1.OffsetCommitRequest, leasehold.group.v1.OffsetCommitResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "OffsetCommit"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.OffsetCommitRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.OffsetCommitResponse.getDefaultInstance()))
              .setSchemaDescriptor(new GroupServiceMethodDescriptorSupplier("OffsetCommit"))
              .build();
        }
      }
    }
    return getOffsetCommitMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.group.v1.OffsetFetchRequest,
      leasehold.group.v1.OffsetFetchResponse> getOffsetFetchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "OffsetFetch",
      requestType = leasehold.group.v1.OffsetFetchRequest.class,
      responseType = leasehold.group.v1.OffsetFetchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.group.v1.OffsetFetchRequest,
      leasehold.group.v1.OffsetFetchResponse> getOffsetFetchMethod() {
    io.grpc.MethodDescriptor<leasehold.group.v1.OffsetFetchRequest, leasehold.group.v1.OffsetFetchResponse> getOffsetFetchMethod;
    if ((getOffsetFetchMethod = GroupServiceGrpc.getOffsetFetchMethod) == null) {
      synchronized (GroupServiceGrpc.class) {
        if ((getOffsetFetchMethod = GroupServiceGrpc.getOffsetFetchMethod) == null) {
          GroupServiceGrpc.getOffsetFetchMethod = getOffsetFetchMethod =
              io.grpc.MethodDescriptor.<leasehold.group.v1.OffsetFetchRequest, leasehold.group.v1.OffsetFetchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "OffsetFetch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.OffsetFetchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.OffsetFetchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new GroupServiceMethodDescriptorSupplier("OffsetFetch"))
              .build();
        }
      }
    }
    return getOffsetFetchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.group.v1.ListGroupsRequest,
      leasehold.group.v1.ListGroupsResponse> getListGroupsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListGroups",
      requestType = leasehold.group.v1.ListGroupsRequest.class,
      responseType = leasehold.group.v1.ListGroupsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.group.v1.ListGroupsRequest,
      leasehold.group.v1.ListGroupsResponse> getListGroupsMethod() {
    io.grpc.MethodDescriptor<leasehold.group.v1.ListGroupsRequest, leasehold.group.v1.ListGroupsResponse> getListGroupsMethod;
    if ((getListGroupsMethod = GroupServiceGrpc.getListGroupsMethod) == null) {
      synchronized (GroupServiceGrpc.class) {
        if ((getListGroupsMethod = GroupServiceGrpc.getListGroupsMethod) == null) {
          GroupServiceGrpc.getListGroupsMethod = getListGroupsMethod =
              io.grpc.MethodDescriptor.<leasehold.group.v1.ListGroupsRequest, leasehold.group.v1.ListGroupsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListGroups"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.ListGroupsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.ListGroupsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new GroupServiceMethodDescriptorSupplier("ListGroups"))
              .build();
        }
      }
    }
    return getListGroupsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.group.v1.DescribeGroupsRequest,
      leasehold.group.v1.DescribeGroupsResponse> getDescribeGroupsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DescribeGroups",
      requestType = leasehold.group.v1.DescribeGroupsRequest.class,
      responseType = leasehold.group.v1.DescribeGroupsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.group.v1.DescribeGroupsRequest,
      leasehold.group.v1.DescribeGroupsResponse> getDescribeGroupsMethod() {
    io.grpc.MethodDescriptor<leasehold.group.v1.DescribeGroupsRequest, leasehold.group.v1.DescribeGroupsResponse> getDescribeGroupsMethod;
    if ((getDescribeGroupsMethod = GroupServiceGrpc.getDescribeGroupsMethod) == null) {
      synchronized (GroupServiceGrpc.class) {
        if ((getDescribeGroupsMethod = GroupServiceGrpc.getDescribeGroupsMethod) == null) {
          GroupServiceGrpc.getDescribeGroupsMethod = getDescribeGroupsMethod =
              io.grpc.MethodDescriptor.<leasehold.group.v1.DescribeGroupsRequest, leasehold.group.v1.DescribeGroupsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DescribeGroups"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.DescribeGroupsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.DescribeGroupsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new GroupServiceMethodDescriptorSupplier("DescribeGroups"))
              .build();
        }
      }
    }
    return getDescribeGroupsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<leasehold.group.v1.DeleteGroupsRequest,
      leasehold.group.v1.DeleteGroupsResponse> getDeleteGroupsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DeleteGroups",
      requestType = leasehold.group.v1.DeleteGroupsRequest.class,
      responseType = leasehold.group.v1.DeleteGroupsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<leasehold.group.v1.DeleteGroupsRequest,
      leasehold.group.v1.DeleteGroupsResponse> getDeleteGroupsMethod() {
    io.grpc.MethodDescriptor<leasehold.group.v1.DeleteGroupsRequest, leasehold.group.v1.DeleteGroupsResponse> getDeleteGroupsMethod;
    if ((getDeleteGroupsMethod = GroupServiceGrpc.getDeleteGroupsMethod) == null) {
      synchronized (GroupServiceGrpc.class) {
        if ((getDeleteGroupsMethod = GroupServiceGrpc.getDeleteGroupsMethod) == null) {
          GroupServiceGrpc.getDeleteGroupsMethod = getDeleteGroupsMethod =
              io.grpc.MethodDescriptor.<leasehold.group.v1.DeleteGroupsRequest, leasehold.group.v1.DeleteGroupsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DeleteGroups"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.DeleteGroupsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  leasehold.group.v1.DeleteGroupsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new GroupServiceMethodDescriptorSupplier("DeleteGroups"))
              .build();
        }
      }
    }
    return getDeleteGroupsMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static GroupServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<GroupServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<GroupServiceStub>() {
        @java.lang.Override
        public GroupServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new GroupServiceStub(channel, callOptions);
        }
      };
    return GroupServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static GroupServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<GroupServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<GroupServiceBlockingV2Stub>() {
        @java.lang.Override
        public GroupServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new GroupServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return GroupServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static GroupServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<GroupServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<GroupServiceBlockingStub>() {
        @java.lang.Override
        public GroupServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new GroupServiceBlockingStub(channel, callOptions);
        }
      };
    return GroupServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static GroupServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<GroupServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<GroupServiceFutureStub>() {
        @java.lang.Override
        public GroupServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new GroupServiceFutureStub(channel, callOptions);
        }
      };
    return GroupServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * GroupService is served by every broker agent. A consumer group has one coordinator: the
   * leader of partition abs(java_hash(group_id)) % n of the internal topic __consumer_offsets
   * (Kafka's rule), found with FindCoordinator on any broker. Every other call goes to the
   * coordinator; a call that reaches another broker fails with NOT_COORDINATOR (UNAVAILABLE):
   * find the coordinator again and retry. The group protocol is Kafka's KIP-848: members send
   * ConsumerGroupHeartbeat, the coordinator computes the assignment.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Where the coordinator of each group is. Creates __consumer_offsets on first use.
     * </pre>
     */
    default void findCoordinator(leasehold.group.v1.FindCoordinatorRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.FindCoordinatorResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getFindCoordinatorMethod(), responseObserver);
    }

    /**
     * <pre>
     * Join, stay in, or leave a consumer group, and learn the member's assignment.
     * </pre>
     */
    default void consumerGroupHeartbeat(leasehold.group.v1.ConsumerGroupHeartbeatRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.ConsumerGroupHeartbeatResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getConsumerGroupHeartbeatMethod(), responseObserver);
    }

    /**
     * <pre>
     * Commit offsets of a group (acks=all: answered once every in-sync replica has them).
     * </pre>
     */
    default void offsetCommit(leasehold.group.v1.OffsetCommitRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.OffsetCommitResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getOffsetCommitMethod(), responseObserver);
    }

    /**
     * <pre>
     * The offsets a group committed.
     * </pre>
     */
    default void offsetFetch(leasehold.group.v1.OffsetFetchRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.OffsetFetchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getOffsetFetchMethod(), responseObserver);
    }

    /**
     * <pre>
     * The groups this broker coordinates.
     * </pre>
     */
    default void listGroups(leasehold.group.v1.ListGroupsRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.ListGroupsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListGroupsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Members, epochs and assignments of groups this broker coordinates.
     * </pre>
     */
    default void describeGroups(leasehold.group.v1.DescribeGroupsRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.DescribeGroupsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDescribeGroupsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Delete empty groups and their committed offsets.
     * </pre>
     */
    default void deleteGroups(leasehold.group.v1.DeleteGroupsRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.DeleteGroupsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteGroupsMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service GroupService.
   * <pre>
   * GroupService is served by every broker agent. A consumer group has one coordinator: the
   * leader of partition abs(java_hash(group_id)) % n of the internal topic __consumer_offsets
   * (Kafka's rule), found with FindCoordinator on any broker. Every other call goes to the
   * coordinator; a call that reaches another broker fails with NOT_COORDINATOR (UNAVAILABLE):
   * find the coordinator again and retry. The group protocol is Kafka's KIP-848: members send
   * ConsumerGroupHeartbeat, the coordinator computes the assignment.
   * </pre>
   */
  public static abstract class GroupServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return GroupServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service GroupService.
   * <pre>
   * GroupService is served by every broker agent. A consumer group has one coordinator: the
   * leader of partition abs(java_hash(group_id)) % n of the internal topic __consumer_offsets
   * (Kafka's rule), found with FindCoordinator on any broker. Every other call goes to the
   * coordinator; a call that reaches another broker fails with NOT_COORDINATOR (UNAVAILABLE):
   * find the coordinator again and retry. The group protocol is Kafka's KIP-848: members send
   * ConsumerGroupHeartbeat, the coordinator computes the assignment.
   * </pre>
   */
  public static final class GroupServiceStub
      extends io.grpc.stub.AbstractAsyncStub<GroupServiceStub> {
    private GroupServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected GroupServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new GroupServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Where the coordinator of each group is. Creates __consumer_offsets on first use.
     * </pre>
     */
    public void findCoordinator(leasehold.group.v1.FindCoordinatorRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.FindCoordinatorResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getFindCoordinatorMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Join, stay in, or leave a consumer group, and learn the member's assignment.
     * </pre>
     */
    public void consumerGroupHeartbeat(leasehold.group.v1.ConsumerGroupHeartbeatRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.ConsumerGroupHeartbeatResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getConsumerGroupHeartbeatMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Commit offsets of a group (acks=all: answered once every in-sync replica has them).
     * </pre>
     */
    public void offsetCommit(leasehold.group.v1.OffsetCommitRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.OffsetCommitResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getOffsetCommitMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * The offsets a group committed.
     * </pre>
     */
    public void offsetFetch(leasehold.group.v1.OffsetFetchRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.OffsetFetchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getOffsetFetchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * The groups this broker coordinates.
     * </pre>
     */
    public void listGroups(leasehold.group.v1.ListGroupsRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.ListGroupsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListGroupsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Members, epochs and assignments of groups this broker coordinates.
     * </pre>
     */
    public void describeGroups(leasehold.group.v1.DescribeGroupsRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.DescribeGroupsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDescribeGroupsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Delete empty groups and their committed offsets.
     * </pre>
     */
    public void deleteGroups(leasehold.group.v1.DeleteGroupsRequest request,
        io.grpc.stub.StreamObserver<leasehold.group.v1.DeleteGroupsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteGroupsMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service GroupService.
   * <pre>
   * GroupService is served by every broker agent. A consumer group has one coordinator: the
   * leader of partition abs(java_hash(group_id)) % n of the internal topic __consumer_offsets
   * (Kafka's rule), found with FindCoordinator on any broker. Every other call goes to the
   * coordinator; a call that reaches another broker fails with NOT_COORDINATOR (UNAVAILABLE):
   * find the coordinator again and retry. The group protocol is Kafka's KIP-848: members send
   * ConsumerGroupHeartbeat, the coordinator computes the assignment.
   * </pre>
   */
  public static final class GroupServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<GroupServiceBlockingV2Stub> {
    private GroupServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected GroupServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new GroupServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Where the coordinator of each group is. Creates __consumer_offsets on first use.
     * </pre>
     */
    public leasehold.group.v1.FindCoordinatorResponse findCoordinator(leasehold.group.v1.FindCoordinatorRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getFindCoordinatorMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Join, stay in, or leave a consumer group, and learn the member's assignment.
     * </pre>
     */
    public leasehold.group.v1.ConsumerGroupHeartbeatResponse consumerGroupHeartbeat(leasehold.group.v1.ConsumerGroupHeartbeatRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getConsumerGroupHeartbeatMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Commit offsets of a group (acks=all: answered once every in-sync replica has them).
     * </pre>
     */
    public leasehold.group.v1.OffsetCommitResponse offsetCommit(leasehold.group.v1.OffsetCommitRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getOffsetCommitMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * The offsets a group committed.
     * </pre>
     */
    public leasehold.group.v1.OffsetFetchResponse offsetFetch(leasehold.group.v1.OffsetFetchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getOffsetFetchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * The groups this broker coordinates.
     * </pre>
     */
    public leasehold.group.v1.ListGroupsResponse listGroups(leasehold.group.v1.ListGroupsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListGroupsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Members, epochs and assignments of groups this broker coordinates.
     * </pre>
     */
    public leasehold.group.v1.DescribeGroupsResponse describeGroups(leasehold.group.v1.DescribeGroupsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDescribeGroupsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Delete empty groups and their committed offsets.
     * </pre>
     */
    public leasehold.group.v1.DeleteGroupsResponse deleteGroups(leasehold.group.v1.DeleteGroupsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteGroupsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service GroupService.
   * <pre>
   * GroupService is served by every broker agent. A consumer group has one coordinator: the
   * leader of partition abs(java_hash(group_id)) % n of the internal topic __consumer_offsets
   * (Kafka's rule), found with FindCoordinator on any broker. Every other call goes to the
   * coordinator; a call that reaches another broker fails with NOT_COORDINATOR (UNAVAILABLE):
   * find the coordinator again and retry. The group protocol is Kafka's KIP-848: members send
   * ConsumerGroupHeartbeat, the coordinator computes the assignment.
   * </pre>
   */
  public static final class GroupServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<GroupServiceBlockingStub> {
    private GroupServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected GroupServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new GroupServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Where the coordinator of each group is. Creates __consumer_offsets on first use.
     * </pre>
     */
    public leasehold.group.v1.FindCoordinatorResponse findCoordinator(leasehold.group.v1.FindCoordinatorRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getFindCoordinatorMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Join, stay in, or leave a consumer group, and learn the member's assignment.
     * </pre>
     */
    public leasehold.group.v1.ConsumerGroupHeartbeatResponse consumerGroupHeartbeat(leasehold.group.v1.ConsumerGroupHeartbeatRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getConsumerGroupHeartbeatMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Commit offsets of a group (acks=all: answered once every in-sync replica has them).
     * </pre>
     */
    public leasehold.group.v1.OffsetCommitResponse offsetCommit(leasehold.group.v1.OffsetCommitRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getOffsetCommitMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * The offsets a group committed.
     * </pre>
     */
    public leasehold.group.v1.OffsetFetchResponse offsetFetch(leasehold.group.v1.OffsetFetchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getOffsetFetchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * The groups this broker coordinates.
     * </pre>
     */
    public leasehold.group.v1.ListGroupsResponse listGroups(leasehold.group.v1.ListGroupsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListGroupsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Members, epochs and assignments of groups this broker coordinates.
     * </pre>
     */
    public leasehold.group.v1.DescribeGroupsResponse describeGroups(leasehold.group.v1.DescribeGroupsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDescribeGroupsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Delete empty groups and their committed offsets.
     * </pre>
     */
    public leasehold.group.v1.DeleteGroupsResponse deleteGroups(leasehold.group.v1.DeleteGroupsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteGroupsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service GroupService.
   * <pre>
   * GroupService is served by every broker agent. A consumer group has one coordinator: the
   * leader of partition abs(java_hash(group_id)) % n of the internal topic __consumer_offsets
   * (Kafka's rule), found with FindCoordinator on any broker. Every other call goes to the
   * coordinator; a call that reaches another broker fails with NOT_COORDINATOR (UNAVAILABLE):
   * find the coordinator again and retry. The group protocol is Kafka's KIP-848: members send
   * ConsumerGroupHeartbeat, the coordinator computes the assignment.
   * </pre>
   */
  public static final class GroupServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<GroupServiceFutureStub> {
    private GroupServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected GroupServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new GroupServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Where the coordinator of each group is. Creates __consumer_offsets on first use.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.group.v1.FindCoordinatorResponse> findCoordinator(
        leasehold.group.v1.FindCoordinatorRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getFindCoordinatorMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Join, stay in, or leave a consumer group, and learn the member's assignment.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.group.v1.ConsumerGroupHeartbeatResponse> consumerGroupHeartbeat(
        leasehold.group.v1.ConsumerGroupHeartbeatRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getConsumerGroupHeartbeatMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Commit offsets of a group (acks=all: answered once every in-sync replica has them).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.group.v1.OffsetCommitResponse> offsetCommit(
        leasehold.group.v1.OffsetCommitRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getOffsetCommitMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * The offsets a group committed.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.group.v1.OffsetFetchResponse> offsetFetch(
        leasehold.group.v1.OffsetFetchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getOffsetFetchMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * The groups this broker coordinates.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.group.v1.ListGroupsResponse> listGroups(
        leasehold.group.v1.ListGroupsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListGroupsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Members, epochs and assignments of groups this broker coordinates.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.group.v1.DescribeGroupsResponse> describeGroups(
        leasehold.group.v1.DescribeGroupsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDescribeGroupsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Delete empty groups and their committed offsets.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<leasehold.group.v1.DeleteGroupsResponse> deleteGroups(
        leasehold.group.v1.DeleteGroupsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteGroupsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_FIND_COORDINATOR = 0;
  private static final int METHODID_CONSUMER_GROUP_HEARTBEAT = 1;
  private static final int METHODID_OFFSET_COMMIT = 2;
  private static final int METHODID_OFFSET_FETCH = 3;
  private static final int METHODID_LIST_GROUPS = 4;
  private static final int METHODID_DESCRIBE_GROUPS = 5;
  private static final int METHODID_DELETE_GROUPS = 6;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_FIND_COORDINATOR:
          serviceImpl.findCoordinator((leasehold.group.v1.FindCoordinatorRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.group.v1.FindCoordinatorResponse>) responseObserver);
          break;
        case METHODID_CONSUMER_GROUP_HEARTBEAT:
          serviceImpl.consumerGroupHeartbeat((leasehold.group.v1.ConsumerGroupHeartbeatRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.group.v1.ConsumerGroupHeartbeatResponse>) responseObserver);
          break;
        case METHODID_OFFSET_COMMIT:
          serviceImpl.offsetCommit((leasehold.group.v1.OffsetCommitRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.group.v1.OffsetCommitResponse>) responseObserver);
          break;
        case METHODID_OFFSET_FETCH:
          serviceImpl.offsetFetch((leasehold.group.v1.OffsetFetchRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.group.v1.OffsetFetchResponse>) responseObserver);
          break;
        case METHODID_LIST_GROUPS:
          serviceImpl.listGroups((leasehold.group.v1.ListGroupsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.group.v1.ListGroupsResponse>) responseObserver);
          break;
        case METHODID_DESCRIBE_GROUPS:
          serviceImpl.describeGroups((leasehold.group.v1.DescribeGroupsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.group.v1.DescribeGroupsResponse>) responseObserver);
          break;
        case METHODID_DELETE_GROUPS:
          serviceImpl.deleteGroups((leasehold.group.v1.DeleteGroupsRequest) request,
              (io.grpc.stub.StreamObserver<leasehold.group.v1.DeleteGroupsResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getFindCoordinatorMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.group.v1.FindCoordinatorRequest,
              leasehold.group.v1.FindCoordinatorResponse>(
                service, METHODID_FIND_COORDINATOR)))
        .addMethod(
          getConsumerGroupHeartbeatMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.group.v1.ConsumerGroupHeartbeatRequest,
              leasehold.group.v1.ConsumerGroupHeartbeatResponse>(
                service, METHODID_CONSUMER_GROUP_HEARTBEAT)))
        .addMethod(
          getOffsetCommitMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.group.v1.OffsetCommitRequest,
              leasehold.group.v1.OffsetCommitResponse>(
                service, METHODID_OFFSET_COMMIT)))
        .addMethod(
          getOffsetFetchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.group.v1.OffsetFetchRequest,
              leasehold.group.v1.OffsetFetchResponse>(
                service, METHODID_OFFSET_FETCH)))
        .addMethod(
          getListGroupsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.group.v1.ListGroupsRequest,
              leasehold.group.v1.ListGroupsResponse>(
                service, METHODID_LIST_GROUPS)))
        .addMethod(
          getDescribeGroupsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.group.v1.DescribeGroupsRequest,
              leasehold.group.v1.DescribeGroupsResponse>(
                service, METHODID_DESCRIBE_GROUPS)))
        .addMethod(
          getDeleteGroupsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              leasehold.group.v1.DeleteGroupsRequest,
              leasehold.group.v1.DeleteGroupsResponse>(
                service, METHODID_DELETE_GROUPS)))
        .build();
  }

  private static abstract class GroupServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    GroupServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return leasehold.group.v1.GroupProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("GroupService");
    }
  }

  private static final class GroupServiceFileDescriptorSupplier
      extends GroupServiceBaseDescriptorSupplier {
    GroupServiceFileDescriptorSupplier() {}
  }

  private static final class GroupServiceMethodDescriptorSupplier
      extends GroupServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    GroupServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (GroupServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new GroupServiceFileDescriptorSupplier())
              .addMethod(getFindCoordinatorMethod())
              .addMethod(getConsumerGroupHeartbeatMethod())
              .addMethod(getOffsetCommitMethod())
              .addMethod(getOffsetFetchMethod())
              .addMethod(getListGroupsMethod())
              .addMethod(getDescribeGroupsMethod())
              .addMethod(getDeleteGroupsMethod())
              .build();
        }
      }
    }
    return result;
  }
}
